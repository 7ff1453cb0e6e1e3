#!/usr/bin/env python3
"""Validates server.json (the MCP registry entry) and checks it agrees with
the packages it names.

usage: validate.py [--schema FILE] [SERVER_JSON]

1. JSON Schema (draft 7, formats checked) against --schema, by default
   dist/registry/server.schema.json: the constraints of the registry's
   published 2025-12-11 schema. Pass the published file itself with --schema
   where it can be downloaded.
2. Consistency: every package version equals Cargo.toml's; the npm package's
   name and `mcpName`, the PyPI project name and the `mcp-name:` line of its
   README, and the image's `io.modelcontextprotocol.server.name` label (the
   registry's ownership checks) all match server.json.
Needs `pip install jsonschema`. Prints "N passed, N failed".
"""
import argparse
import json
import pathlib
import re
import sys
import tomllib

import jsonschema

REPO = pathlib.Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schema", default=str(REPO / "dist/registry/server.schema.json"))
    ap.add_argument("server_json", nargs="?", default=str(REPO / "server.json"))
    a = ap.parse_args()
    passed = failed = 0

    def check(name, cond, detail=""):
        nonlocal passed, failed
        if cond:
            passed += 1
            print(f"ok - {name}")
        else:
            failed += 1
            print(f"not ok - {name}: {detail}")

    server = json.loads(pathlib.Path(a.server_json).read_text())
    schema = json.loads(pathlib.Path(a.schema).read_text())
    v = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    errors = sorted(v.iter_errors(server), key=lambda e: list(e.path))
    for e in errors:
        print(f"  schema: {'/'.join(map(str, e.path)) or '(root)'}: {e.message}")
    check(f"server.json valid against {pathlib.Path(a.schema).name}", not errors, f"{len(errors)} errors")
    check("$schema is dated 2025-10-17 or later",
          re.search(r"/schemas/(\d{4}-\d{2}-\d{2})/", server.get("$schema", "")) is not None
          and re.search(r"/schemas/(\d{4}-\d{2}-\d{2})/", server["$schema"]).group(1) >= "2025-10-17",
          server.get("$schema"))

    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())["package"]["version"]
    check("server version = Cargo.toml", server["version"] == cargo, f"{server['version']} != {cargo}")
    pkgs = {p["registryType"]: p for p in server.get("packages", [])}
    check("npm, pypi and oci packages named", {"npm", "pypi", "oci"} <= pkgs.keys(), sorted(pkgs))

    npm = json.loads((REPO / "npm/tuls-mcp/package.json").read_text())
    check("npm identifier = npm/tuls-mcp name", pkgs["npm"]["identifier"] == npm["name"], npm["name"])
    check("npm version = Cargo.toml", pkgs["npm"].get("version") == npm["version"] == cargo, npm["version"])
    check("npm mcpName = server name", npm.get("mcpName") == server["name"], npm.get("mcpName"))

    py = tomllib.loads((REPO / "python/pyproject.toml").read_text())["project"]
    check("pypi identifier = python/pyproject.toml name", pkgs["pypi"]["identifier"] == py["name"], py["name"])
    check("pypi version = Cargo.toml (maturin takes it from there)",
          pkgs["pypi"].get("version") == cargo and "version" in py.get("dynamic", []), pkgs["pypi"].get("version"))
    readme = (REPO / "python" / py["readme"]).read_text()
    check("PyPI README carries mcp-name", f"mcp-name: {server['name']}" in readme, "")

    cf = (REPO / "Containerfile").read_text()
    check("image label io.modelcontextprotocol.server.name",
          f'io.modelcontextprotocol.server.name="{server["name"]}"' in cf, "")
    check("oci identifier tagged with the version", pkgs["oci"]["identifier"].endswith(f":{cargo}"),
          pkgs["oci"]["identifier"])

    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
