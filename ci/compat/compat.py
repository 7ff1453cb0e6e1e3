#!/usr/bin/env python3
"""compat: differential drop-in test of two MCP filesystem servers (stdio).

Runs the same scripted sequence of 211 tools/call requests (the 2026.8.31
profile; --profile 2.3.0 adds 2.3.0's resources and new arguments) (every reference
tool; normal and error cases) against a reference server A and a candidate
server B.  Each server gets its own freshly generated copy of the same fixture:

    <tmp>/mcpcompat-<pid>/<side>/root      allowed root ({roots})
    <tmp>/mcpcompat-<pid>/<side>/outside   a sibling the server must not touch

Responses are normalized (the side's root/base paths -> <ROOT>/<SIDE>, dates and
times -> <TIME>, random temp-file suffixes -> <RAND>) and each call is classified:

    same                              identical after normalization
    differs-in-isError                error vs success, or JSON-RPC error vs tool result
    differs-in-text                   same error-ness, different content blocks
    differs-in-structuredContent      same content, different structuredContent
    differs-other                     anything else in the result (e.g. extra keys)

It also compares tools/list (names; input-schema property names and required
lists; annotations), the initialize capabilities, and the final state of the two
fixture trees (file list, types, sizes, hashes, modes, symlink targets).

Calls where the tuls spec deliberately departs from the reference are tagged
`spec:` in the report; a difference there is expected for tuls.

    compat.py --a 'node $REF/dist/index.js {roots}' --b 'CANDIDATE {roots}' [--json out.json]
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import time
import unicodedata

import mcplib

# --------------------------------------------------------------------------
# fixture

PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")

TEXT_FILES = {
    "hello.txt": "Hello, world!\nSecond line\nThird line\n",
    "empty.txt": "",
    "unicode.txt": "h\u00e9llo w\u00f6rld\n\u2014 em dash \u2713 check\n\u65e5\u672c\u8a9e\n"
                   "emoji \U0001f389\U0001f680\n",
    "caf\u00e9.txt": "NFC-named file\n",
    "crlf.txt": "line one\r\nline two\r\nline three\r\n",
    "no-newline.txt": "alpha\nbeta\ngamma",
    "lines100.txt": "".join(f"line {i:03d}\n" for i in range(1, 101)),
    "dup.txt": "foo = 1\nbar = 2\nfoo = 1\n",
    "indent.py": "def f():\n    if True:\n        return 1\n    return 0\n",
    "backticks.md": "Some text\n```\ncode\n```\nend\n",
    "edit-target.txt": "first\nsecond\nthird\nfourth\n",
    "edit-multi.txt": "a = 1\nb = 2\nc = 3\n",
    "edit-crlf.txt": "one\r\ntwo\r\nthree\r\n",
    "edit-unicode.txt": "na\u00efve caf\u00e9\nr\u00e9sum\u00e9\n",
    "edit-seq.txt": "alpha\nbeta\ngamma\n",
    "wtarget.txt": "write target\n",
    "src/main.rs": "fn main() {\n    println!(\"hi\");\n}\n",
    "src/lib.rs": "pub mod util;\n",
    "src/util/mod.rs": "pub mod helpers;\n",
    "src/util/helpers.rs": "pub fn help() {}\n",
    "src/README.md": "# src\n",
    "target/debug/build.rs": "// generated\n",
    "target/debug/app.d": "app: src/main.rs\n",
    "node_modules/pkg/index.js": "module.exports = 1;\n",
    "node_modules/pkg/shim.rs": "// not really\n",
    ".hidden/secret.rs": "// hidden\n",
    ".env": "KEY=value\n",
    "docs/guide.md": "# Guide\n",
    "docs/api/ref.md": "# Ref\n",
    "docs/api/notes.txt": "notes\n",
    "sizes/tiny.txt": "0123456789",
    "sizes/medium.txt": "m" * 2000,
    "sizes/large.txt": "L" * (150 * 1024),
    "move/src1.txt": "source one\n",
    "move/src2.txt": "source two\n",
    "move/existing.txt": "already here\n",
    "move/dir-a/inner.txt": "inner\n",
    "ws/exec.sh": "#!/bin/sh\necho hi\n",
}
BINARY_FILES = {
    "latin1.txt": b"caf\xe9 cr\xe8me\n",
    "data.bin": bytes(range(256)) * 4,
    "image.png": PNG_1X1,
    "sound.mp3": b"ID3\x03\x00\x00\x00\x00\x00\x00" + bytes(64),
    "doc.pdf": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n",
    "sizes/mega.bin": b"\x00" * (1536 * 1024),
}
EMPTY_DIRS = ["emptydir", "sizes/sub", "move/dest"]
SYMLINKS = {  # link (in root) -> target (relative to the link's directory)
    "link-to-hello.txt": "hello.txt",
    "link-to-src": "src",
    "link-to-wtarget.txt": "wtarget.txt",
    "link-outside.txt": "../outside/secret.txt",
    "link-outside-dir": "../outside",
    "broken-link": "does-not-exist.txt",
}


def build_fixture(side_dir):
    root = os.path.join(side_dir, "root")
    outside = os.path.join(side_dir, "outside")
    os.makedirs(root)
    os.makedirs(outside)
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write("outside secret\n")
    for rel, text in TEXT_FILES.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    for rel, data in BINARY_FILES.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    for i in range(15):
        path = os.path.join(root, "dir20", f"file{i:02d}.txt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("x" * (i * 100))
    for i in range(5):
        os.makedirs(os.path.join(root, "dir20", f"sub{i}"))
    for rel in EMPTY_DIRS:
        os.makedirs(os.path.join(root, rel), exist_ok=True)
    for link, target in SYMLINKS.items():
        os.symlink(target, os.path.join(root, link))
    os.chmod(os.path.join(root, "ws", "exec.sh"), 0o755)
    return root, outside


# --------------------------------------------------------------------------
# the scripted call sequence

SPEC_UNKNOWN = "spec: unknown fields are rejected (fail closed)"
SPEC_AMBIG = "spec: oldText must occur exactly once; ambiguous match fails"
SPEC_EXACT = "spec: exact match, no whitespace normalization"
SPEC_CRLF = "spec: \\n never matches \\r\\n"


def script(profile="2026.8.31"):
    """List of calls.  '{R}' = allowed root, '{O}' = the outside dir.  The
    2026.8.31 profile is the 211 original calls; 2.3.0 adds calls_230."""
    calls = []

    def add(tool, args, label, note="", raw_params=None):
        calls.append({"id": f"{len(calls) + 1:03d}", "tool": tool, "args": args,
                      "label": label, "note": note, "raw_params": raw_params})

    R, O = "{R}", "{O}"
    # --- meta
    add("list_allowed_directories", {}, "list roots")
    add("list_allowed_directories", {"verbose": True}, "unknown extra field", SPEC_UNKNOWN)
    add("no_such_tool", {}, "unknown tool")
    add("read_text_file", None, "tools/call without arguments",
        raw_params={"name": "read_text_file"})
    # --- read_text_file
    rt = "read_text_file"
    add(rt, {"path": f"{R}/hello.txt"}, "absolute path")
    add(rt, {"path": "hello.txt"}, "relative path (resolves against first root)")
    add(rt, {"path": "./hello.txt"}, "./relative")
    add(rt, {"path": "src/../hello.txt"}, "dot-dot inside root")
    add(rt, {"path": f"{R}//hello.txt"}, "double slash")
    add(rt, {"path": f"{R}/empty.txt"}, "empty file")
    add(rt, {"path": f"{R}/unicode.txt"}, "unicode content")
    add(rt, {"path": f"{R}/caf\u00e9.txt"}, "unicode file name (NFC)")
    add(rt, {"path": unicodedata.normalize("NFD", f"{R}/caf\u00e9.txt")},
        "unicode file name requested in NFD")
    add(rt, {"path": f"{R}/crlf.txt"}, "CRLF file")
    add(rt, {"path": f"{R}/no-newline.txt"}, "no trailing newline")
    add(rt, {"path": f"{R}/latin1.txt"}, "invalid UTF-8 bytes")
    add(rt, {"path": f"{R}/data.bin"}, "binary file as text")
    add(rt, {"path": f"{R}/lines100.txt", "head": 5}, "head=5")
    add(rt, {"path": f"{R}/lines100.txt", "tail": 5}, "tail=5")
    add(rt, {"path": f"{R}/lines100.txt", "head": 0}, "head=0")
    add(rt, {"path": f"{R}/lines100.txt", "tail": 0}, "tail=0")
    add(rt, {"path": f"{R}/lines100.txt", "head": 1000}, "head beyond EOF")
    add(rt, {"path": f"{R}/lines100.txt", "tail": 1000}, "tail beyond EOF")
    add(rt, {"path": f"{R}/lines100.txt", "head": -1}, "head=-1")
    add(rt, {"path": f"{R}/lines100.txt", "head": 5, "tail": 5}, "head and tail both")
    add(rt, {"path": f"{R}/lines100.txt", "head": "5"}, "head as string (bad type)")
    add(rt, {"path": f"{R}/lines100.txt", "head": 2.5}, "head=2.5 (non-integer)")
    add(rt, {"path": f"{R}/crlf.txt", "head": 2}, "head=2 on CRLF")
    add(rt, {"path": f"{R}/crlf.txt", "tail": 2}, "tail=2 on CRLF")
    add(rt, {"path": f"{R}/no-newline.txt", "tail": 2}, "tail=2, no trailing newline")
    add(rt, {"path": f"{R}/empty.txt", "head": 3}, "head on empty file")
    add(rt, {"path": f"{R}/empty.txt", "tail": 3}, "tail on empty file")
    add(rt, {"path": f"{R}/missing.txt"}, "missing file")
    add(rt, {"path": f"{R}/src"}, "directory instead of file")
    add(rt, {"path": "/etc/hostname"}, "outside path (absolute)")
    add(rt, {"path": "../outside/secret.txt"}, "outside path (relative ..)")
    add(rt, {"path": f"{O}/secret.txt"}, "outside sibling dir")
    add(rt, {"path": f"{R}/link-to-hello.txt"}, "symlink inside root")
    add(rt, {"path": f"{R}/link-outside.txt"}, "symlink escaping root")
    add(rt, {"path": f"{R}/broken-link"}, "dangling symlink")
    add(rt, {"path": f"{R}/hello.txt", "encoding": "utf-8"}, "unknown extra field", SPEC_UNKNOWN)
    add(rt, {}, "missing path argument")
    add(rt, {"path": ""}, "empty path")
    add(rt, {"path": 123}, "path of wrong type")
    add(rt, {"path": f"{R}/hello.txt/"}, "trailing slash on a file")
    add(rt, {"path": "~/.bashrc"}, "home-relative path")
    add(rt, {"path": f"{R}/hel\u0000lo.txt"}, "NUL byte in path")
    add("read_file", {"path": f"{R}/hello.txt"}, "deprecated read_file")
    add("read_file", {"path": f"{R}/lines100.txt", "head": 2}, "deprecated read_file head=2")
    # --- read_media_file
    rm = "read_media_file"
    add(rm, {"path": f"{R}/image.png"}, "png")
    add(rm, {"path": f"{R}/sound.mp3"}, "mp3")
    add(rm, {"path": f"{R}/data.bin"}, "unknown binary -> resource")
    add(rm, {"path": f"{R}/doc.pdf"}, "pdf")
    add(rm, {"path": f"{R}/hello.txt"}, "text file as media")
    add(rm, {"path": f"{R}/missing.png"}, "missing")
    add(rm, {"path": f"{R}/src"}, "directory")
    add(rm, {"path": f"{R}/link-outside.txt"}, "symlink escaping root")
    add(rm, {"path": f"{R}/image.png", "maxBytes": 10}, "unknown extra field", SPEC_UNKNOWN)
    # --- read_multiple_files
    rmf = "read_multiple_files"
    add(rmf, {"paths": [f"{R}/hello.txt", f"{R}/unicode.txt", f"{R}/src/main.rs"]}, "three files")
    add(rmf, {"paths": [f"{R}/hello.txt", f"{R}/missing.txt", "../outside/secret.txt", f"{R}/src"]},
        "mixed good/missing/outside/dir")
    add(rmf, {"paths": []}, "empty list")
    add(rmf, {"paths": ["hello.txt", "hello.txt"]}, "duplicate relative paths")
    add(rmf, {"paths": [f"{R}/latin1.txt", f"{R}/empty.txt", f"{R}/crlf.txt"]},
        "invalid UTF-8, empty, CRLF")
    add(rmf, {"paths": f"{R}/hello.txt"}, "string instead of array")
    add(rmf, {"paths": [123]}, "non-string element")
    add(rmf, {"paths": [f"{R}/hello.txt"], "limit": 1}, "unknown extra field", SPEC_UNKNOWN)
    # --- get_file_info
    gi = "get_file_info"
    add(gi, {"path": f"{R}/hello.txt"}, "file")
    add(gi, {"path": f"{R}/src"}, "directory")
    add(gi, {"path": R}, "the root itself")
    add(gi, {"path": f"{R}/empty.txt"}, "empty file")
    add(gi, {"path": f"{R}/link-to-hello.txt"}, "symlink to file")
    add(gi, {"path": f"{R}/link-to-src"}, "symlink to dir")
    add(gi, {"path": f"{R}/ws/exec.sh"}, "executable file")
    add(gi, {"path": f"{R}/missing.txt"}, "missing")
    add(gi, {"path": f"{O}/secret.txt"}, "outside")
    add(gi, {"path": f"{R}/hello.txt", "follow": False}, "unknown extra field", SPEC_UNKNOWN)
    # --- list_directory
    ld = "list_directory"
    add(ld, {"path": R}, "root (symlinks, hidden entries)")
    add(ld, {"path": f"{R}/src"}, "src")
    add(ld, {"path": f"{R}/dir20"}, "20 entries")
    add(ld, {"path": f"{R}/emptydir"}, "empty dir")
    add(ld, {"path": "."}, "relative '.'")
    add(ld, {"path": f"{R}/src/"}, "trailing slash")
    add(ld, {"path": f"{R}/link-to-src"}, "symlinked dir")
    add(ld, {"path": f"{R}/link-outside-dir"}, "symlinked dir escaping root")
    add(ld, {"path": f"{R}/hello.txt"}, "file instead of dir")
    add(ld, {"path": f"{R}/nope"}, "missing")
    add(ld, {"path": O}, "outside")
    add(ld, {"path": f"{R}/src", "recursive": True}, "unknown extra field", SPEC_UNKNOWN)
    # --- list_directory_with_sizes
    lds = "list_directory_with_sizes"
    add(lds, {"path": f"{R}/sizes"}, "default sort")
    add(lds, {"path": f"{R}/sizes", "sortBy": "name"}, "sortBy name")
    add(lds, {"path": f"{R}/sizes", "sortBy": "size"}, "sortBy size")
    add(lds, {"path": f"{R}/dir20", "sortBy": "size"}, "sortBy size, 20 entries")
    add(lds, {"path": f"{R}/sizes", "sortBy": "date"}, "invalid sortBy")
    add(lds, {"path": f"{R}/emptydir"}, "empty dir")
    add(lds, {"path": R}, "root (symlinks incl. dangling)")
    add(lds, {"path": f"{R}/hello.txt"}, "file instead of dir")
    add(lds, {"path": f"{R}/nope"}, "missing")
    add(lds, {"path": f"{R}/sizes", "human": True}, "unknown extra field", SPEC_UNKNOWN)
    # --- directory_tree
    dt = "directory_tree"
    add(dt, {"path": f"{R}/src"}, "src")
    add(dt, {"path": f"{R}/docs"}, "docs")
    add(dt, {"path": R, "excludePatterns": ["target/**", "node_modules", ".hidden"]},
        "root with excludePatterns")
    add(dt, {"path": R, "excludePatterns": ["*.md", "**/*.txt", "*.bin"]},
        "root excluding by extension")
    add(dt, {"path": f"{R}/src", "excludePatterns": ["**/*.rs"]}, "exclude **/*.rs")
    add(dt, {"path": f"{R}/src", "excludePatterns": ["util"]}, "exclude bare name")
    add(dt, {"path": f"{R}/emptydir"}, "empty dir")
    add(dt, {"path": "src"}, "relative path")
    add(dt, {"path": f"{R}/hello.txt"}, "file instead of dir")
    add(dt, {"path": f"{R}/nope"}, "missing")
    add(dt, {"path": O}, "outside")
    add(dt, {"path": f"{R}/src", "excludePatterns": "util"}, "excludePatterns not an array")
    add(dt, {"path": f"{R}/src", "maxDepth": 1}, "unknown extra field", SPEC_UNKNOWN)
    # --- search_files
    sf = "search_files"
    add(sf, {"path": R, "pattern": "**/*.rs"}, "**/*.rs")
    add(sf, {"path": R, "pattern": "*.rs"}, "*.rs (top level only for a glob)")
    add(sf, {"path": R, "pattern": "*.md"}, "*.md")
    add(sf, {"path": R, "pattern": "**/*.md", "excludePatterns": ["docs/**"]}, "exclude docs/**")
    add(sf, {"path": R, "pattern": "**/*.rs", "excludePatterns": ["target/**", "node_modules/**"]},
        "exclude target/** node_modules/**")
    add(sf, {"path": R, "pattern": "**/*.rs", "excludePatterns": ["**/target/**", "**/.hidden/**"]},
        "exclude **/target/** **/.hidden/**")
    add(sf, {"path": R, "pattern": "**/*.rs", "excludePatterns": ["target"]},
        "exclude bare dir name")
    add(sf, {"path": R, "pattern": "main"}, "bare word (substring vs glob)")
    add(sf, {"path": R, "pattern": "**/main*"}, "**/main*")
    add(sf, {"path": R, "pattern": "src/**"}, "src/**")
    add(sf, {"path": R, "pattern": "**/*.{rs,md}"}, "brace expansion")
    add(sf, {"path": R, "pattern": "**/*.RS"}, "case sensitivity")
    add(sf, {"path": R, "pattern": ".hidden/**"}, "hidden dir")
    add(sf, {"path": f"{R}/src", "pattern": "*.rs"}, "search under src")
    add(sf, {"path": R, "pattern": ""}, "empty pattern")
    add(sf, {"path": f"{R}/nope", "pattern": "*"}, "missing dir")
    add(sf, {"path": f"{R}/hello.txt", "pattern": "*"}, "file as search root")
    add(sf, {"path": O, "pattern": "*"}, "outside")
    add(sf, {"path": R, "pattern": "**/*.rs", "caseSensitive": True}, "unknown extra field",
        SPEC_UNKNOWN)
    # --- write_file (+ read-backs)
    wf = "write_file"
    add(wf, {"path": f"{R}/ws/new.txt", "content": "new content\n"}, "create")
    add(wf, {"path": f"{R}/ws/new.txt", "content": "overwritten\n"}, "overwrite")
    add(rt, {"path": f"{R}/ws/new.txt"}, "read back overwrite")
    add(wf, {"path": f"{R}/ws/unicode.txt", "content": "\u00fcnic\u00f8de \u2713 \U0001f600\n"},
        "unicode content")
    add(rt, {"path": f"{R}/ws/unicode.txt"}, "read back unicode")
    add(wf, {"path": f"{R}/ws/empty.txt", "content": ""}, "empty content")
    add(gi, {"path": f"{R}/ws/empty.txt"}, "info of written empty file")
    add(wf, {"path": f"{R}/ws/crlf.txt", "content": "a\r\nb\r\n"}, "CRLF content")
    add(rt, {"path": f"{R}/ws/crlf.txt"}, "read back CRLF")
    add(wf, {"path": f"{R}/ws/exec.sh", "content": "#!/bin/sh\necho bye\n"},
        "overwrite keeps mode?")
    add(gi, {"path": f"{R}/ws/exec.sh"}, "mode after overwrite")
    add(wf, {"path": "ws/relative.txt", "content": "rel\n"}, "relative path")
    add(wf, {"path": f"{R}/ws/missing-parent/x.txt", "content": "x"}, "missing parent dir")
    add(wf, {"path": f"{O}/new.txt", "content": "x"}, "outside")
    add(wf, {"path": f"{R}/src", "content": "x"}, "onto a directory")
    add(wf, {"path": f"{R}/link-to-wtarget.txt", "content": "via link\n"},
        "through a symlink inside root")
    add(rt, {"path": f"{R}/wtarget.txt"}, "symlink target after write")
    add(gi, {"path": f"{R}/link-to-wtarget.txt"}, "link after write")
    add(wf, {"path": f"{R}/link-outside.txt", "content": "pwned\n"}, "through a symlink escaping root")
    add(wf, {"path": f"{R}/ws/extra.txt", "content": "x", "mode": "0600"}, "unknown extra field",
        SPEC_UNKNOWN)
    add(wf, {"path": f"{R}/ws/nocontent.txt"}, "missing content")
    add(wf, {"path": f"{R}/ws/num.txt", "content": 42}, "content of wrong type")
    # --- edit_file
    ef = "edit_file"
    add(ef, {"path": f"{R}/edit-target.txt", "edits": [{"oldText": "second", "newText": "2nd"}]},
        "single edit")
    add(rt, {"path": f"{R}/edit-target.txt"}, "read back single edit")
    add(ef, {"path": f"{R}/edit-target.txt", "edits": [{"oldText": "third", "newText": "3rd"}],
             "dryRun": True}, "dryRun diff")
    add(rt, {"path": f"{R}/edit-target.txt"}, "unchanged after dryRun")
    add(ef, {"path": f"{R}/edit-multi.txt", "edits": [{"oldText": "a = 1", "newText": "a = 10"},
                                                      {"oldText": "c = 3", "newText": "c = 30"}]},
        "two edits")
    add(ef, {"path": f"{R}/edit-seq.txt", "edits": [{"oldText": "beta", "newText": "BETA"},
                                                    {"oldText": "BETA\ngamma", "newText": "B+G"}]},
        "second edit matches output of the first")
    add(rt, {"path": f"{R}/edit-seq.txt"}, "read back sequential edits")
    add(ef, {"path": f"{R}/edit-target.txt", "edits": [{"oldText": "nope", "newText": "x"}]},
        "no match")
    add(ef, {"path": f"{R}/edit-multi.txt", "edits": [{"oldText": "b = 2", "newText": "b = 20"},
                                                      {"oldText": "zzz", "newText": "x"}]},
        "second of two edits fails (atomic?)")
    add(rt, {"path": f"{R}/edit-multi.txt"}, "unchanged after failed multi-edit?")
    add(ef, {"path": f"{R}/dup.txt", "edits": [{"oldText": "foo = 1", "newText": "foo = 9"}]},
        "ambiguous match", SPEC_AMBIG)
    add(rt, {"path": f"{R}/dup.txt"}, "dup.txt after ambiguous edit", SPEC_AMBIG)
    add(ef, {"path": f"{R}/edit-crlf.txt", "edits": [{"oldText": "one\ntwo", "newText": "1\n2"}]},
        "LF oldText on CRLF file", SPEC_CRLF)
    add(rt, {"path": f"{R}/edit-crlf.txt"}, "CRLF file after LF edit", SPEC_CRLF)
    add(ef, {"path": f"{R}/crlf.txt", "edits": [{"oldText": "line two\r\n", "newText": "LINE 2\r\n"}]},
        "CRLF oldText on CRLF file")
    add(rt, {"path": f"{R}/crlf.txt"}, "CRLF file after CRLF edit")
    add(ef, {"path": f"{R}/indent.py", "edits": [{"oldText": "if True:\n    return 1",
                                                 "newText": "if False:\n    return 2"}]},
        "whitespace-insensitive match", SPEC_EXACT)
    add(rt, {"path": f"{R}/indent.py"}, "indent.py after whitespace edit", SPEC_EXACT)
    add(ef, {"path": f"{R}/edit-target.txt", "edits": []}, "empty edits list")
    add(ef, {"path": f"{R}/edit-target.txt", "edits": [{"oldText": "", "newText": "X"}]},
        "empty oldText", SPEC_AMBIG)
    add(ef, {"path": f"{R}/backticks.md", "edits": [{"oldText": "code", "newText": "more ```code```"}]},
        "diff fencing with backticks")
    add(ef, {"path": f"{R}/edit-unicode.txt", "edits": [{"oldText": "r\u00e9sum\u00e9",
                                                        "newText": "CV \u2713"}]}, "unicode edit")
    add(ef, {"path": f"{R}/missing.txt", "edits": [{"oldText": "a", "newText": "b"}]}, "missing file")
    add(ef, {"path": f"{R}/src", "edits": [{"oldText": "a", "newText": "b"}]}, "directory")
    add(ef, {"path": f"{O}/secret.txt", "edits": [{"oldText": "secret", "newText": "x"}]}, "outside")
    add(ef, {"path": f"{R}/edit-target.txt", "edits": [{"oldText": "first", "newText": "1st"}],
             "backup": True}, "unknown extra field", SPEC_UNKNOWN)
    add(ef, {"path": f"{R}/edit-target.txt",
             "edits": [{"oldText": "third", "newText": "3rd", "regex": True}]},
        "unknown field inside an edit", SPEC_UNKNOWN)
    add(ef, {"path": f"{R}/edit-target.txt", "edits": "first->1st"}, "edits not an array")
    add(ef, {"path": f"{R}/edit-target.txt", "edits": [{"oldText": "first"}]}, "edit without newText")
    add(ef, {"path": f"{R}/edit-target.txt", "edits": [{"oldText": "first", "newText": "1st"}],
             "dryRun": "yes"}, "dryRun of wrong type")
    add(rt, {"path": f"{R}/edit-target.txt"}, "edit-target.txt at the end")
    # --- create_directory
    cd = "create_directory"
    add(cd, {"path": f"{R}/newdir"}, "create")
    add(cd, {"path": f"{R}/newdir"}, "already exists")
    add(cd, {"path": f"{R}/nested/a/b/c"}, "nested")
    add(ld, {"path": f"{R}/nested/a/b"}, "list nested")
    add(cd, {"path": "rel/dir"}, "relative path")
    add(cd, {"path": f"{R}/hello.txt"}, "existing file")
    add(cd, {"path": f"{R}/hello.txt/sub"}, "under a file")
    add(cd, {"path": f"{O}/newdir"}, "outside")
    add(cd, {"path": f"{R}/link-outside-dir/sub"}, "through a symlink escaping root")
    add(cd, {"path": f"{R}/newdir2", "mode": 448}, "unknown extra field", SPEC_UNKNOWN)
    # --- move_file
    mv = "move_file"
    add(mv, {"source": f"{R}/move/src1.txt", "destination": f"{R}/move/renamed.txt"}, "rename")
    add(mv, {"source": f"{R}/move/src2.txt", "destination": f"{R}/move/existing.txt"},
        "onto an existing file")
    add(rt, {"path": f"{R}/move/existing.txt"}, "existing file untouched?")
    add(mv, {"source": f"{R}/move/dir-a", "destination": f"{R}/move/dest/dir-a"}, "move a directory")
    add(mv, {"source": f"{R}/move/src2.txt", "destination": f"{R}/move/dest"},
        "onto an existing directory")
    add(mv, {"source": f"{R}/move/missing.txt", "destination": f"{R}/move/x.txt"}, "missing source")
    add(mv, {"source": f"{R}/move/renamed.txt", "destination": f"{O}/stolen.txt"}, "to outside")
    add(mv, {"source": f"{O}/secret.txt", "destination": f"{R}/move/stolen.txt"}, "from outside")
    add(mv, {"source": f"{R}/move/renamed.txt", "destination": f"{R}/move/nope/x.txt"},
        "into a missing parent")
    add(mv, {"source": f"{R}/move/renamed.txt", "destination": f"{R}/move/renamed.txt"},
        "onto itself")
    add(mv, {"source": "move/renamed.txt", "destination": "move/renamed2.txt"}, "relative paths")
    add(mv, {"source": f"{R}/move/renamed2.txt", "destination": f"{R}/move/r3.txt",
             "overwrite": True}, "unknown extra field", SPEC_UNKNOWN)
    add(mv, {"source": f"{R}/move/renamed2.txt"}, "missing destination")
    add(ld, {"path": f"{R}/move"}, "move/ at the end")
    add(dt, {"path": f"{R}/move"}, "move/ tree at the end")
    # --- final views
    add(ld, {"path": R}, "root at the end")
    add(lds, {"path": f"{R}/ws", "sortBy": "size"}, "ws/ with sizes at the end")
    add(dt, {"path": R, "excludePatterns": ["node_modules/**"]}, "whole tree at the end")
    if profile == "2.3.0":
        calls.extend(calls_230(len(calls)))
    return calls


def calls_230(start):
    """The calls of what 2.3.0 adds: its file:// resources, directory_tree's
    depth, get_file_info's hardLinks, its missing-parent text. Numbered after
    the old calls (R for a request that is not a tools/call)."""
    calls = []

    def add(tool, args, label, note="", method=None):
        calls.append({"id": f"{start + len(calls) + 1:03d}", "tool": tool or method, "args": args,
                      "label": label, "note": note, "raw_params": None, "method": method})

    R, O = "{R}", "{O}"
    rl = "resources/read"
    add(None, {}, "resources/list is empty", method="resources/list")
    add(None, {}, "the one file:// template", method="resources/templates/list")
    for rel, label in [("hello.txt", "text file"), ("image.png", "png as blob"),
                       ("data.bin", "binary as blob"), ("latin1.txt", "invalid UTF-8 .txt as blob"),
                       ("backticks.md", "markdown"), (".env", "dotfile, no extension"),
                       ("link-to-hello.txt", "symlink inside root"),
                       ("missing.txt", "missing file"), ("src", "directory"),
                       ("link-outside.txt", "symlink escaping root"), ("broken-link", "dangling symlink"),
                       ("hello.txt/x", "beneath a file"), ("caf%C3%A9.txt", "percent-encoded name"),
                       ("src/../hello.txt", "dot-dot inside root")]:
        add(None, {"uri": f"file://{R}/{rel}"}, f"resources/read: {label}", method=rl)
    add(None, {"uri": f"file://{O}/secret.txt"}, "resources/read: outside sibling", method=rl)
    add(None, {"uri": "file:///etc/hostname"}, "resources/read: outside absolute", method=rl)
    add(None, {"uri": f"file://localhost{R}/hello.txt"}, "resources/read: localhost host", method=rl)
    add(None, {"uri": f"file://other{R}/hello.txt"}, "resources/read: another host", method=rl)
    add(None, {"uri": "http://example.com/x"}, "resources/read: not a file URI", method=rl)
    dt, gi, wf = "directory_tree", "get_file_info", "write_file"
    add(dt, {"path": f"{R}/src", "depth": 1}, "depth 1")
    add(dt, {"path": f"{R}/src", "depth": 2}, "depth 2")
    add(dt, {"path": f"{R}/src", "depth": 0}, "depth 0")
    add(gi, {"path": f"{R}/docs"}, "hardLinks of a directory with a subdirectory")
    add(wf, {"path": f"{R}/nope/x.txt", "content": "x"}, "missing parent (2.3.0's text)")
    add("read_text_file", {"path": f"{R}/nope/x.txt"}, "read beneath a missing parent")
    return calls


def expand(value, root, outside):
    if isinstance(value, str):
        return value.replace("{R}", root).replace("{O}", outside)
    if isinstance(value, list):
        return [expand(v, root, outside) for v in value]
    if isinstance(value, dict):
        return {k: expand(v, root, outside) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------
# normalization and comparison

TIME_PATTERNS = [
    # JS Date.toString(): Tue Jun 10 2025 12:34:56 GMT+0000 (Coordinated Universal Time)
    r"\b[A-Z][a-z]{2} [A-Z][a-z]{2} \d{1,2} \d{4} \d{2}:\d{2}:\d{2} GMT[+-]\d{4}(?: \([^)]*\))?",
    # chrono-style: Tue Jun 10 2025 12:34:56 +00:00
    r"\b[A-Z][a-z]{2} [A-Z][a-z]{2} \d{1,2} \d{4} \d{2}:\d{2}:\d{2}(?: [+-]\d{2}:?\d{2})?",
    # ISO 8601 / RFC 3339
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
]
TIME_RE = re.compile("|".join(f"(?:{p})" for p in TIME_PATTERNS))
RAND_RE = re.compile(r"\.[0-9a-f]{16,}\.tmp\b")


class Normalizer:
    def __init__(self, side_dir, root, base):
        subs = {}
        for path, token in ((root, "<ROOT>"), (side_dir, "<SIDE>"), (base, "<BASE>")):
            subs[path] = token
            subs[os.path.realpath(path)] = token
        self.subs = sorted(subs.items(), key=lambda kv: -len(kv[0]))

    def text(self, s):
        for path, token in self.subs:
            s = s.replace(path, token)
        s = TIME_RE.sub("<TIME>", s)
        return RAND_RE.sub(".<RAND>.tmp", s)

    def value(self, v):
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        return v


def outcome(msg, norm):
    """Normalized, comparable view of one tools/call response."""
    if msg is None:
        return {"kind": "no-response"}
    if "error" in msg:
        err = msg["error"]
        return {"kind": "jsonrpc-error", "isError": True,
                "error": norm.value({"code": err.get("code"), "message": err.get("message")})}
    result = msg.get("result") or {}
    out = {"kind": "result", "isError": bool(result.get("isError")),
           "content": norm.value(result.get("content")),
           "structuredContent": norm.value(result.get("structuredContent"))}
    other = {k: v for k, v in result.items()
             if k not in ("content", "structuredContent", "isError", "_meta")}
    if other:
        out["other"] = norm.value(other)
    return out


def classify(a, b):
    if a == b:
        return "same"
    if a.get("kind") != b.get("kind") or a.get("isError") != b.get("isError"):
        return "differs-in-isError"
    if a.get("content") != b.get("content") or a.get("error") != b.get("error"):
        return "differs-in-text"
    if a.get("structuredContent") != b.get("structuredContent"):
        return "differs-in-structuredContent"
    return "differs-other"


def short(o, limit=240):
    """One-line human summary of an outcome."""
    if o.get("kind") == "jsonrpc-error":
        s = f"JSON-RPC error {o['error'].get('code')}: {o['error'].get('message')}"
    elif o.get("kind") != "result":
        s = o.get("kind", "?")
    else:
        parts = []
        for block in o.get("content") or []:
            if block.get("type") == "text":
                parts.append(block.get("text", ""))
            else:
                parts.append(f"<{block.get('type')} {json.dumps(block)[:80]}>")
        s = ("isError: " if o.get("isError") else "") + " | ".join(parts)
    for raw, shown in (("\\", "\\\\"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"), ("\0", "\\0")):
        s = s.replace(raw, shown)
    return s if len(s) <= limit else s[:limit] + f"... ({len(s)} chars)"


# --------------------------------------------------------------------------
# tools/list and final-state comparison

def schema_view(tool):
    schema = tool.get("inputSchema") or {}
    return {
        "properties": sorted((schema.get("properties") or {}).keys()),
        "required": sorted(schema.get("required") or []),
        "additionalProperties": schema.get("additionalProperties", "<absent>"),
        "annotations": {k: v for k, v in (tool.get("annotations") or {}).items()},
        "has_outputSchema": "outputSchema" in tool,
    }


def compare_tools(tools_a, tools_b):
    a = {t["name"]: t for t in tools_a}
    b = {t["name"]: t for t in tools_b}
    rows = []
    for name in list(a) + [n for n in b if n not in a]:
        if name not in b:
            rows.append({"tool": name, "verdict": "only in A"})
            continue
        if name not in a:
            rows.append({"tool": name, "verdict": "only in B"})
            continue
        va, vb = schema_view(a[name]), schema_view(b[name])
        diffs = {k: {"A": va[k], "B": vb[k]} for k in va if va[k] != vb[k]}
        rows.append({"tool": name, "verdict": "same" if not diffs else "differs", "diffs": diffs})
    return rows


def tree_state(root):
    """Sorted list of (relpath, kind, size, sha1 / link target, mode) under root."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            mode = oct(stat.S_IMODE(st.st_mode))
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "link", None, os.readlink(path), None))
            elif stat.S_ISDIR(st.st_mode):
                out.append((rel, "dir", None, None, mode))
            else:
                with open(path, "rb") as f:
                    digest = hashlib.sha1(f.read()).hexdigest()[:12]
                out.append((rel, "file", st.st_size, digest, mode))
    return out


