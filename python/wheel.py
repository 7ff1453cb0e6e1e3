#!/usr/bin/env python3
"""Builds the tuls-mcp wheel around a static tuls binary that dist/build.sh
already built, instead of compiling it again (as `maturin build` would).

The wheel is what maturin's `bindings = "bin"` makes: the binary in
`tuls_mcp-VERSION.data/scripts/`, installed as `tuls` and as `tuls-mcp` (the
name uvx and pipx run), with the metadata of python/pyproject.toml and the
version of Cargo.toml. A static musl binary needs no libc, so the one wheel is
tagged for both manylinux2014 and musllinux_1_2, as uv's own wheels are.

    python3 python/wheel.py dist/out/tuls-x86_64-unknown-linux-musl python/dist
"""
import base64
import hashlib
import sys
import tomllib
import zipfile
from pathlib import Path

ARCH = {"x86_64-unknown-linux-musl": "x86_64", "aarch64-unknown-linux-musl": "aarch64"}


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, out = Path(sys.argv[1]), Path(sys.argv[2])
    repo = Path(__file__).resolve().parent.parent
    triple = binary.name.removeprefix("tuls-")
    if triple not in ARCH or not binary.is_file():
        print(f"wheel.py: {binary}: want dist/out/tuls-<{'|'.join(ARCH)}>", file=sys.stderr)
        return 2
    arch = ARCH[triple]
    project = tomllib.loads((repo / "python/pyproject.toml").read_text())["project"]
    version = tomllib.loads((repo / "Cargo.toml").read_text())["package"]["version"]
    name = project["name"].replace("-", "_")
    tags = [f"py3-none-manylinux2014_{arch}", f"py3-none-musllinux_1_2_{arch}"]
    dist_info = f"{name}-{version}.dist-info"
    data = f"{name}-{version}.data/scripts"

    meta = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {version}",
        f"Summary: {project['description']}",
        f"License: {project['license']['text']}",
        f"Keywords: {','.join(project['keywords'])}",
        f"Requires-Python: {project['requires-python']}",
    ]
    meta += [f"Classifier: {c}" for c in project["classifiers"]]
    meta += ["Description-Content-Type: text/markdown", ""]
    metadata = "\n".join(meta) + "\n" + (repo / "python" / project["readme"]).read_text()
    wheel = "Wheel-Version: 1.0\nGenerator: tuls python/wheel.py\nRoot-Is-Purelib: false\n"
    wheel += "".join(f"Tag: {t}\n" for t in tags)

    exe = binary.read_bytes()
    files = [
        (f"{data}/tuls", exe, 0o755),
        (f"{data}/tuls-mcp", exe, 0o755),
        (f"{dist_info}/METADATA", metadata.encode(), 0o644),
        (f"{dist_info}/WHEEL", wheel.encode(), 0o644),
    ]
    record = []
    for path, body, _ in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(body)}")
    record.append(f"{dist_info}/RECORD,,")
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))

    out.mkdir(parents=True, exist_ok=True)
    platform = ".".join(t.split("-", 2)[2] for t in tags)
    target = out / f"{name}-{version}-py3-none-{platform}.whl"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path, body, mode in files:
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, body)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
