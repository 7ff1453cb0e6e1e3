#!/usr/bin/env python3
"""Validates every vector of the escape corpus against corpus/escape/schema.json
(JSON Schema 2020-12) and checks that ids are unique and match file names.
Every *.json beneath the corpus directory (v1/: the escape pack, unchanged
since 1.0; v2/<pack>/: the 2.0 packs) is a vector.
Usage: python3 corpus/escape/validate.py [corpus/escape]   (needs `jsonschema`)"""
import json, pathlib, sys
import jsonschema

here = pathlib.Path(__file__).resolve().parent
corpus = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here
schema = json.loads((here / "schema.json").read_text())
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
errors, ids = 0, set()
files = sorted(f for f in corpus.rglob("*.json") if f.name != "schema.json")
for f in files:
    v = json.loads(f.read_text())
    for e in validator.iter_errors(v):
        errors += 1
        print(f"{f.name}: {'/'.join(map(str, e.path))}: {e.message}")
    if v.get("pack", "escape") != {"v1": "escape"}.get(f.parent.name, f.parent.name):
        errors += 1
        print(f"{f.name}: pack {v.get('pack', 'escape')!r} does not match its folder {f.parent.name}")
    if v.get("id") != f.stem:
        errors += 1
        print(f"{f.name}: id {v.get('id')!r} does not match the file name")
    if v.get("id") in ids:
        errors += 1
        print(f"{f.name}: duplicate id")
    ids.add(v.get("id"))
    n = len(v.get("calls", []))
    for pair in v.get("same_replies", []):
        if any(i >= n for i in pair):
            errors += 1
            print(f"{f.name}: same_replies index out of range")
if not files:
    sys.exit(f"{corpus}: no vectors")
print(f"{corpus}: {len(files)} vectors, {errors} errors (corpus {(here / 'VERSION').read_text().strip()})")
sys.exit(1 if errors else 0)