def compare_states(state_a, state_b):
    da = {e[0]: e for e in state_a}
    db = {e[0]: e for e in state_b}
    diffs = []
    for rel in sorted(set(da) | set(db)):
        if da.get(rel) != db.get(rel):
            diffs.append({"path": rel, "A": da.get(rel), "B": db.get(rel)})
    return diffs


# --------------------------------------------------------------------------
# driver

class Side:
    def __init__(self, label, template, base, timeout):
        self.label = label
        self.template = template
        self.timeout = timeout
        self.dir = os.path.join(base, label)
        self.root, self.outside = build_fixture(self.dir)
        self.norm = Normalizer(self.dir, self.root, base)
        self.srv = None
        self.restarts = 0

    def start(self):
        # cwd is the side dir, not the root: a server that resolves relative
        # paths against its cwd (instead of the first root) then lands outside.
        self.srv = mcplib.McpServer(self.template, [self.root], label=self.label, cwd=self.dir)
        self.init = self.srv.initialize(timeout=self.timeout)
        msg, _, _ = self.srv.call("tools/list", timeout=self.timeout)
        self.tools = msg.get("result", {}).get("tools", [])

    def call(self, c):
        params = c["raw_params"] if c["raw_params"] is not None else {
            "name": c["tool"], "arguments": expand(c["args"], self.root, self.outside)}
        method = c.get("method") or "tools/call"
        if c.get("method"):
            params = expand(c["args"], self.root, self.outside)
        try:
            msg, _, _ = self.srv.call(method, params, timeout=self.timeout)
            return outcome(msg, self.norm)
        except mcplib.CallTimeout:
            self.restart()
            return {"kind": "timeout"}
        except mcplib.ServerDied as e:
            self.restart()
            return {"kind": "crash", "detail": str(e)[:300]}

    def restart(self):
        self.srv.kill()
        self.restarts += 1
        self.start()

    def close(self):
        if self.srv:
            self.srv.close()
            self.srv.remove_stderr_file()


