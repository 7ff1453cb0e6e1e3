#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/.

Run from anywhere: `python3 fuzz/gen_seeds.py`. It rewrites only the files it
names, so seeds added by hand stay. Seeds are named for what they try.

Input formats (see each target's doc comment):
- resolve: path alphabet; ASCII is itself, <<key>> is a token from
  PATH_TOKENS in src/alphabet.rs (read from that file, so indices stay in sync).
- tool_calls: calls separated by \\n; each call is a header byte ('A'..'M' =
  the tools in tools/list order, 'N' = JSON-RPC line; lower case = tight
  limits; |0x80 = cancelled) then JSON, in which $ROOT, $ROOT2, $SIB,
  $OUTSIDE, $CANARY_NAME ... expand to the fixture's paths.
- edit: text, oldText, newText, ... separated by 0xff.
- selectors: selectors separated by 0xff; '-' prefix = --deny, '+' = --allow.
"""

import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def tokens(table):
    src = open(os.path.join(HERE, "src", "alphabet.rs"), encoding="utf-8").read()
    body = src.split(f"// BEGIN {table}")[1].split(f"// END {table}")[0]
    out = []
    for line in body.splitlines():
        m = re.match(r'\s*"((?:[^"\\]|\\.)*)",', line)
        if m:
            out.append(unescape(m.group(1)))
    return out


def unescape(lit):
    """Decodes the Rust string-literal escapes the tables use."""
    return re.sub(
        r'\\(u\{([0-9a-fA-F]+)\}|.)',
        lambda m: chr(int(m.group(2), 16)) if m.group(2)
        else {"n": "\n", "r": "\r", "t": "\t", "0": "\0"}.get(m.group(1), m.group(1)),
        lit,
    )


PATH_TOKENS = tokens("PATH_TOKENS")


def path(spec):
    """Encodes a path seed: <<key>> becomes its token byte, the rest is ASCII."""
    out = bytearray()
    for i, part in enumerate(re.split(r"<<(.*?)>>", spec)):
        if i % 2:
            out.append(0x80 + PATH_TOKENS.index(part))
        else:
            out += part.encode("ascii")
    return bytes(out)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


RESOLVE = {
    "plain_file": "file.txt",
    "root_abs_file": "<<@root>>/file.txt",
    "root_resolved_spelling": "<<@root_resolved>>/sub/inner.txt",
    "root_trailing_slashes": "<<@root>>//sub///deep/",
    "root2_file": "<<@root2>>/r.txt",
    "root2_back_link": "<<@root2>>/back",
    "root2_up_link": "<<@root2>>/up/root/file.txt",
    "rel_out": "rel_out",
    "rel_out_dir": "rel_out_dir/<<@canary_name>>",
    "far_out": "far_out",
    "abs_out": "abs_out",
    "abs_in": "abs_in",
    "etc_passwd": "etc/passwd",
    "proc_root": "proc_root<<@root_resolved>>/file.txt",
    "proc_cwd": "proc_cwd/",
    "chain_out": "chain_a",
    "chain_in": "chain_in_a",
    "dangling_out": "dangling_out",
    "dangling_in": "dangling_in",
    "loop": "loop_a/x",
    "self_loop": "self_loop",
    "prefix_sibling_link": "sibling",
    "prefix_sibling_abs": "<<@sib>>/<<@canary_name>>",
    "cross_root_link": "cross",
    "dir_link": "dir_link/b/c.txt",
    "sub_up": "sub/up/file.txt",
    "sub_upup": "sub/upup/<<@outside_name>>/<<@canary_name>>",
    "dotdot": "../<<@outside_name>>/<<@canary_name>>",
    "dotdot_after_name": "a/../../root2/r.txt",
    "dotdot_inside": "a/b/../../sub/./inner.txt",
    "outside_abs": "<<@outside>>/<<@canary_name>>",
    "work_abs": "<<@work>>/root/file.txt",
    "proc_self_root_prefix": "<</proc/self/root>><<@root>>/file.txt",
    "nul": "file.txt\x00/x",
    "long300": "<<@long300>>",
    "long255": "sub/<<@long255>>",
    "unicode_nfc": "<<\u00e9>>",
    "unicode_nfd": "<<e\u0301>>/n.txt",
    "windows": "C:\\x",
    "trailing_slash_file": "file.txt/",
    "root_dotdot": "<<@root>>/..",
}

TOOLS = [
    "read_text_file", "read_media_file", "read_multiple_files", "write_file",
    "edit_file", "create_directory", "list_directory",
    "list_directory_with_sizes", "directory_tree", "move_file",
    "search_files", "get_file_info", "list_allowed_directories",
]


def call(tool, args, flags=0):
    body = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    return bytes([(ord("A") + TOOLS.index(tool)) | flags]) + body.encode()


def rpc(tool, args, rid=1):
    line = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}
    return b"N" + json.dumps(line, separators=(",", ":")).encode()


TIGHT, CANCELLED = 0x20, 0x80
OUT = "$OUTSIDE_NAME/$CANARY_NAME"

TOOL_CALLS = {
    "read_file": [call("read_text_file", {"path": "file.txt"})],
    "read_head_tail": [call("read_text_file", {"path": "$ROOT/crlf.txt", "head": 1}),
                       call("read_text_file", {"path": "crlf.txt", "tail": 2})],
    "read_tight": [call("read_text_file", {"path": "file.txt", "head": 1.5}, TIGHT)],
    "read_rel_out": [call("read_text_file", {"path": "rel_out"})],
    "read_sub_upup": [call("read_text_file", {"path": "sub/upup/" + OUT})],
    "read_chain": [call("read_text_file", {"path": "chain_a"})],
    "read_fifo": [call("read_text_file", {"path": "fifo"})],
    "read_root2_back": [call("read_text_file", {"path": "$ROOT2/back"})],
    "read_sibling_abs": [call("read_text_file", {"path": "$SIB/$CANARY_NAME"})],
    "media_png": [call("read_media_file", {"path": "img.png"})],
    "media_abs_out": [call("read_media_file", {"path": "abs_out"})],
    "multiple": [call("read_multiple_files", {"paths": [
        "file.txt", "rel_out", "$ROOT2/r.txt", "sub/upup/" + OUT, "fifo"]})],
    "write_new": [call("write_file", {"path": "new.txt", "content": "hello\n"}),
                  call("read_text_file", {"path": "new.txt"})],
    "write_through_link": [call("write_file", {"path": "rel_out", "content": "x"})],
    "write_into_link_dir": [call("write_file", {"path": "rel_out_dir/new", "content": "x"})],
    "write_dangling": [call("write_file", {"path": "dangling_out", "content": "x"})],
    "write_sub_upup": [call("write_file", {"path": "sub/upup/new", "content": "x"})],
    "write_root2": [call("write_file", {"path": "$ROOT2/new", "content": "x"})],
    "edit_dry_run": [call("edit_file", {"path": "file.txt", "edits": [
        {"oldText": "line two", "newText": "2"}], "dryRun": True})],
    "edit_crlf": [call("edit_file", {"path": "crlf.txt", "edits": [
        {"oldText": "two\r\n", "newText": "2\n"}]})],
    "edit_lf_in_crlf": [call("edit_file", {"path": "crlf.txt", "edits": [
        {"oldText": "one\ntwo", "newText": "x"}]})],
    "edit_chain_out": [call("edit_file", {"path": "chain_a", "edits": [
        {"oldText": "TULS", "newText": "x"}]})],
    "mkdir_new": [call("create_directory", {"path": "new/deeper"})],
    "mkdir_link_dir": [call("create_directory", {"path": "rel_out_dir/new"})],
    "mkdir_upup": [call("create_directory", {"path": "sub/upup/new"})],
    "list_root": [call("list_directory", {"path": "."})],
    "list_link_dir": [call("list_directory", {"path": "rel_out_dir"})],
    "list_upup": [call("list_directory", {"path": "sub/upup"})],
    "list_sib": [call("list_directory", {"path": "$SIB"})],
    "sizes": [call("list_directory_with_sizes", {"path": ".", "sortBy": "size"})],
    "sizes_tight": [call("list_directory_with_sizes", {"path": "$ROOT"}, TIGHT)],
    "tree": [call("directory_tree", {"path": ".", "excludePatterns": ["a"]})],
    "tree_root2_tight": [call("directory_tree", {"path": "$ROOT2"}, TIGHT)],
    "tree_cancelled": [call("directory_tree", {"path": "."}, CANCELLED)],
    "move_rename": [call("move_file", {"source": "file.txt", "destination": "moved.txt"}),
                    call("list_directory", {"path": "."})],
    "move_link_out": [call("move_file", {"source": "rel_out", "destination": "got"}),
                      call("read_text_file", {"path": "got"})],
    "move_into_link_dir": [call("move_file", {"source": "file.txt", "destination": "rel_out_dir/x"})],
    "move_cross_root": [call("move_file", {"source": "file.txt", "destination": "$ROOT2/x"})],
    "move_dir_upup": [call("move_file", {"source": "a", "destination": "sub/upup/a"})],
    "move_root_itself": [call("move_file", {"source": "$ROOT", "destination": "x"})],
    "search_txt": [call("search_files", {"path": ".", "pattern": "**/*.txt"})],
    "search_link_dir": [call("search_files", {"path": "rel_out_dir", "pattern": "*"})],
    "search_braces": [call("search_files", {"path": ".", "pattern": "{{{{", "excludePatterns": ["**"]})],
    "info_abs_out": [call("get_file_info", {"path": "abs_out"})],
    "info_root": [call("get_file_info", {"path": "$ROOT"})],
    "info_fifo": [call("get_file_info", {"path": "fifo"})],
    "allowed": [call("list_allowed_directories", {})],
    "unknown_field": [call("write_file", {"path": "x", "content": "y", "bogus": 1})],
    "wrong_type": [call("read_text_file", {"path": 5})],
    "rpc_read_out": [rpc("read_text_file", {"path": "rel_out"})],
    "rpc_unknown_tool": [rpc("delete_everything", {"path": "."}, "a-1")],
    "structured_bytes": [b"D" + bytes(range(0x80, 0x80 + 48))],
}

EDIT = {
    "simple": [b"a\nb\nc\n", b"b", b"B"],
    "crlf_lf": [b"a\r\nb\r\n", b"a\nb", b"x"],
    "crlf_exact": [b"a\r\nb\r\n", b"a\r\nb", b"x"],
    "lone_lf": [b"one\r\ntwo", b"\n", b"|"],
    "overlap": [b"aaa", b"aa", b"b"],
    "sequence": [b"foo();\n", b"foo()", b"bar()", b"bar();", b"baz();"],
    "stale": [b"foo", b"foo", b"bar", b"foo", b"qux"],
    "empty_old": [b"abc", b"", b"x"],
    "unicode": ["na\u00efve \U0001d11e caf\u00e9\n".encode(), "\U0001d11e caf".encode(), "\u266a ".encode()],
    "partial_char": ["\u00e8".encode(), "\u00e9".encode(), b"e"],
    "dollar": [b"x\ny\n", b"y", b"$& $1 $$ \\0"],
    "ambiguous_lines": [b"k\nk\nk\nk\nk\nk\n", b"k", b""],
}

SELECTORS = {
    "deny_all": [b"-filesystem"],
    "read_only": [b"+filesystem.read"],
    "deny_write": [b"-filesystem.write"],
    "deny_one": [b"+filesystem.read", b"+filesystem.write", b"-filesystem/move_file"],
    "deny_beats_allow": [b"+filesystem/write_file", b"+filesystem/read_text_file", b"-filesystem/write_file"],
    "bad_case": [b"-Filesystem.read"],
    "bad_space": [b"+ filesystem.read"],
    "bad_tool": [b"-filesystem/read_file"],
    "empty": [b"-"],
    "every_tool": [b"-filesystem/" + t.encode() for t in TOOLS[:12]],
}


def main():
    for name, spec in RESOLVE.items():
        write("resolve", name, path(spec))
    for name, calls in TOOL_CALLS.items():
        write("tool_calls", name, b"\n".join(calls))
    for name, parts in EDIT.items():
        write("edit", name, b"\xff".join(parts))
    for name, parts in SELECTORS.items():
        write("selectors", name, b"\xff".join(parts))


if __name__ == "__main__":
    main()
