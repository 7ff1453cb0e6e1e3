#!/usr/bin/env python3
"""A deliberately NAIVE MCP filesystem server: the referee's positive control.

DO NOT USE IT. It makes every classic mistake on purpose, so that the referee
can prove it sees escapes: containment is a string-prefix check on the
lexically normalised path (no separator, no realpath), symlinks are followed
by every call, FIFOs are opened blocking, nothing checks races.

Its path rules are naive too: `--read-only NAME` and `--hide NAME` match a
component of the path as spelled (after lexical `..`), so a symlink, a hard
link, a renamed parent or a listing goes around them.

Usage: python3 naive_server.py DIR [--read-only NAME]... [--hide NAME]...
(MCP over stdio, tools named as the reference server's). Standard library only.
"""
import base64, fnmatch, json, os, shutil, sys

ARGS = sys.argv[1:]
READ_ONLY, HIDE = [], []
while "--read-only" in ARGS or "--hide" in ARGS:
    for flag, into in (("--read-only", READ_ONLY), ("--hide", HIDE)):
        if flag in ARGS:
            i = ARGS.index(flag)
            into.append(ARGS[i + 1])
            del ARGS[i:i + 2]
ROOT = os.path.abspath(ARGS[0]) if ARGS else os.getcwd()
CAP = 1 << 20  # a naive server, but not one that eats the CI machine


def ruled(full, names):
    parts = os.path.relpath(full, ROOT).split(os.sep)
    return any(fnmatch.fnmatchcase(c, n.strip("/")) for c in parts for n in names)


def check(p, write=False):
    full = os.path.abspath(os.path.join(ROOT, p))   # relative paths: under the root
    if not full.startswith(ROOT):                    # the CVE-2025-53110 mistake
        raise PermissionError(f"Access denied - path outside allowed directories: {full}")
    if ruled(full, HIDE):
        raise PermissionError(f"Access denied - {p} is hidden")
    if write and ruled(full, READ_ONLY):
        raise PermissionError(f"Access denied - {p} is read-only")
    return full                                      # ...and symlinks are followed


def read(p, mode="r"):
    with open(check(p), mode) as f:
        return f.read(CAP)


def tree(p, depth=0):
    out = []
    for n in sorted(os.listdir(p)):
        q = os.path.join(p, n)
        e = {"name": n, "type": "directory" if os.path.isdir(q) else "file"}
        if e["type"] == "directory" and depth < 50:
            e["children"] = tree(q, depth + 1)
        out.append(e)
    return out


def search(p, pat):
    needle = pat.replace("**/", "").replace("*", "")
    hits = []
    for dirpath, dirs, files in os.walk(p, followlinks=True):
        for n in dirs + files:
            if needle in n:
                hits.append(os.path.join(dirpath, n))
        if len(hits) > 1000:
            break
    return "\n".join(hits) or "No matches found"


def tool(name, a):
    if name in ("read_text_file", "read_file"):
        text = read(a["path"])
        if a.get("head"):
            text = "\n".join(text.split("\n")[: a["head"]])
        if a.get("tail"):
            text = "\n".join(text.split("\n")[-a["tail"]:])
        return text
    if name == "read_media_file":
        return {"type": "image", "data": base64.b64encode(read(a["path"], "rb")).decode(), "mimeType": "image/png"}
    if name == "read_multiple_files":
        parts = []
        for p in a["paths"]:
            try:
                parts.append(f"{p}:\n{read(p)}\n")
            except Exception as e:
                parts.append(f"{p}: Error - {e}")
        return "\n---\n".join(parts)
    if name == "write_file":
        with open(check(a["path"], True), "w") as f:
            f.write(a["content"])
        return f"Successfully wrote to {a['path']}"
    if name == "append_file":
        with open(check(a["path"], True), "a") as f:
            f.write(a["content"])
        return f"Successfully appended to {a['path']}"
    if name == "copy_file":
        shutil.copy2(check(a["source"]), check(a["destination"], True))
        return f"Successfully copied {a['source']} to {a['destination']}"
    if name == "edit_file":
        p = check(a["path"], True)
        with open(p) as f:
            text = f.read(CAP)
        for e in a["edits"]:
            if e["oldText"] not in text:
                raise ValueError("Could not find exact match for edit")
            text = text.replace(e["oldText"], e["newText"], 1)
        if not a.get("dryRun"):
            with open(p, "w") as f:
                f.write(text)
        return "OK"
    if name == "create_directory":
        os.makedirs(check(a["path"], True), exist_ok=True)
        return f"Successfully created directory {a['path']}"
    if name in ("list_directory", "list_directory_with_sizes"):
        p = check(a["path"])
        lines = []
        for n in sorted(os.listdir(p)):
            q = os.path.join(p, n)
            tag = "[DIR]" if os.path.isdir(q) else "[FILE]"
            size = "" if name == "list_directory" or tag == "[DIR]" else f" {os.path.getsize(q)} bytes"
            lines.append(f"{tag} {n}{size}")
        return "\n".join(lines)
    if name == "directory_tree":
        return json.dumps(tree(check(a["path"])), indent=2)
    if name == "move_file":
        os.rename(check(a["source"]), check(a["destination"], True))
        return f"Successfully moved {a['source']} to {a['destination']}"
    if name == "search_files":
        return search(check(a["path"]), a["pattern"])
    if name == "get_file_info":
        st = os.stat(check(a["path"]))
        return f"size: {st.st_size}\nmodified: {st.st_mtime}\npermissions: {oct(st.st_mode & 0o777)}"
    if name == "list_allowed_directories":
        return f"Allowed directories:\n{ROOT}"
    raise ValueError(f"Unknown tool: {name}")


TOOLS = ["read_text_file", "read_media_file", "read_multiple_files", "write_file", "append_file", "edit_file", "copy_file",
         "create_directory", "list_directory", "list_directory_with_sizes", "directory_tree",
         "move_file", "search_files", "get_file_info", "list_allowed_directories"]


def reply(i, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": i}
    msg["error" if error else "result"] = error or result
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        reply(None, error={"code": -32700, "message": "Parse error"})
        continue
    if not isinstance(m, dict) or "id" not in m or "method" not in m:
        continue
    meth, i, params = m["method"], m["id"], m.get("params") or {}
    if meth == "initialize":
        reply(i, {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "naive-server", "version": "0"}})
    elif meth == "tools/list":
        reply(i, {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]})
    elif meth == "tools/call":
        try:
            r = tool(params.get("name"), params.get("arguments") or {})
            block = r if isinstance(r, dict) else {"type": "text", "text": r}
            reply(i, {"content": [block]})
        except Exception as e:
            reply(i, {"content": [{"type": "text", "text": f"Error: {e}"}], "isError": True})
    elif meth == "ping":
        reply(i, {})
    else:
        reply(i, error={"code": -32601, "message": "Method not found"})