def run(args):
    base = tempfile.mkdtemp(prefix="mcpcompat-", dir=args.tmp)
    sides = []
    try:
        sides = [Side("A", args.a, base, args.timeout), Side("B", args.b, base, args.timeout)]
        for side in sides:
            side.start()
        a, b = sides
        calls = script(args.profile)
        if args.only:
            calls = [c for c in calls if c["tool"] in args.only.split(",")]
        records = []
        for c in calls:
            oa, ob = a.call(c), b.call(c)
            records.append({
                "id": c["id"], "tool": c["tool"], "label": c["label"], "note": c["note"],
                "args": c["args"] if c["raw_params"] is None else {"<raw params>": c["raw_params"]},
                "verdict": classify(oa, ob), "A": oa, "B": ob})
        state_diffs = compare_states(tree_state(a.root), tree_state(b.root))
        tools_rows = compare_tools(a.tools, b.tools)
        caps = {"A": a.init.get("capabilities"), "B": b.init.get("capabilities"),
                "protocol": {"A": a.init.get("protocolVersion"), "B": b.init.get("protocolVersion")},
                "serverInfo": {"A": a.init.get("serverInfo", {}).get("name"),
                               "B": b.init.get("serverInfo", {}).get("name")}}
        restarts = {"A": a.restarts, "B": b.restarts}
    finally:
        for side in sides:
            side.close()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return {"calls": records, "tools": tools_rows, "final_state_diffs": state_diffs,
            "initialize": caps, "restarts": restarts, "kept_dir": base if args.keep else None}


def report(res, names, verbose, out=sys.stdout):
    w = out.write
    calls = res["calls"]
    n_same = sum(r["verdict"] == "same" for r in calls)
    counts = {}
    for r in calls:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    w(f"\n== compat: A={names[0]}  B={names[1]} ==\n")
    for r in calls:
        if r["verdict"] == "same" and not verbose:
            continue
        note = f"   [{r['note']}]" if r["note"] else ""
        w(f"\n{r['id']} {r['tool']}: {r['label']} -> {r['verdict']}{note}\n")
        w(f"    args: {json.dumps(r['args'], ensure_ascii=False)[:200]}\n")
        if r["verdict"] == "same":
            w(f"    A=B: {short(r['A'])}\n")
        else:
            w(f"    A: {short(r['A'])}\n    B: {short(r['B'])}\n")
    w("\n-- tools/list (property names, required, additionalProperties, annotations, outputSchema) --\n")
    for row in res["tools"]:
        if row["verdict"] == "same":
            w(f"  {row['tool']:28s} same\n")
        elif row["verdict"] != "differs":
            w(f"  {row['tool']:28s} {row['verdict']}\n")
        else:
            w(f"  {row['tool']:28s} differs: "
              + "; ".join(f"{k}: A={v['A']} B={v['B']}" for k, v in row["diffs"].items()) + "\n")
    tool_same = sum(r["verdict"] == "same" for r in res["tools"])
    init = res["initialize"]
    w(f"\n-- initialize -- protocol A={init['protocol']['A']} B={init['protocol']['B']}; "
      f"capabilities A={json.dumps(init['A'])} B={json.dumps(init['B'])}\n")
    w(f"\n-- final fixture state: {len(res['final_state_diffs'])} differing paths --\n")
    for d in res["final_state_diffs"][:40]:
        w(f"  {d['path']}: A={d['A']} B={d['B']}\n")
    spec_diffs = sum(1 for r in calls if r["verdict"] != "same" and r["note"].startswith("spec:"))
    same_iserror = sum(r["verdict"] != "differs-in-isError" for r in calls)
    same_content = sum(r["verdict"] in ("same", "differs-in-structuredContent", "differs-other")
                       for r in calls)
    w(f"\nSUMMARY: {n_same}/{len(calls)} calls identical; "
      + ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
      + f"; {spec_diffs} of the differing calls are tagged spec: (intended tuls divergence)\n")
    w(f"SUMMARY: same success/error outcome in {same_iserror}/{len(calls)}; "
      f"same content blocks (ignoring structuredContent) in {same_content}/{len(calls)}\n")
    w(f"SUMMARY: tools/list {tool_same}/{len(res['tools'])} tools identical "
      f"(A has {sum(r['verdict'] != 'only in B' for r in res['tools'])}, "
      f"B has {sum(r['verdict'] != 'only in A' for r in res['tools'])}); "
      f"final state {'identical' if not res['final_state_diffs'] else 'DIFFERS'}; "
      f"restarts A={res['restarts']['A']} B={res['restarts']['B']}\n")


VERDICTS = ("differs-in-isError", "differs-in-text", "differs-in-structuredContent", "differs-other")
ROW_RE = re.compile(r"^\|\s*(?P<ids>[0-9][0-9, \-\u2013]*)\s*\|\s*`?(?P<verdict>differs-[A-Za-z-]+)`?\s*\|")


def documented(doc, profile):
    """{call id: verdict} from the table that follows the marker
    `<!-- compat:PROFILE -->` in `doc` (rows `| ids | verdict | why |`,
    ids like `001, 019-023`), up to the next blank line after the table."""
    marker = f"<!-- compat:{profile} -->"
    text = open(doc, encoding="utf-8").read()
    if marker not in text:
        raise SystemExit(f"compat: {doc} has no {marker} table")
    out, seen_table = {}, False
    for line in text.split(marker, 1)[1].splitlines():
        if not line.strip():
            if seen_table:
                break
            continue
        if not line.startswith("|"):
            if seen_table:
                break
            continue
        seen_table = True
        m = ROW_RE.match(line)
        if not m:
            continue
        if m["verdict"] not in VERDICTS:
            raise SystemExit(f"compat: unknown verdict in {doc}: {line}")
        for part in m["ids"].replace("\u2013", "-").split(","):
            part = part.strip()
            if not part:
                continue
            lo, _, hi = part.partition("-")
            for n in range(int(lo), int(hi or lo) + 1):
                out[f"{n:03d}"] = m["verdict"]
    return out


def check_documented(res, doc, profile, out=sys.stdout):
    """Every call that differs is in the doc's table with its verdict, and
    every call the table names still differs so: else the list of what is
    not, and False."""
    want = documented(doc, profile)
    bad = []
    for r in res["calls"]:
        got, exp = r["verdict"], want.pop(r["id"], "same")
        if got != exp:
            bad.append(f"  {r['id']} {r['tool']}: {r['label']}: {got}, documented as {exp}")
    bad += [f"  {i}: documented as {v}, but there is no such call" for i, v in sorted(want.items())]
    if bad:
        out.write(f"\ncompat: {len(bad)} calls differ from {doc} (profile {profile}):\n" + "\n".join(bad) + "\n")
    else:
        out.write(f"\ncompat: every difference is documented in {doc} (profile {profile})\n")
    return not bad


def main(argv=None):
    mcplib.install_signal_handlers()
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="reference server command template ({roots})")
    p.add_argument("--b", required=True, help="candidate server command template ({roots})")
    p.add_argument("--name-a", default="A")
    p.add_argument("--name-b", default="B")
    p.add_argument("--timeout", type=float, default=30.0, help="per-call timeout, s")
    p.add_argument("--tmp", default=None, help="parent dir for the fixtures (default: $TMPDIR)")
    p.add_argument("--only", default="", help="comma-separated tool names to restrict the script")
    p.add_argument("--keep", action="store_true", help="keep the fixture copies for inspection")
    p.add_argument("--verbose", "-v", action="store_true", help="also print identical calls")
    p.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    p.add_argument("--list", action="store_true", help="print the call script and exit")
    p.add_argument("--profile", default="2026.8.31", choices=["2026.8.31", "2.3.0"],
                   help="the reference version the calls are for (2.3.0 adds its resources, depth, ...)")
    p.add_argument("--documented", metavar="DOC",
                   help="fail unless every differing call is listed, with its verdict, in DOC's "
                        "table marked <!-- compat:PROFILE --> (and nothing else is)")
    args = p.parse_args(argv)
    if args.list:
        for c in script(args.profile):
            print(f"{c['id']} {c['tool']:26s} {c['label']}" + (f"  [{c['note']}]" if c["note"] else ""))
        return 0
    t0 = time.perf_counter()
    try:
        res = run(args)
    except (OSError, RuntimeError, mcplib.CallTimeout, mcplib.ServerDied) as e:
        print(f"compat: a server failed to start or initialize: {e}", file=sys.stderr)
        return 2
    names = [args.name_a, args.name_b]
    report(res, names, args.verbose)
    print(f"({time.perf_counter() - t0:.1f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"names": names, **res}, f, indent=1, ensure_ascii=False)
    if args.documented:
        return 0 if check_documented(res, args.documented, args.profile) else 1
    return 0 if all(r["verdict"] == "same" for r in res["calls"]) else 1


if __name__ == "__main__":
    sys.exit(main())
