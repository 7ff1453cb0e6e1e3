#!/usr/bin/env python3
"""A minimal MCP session over stdio, with no MCP library: initialize,
notifications/initialized, tools/list, a read_text_file and a write_file, then
end of input and a clean exit. Checks the written file on disk.

usage: smoke.py [--env-empty] [--cwd DIR] --root ROOT [--host-root DIR] -- CMD [ARG...]

ROOT is the allowed directory as the server sees it (it must hold hello.txt
with "hello from the fixture\n"); --host-root is the same directory as this
script sees it (they differ under chroot). CMD ARGS is run with
`filesystem ROOT` appended. Prints one line per check and "N passed, N failed".
"""
import argparse
import json
import os
import queue
import subprocess
import sys
import threading

FIXTURE = "hello from the fixture\n"
WRITTEN = "written by the smoke session\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--env-empty", action="store_true", help="start the server with an empty environment")
    ap.add_argument("--cwd", help="working directory of the server")
    ap.add_argument("--root", required=True)
    ap.add_argument("--host-root")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no server command")
    host_root = a.host_root or a.root
    passed = failed = 0

    def check(name, cond, detail=""):
        nonlocal passed, failed
        if cond:
            passed += 1
            print(f"ok - {name}")
        else:
            failed += 1
            print(f"not ok - {name}: {detail}")

    proc = subprocess.Popen(
        cmd + ["filesystem", a.root],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=a.cwd,
        env={} if a.env_empty else None,
    )
    replies: "queue.Queue[bytes]" = queue.Queue()
    threading.Thread(target=lambda: [replies.put(l) for l in proc.stdout] and None, daemon=True).start()

    def send(msg):
        proc.stdin.write(json.dumps(msg).encode() + b"\n")
        proc.stdin.flush()

    def call(id_, method, params):
        send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        while True:
            line = replies.get(timeout=20)
            msg = json.loads(line)
            if msg.get("id") == id_:
                return msg

    try:
        init = call(1, "initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "tuls-dist-smoke", "version": "1.0.0"},
        })
        info = init.get("result", {}).get("serverInfo", {})
        check("initialize", info.get("name") == "tuls", json.dumps(init))
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        tools = call(2, "tools/list", {}).get("result", {}).get("tools", [])
        names = {t["name"] for t in tools}
        check("tools/list", {"read_text_file", "write_file"} <= names and len(tools) == 17, sorted(names))

        path = a.root.rstrip("/") + "/hello.txt"
        read = call(3, "tools/call", {"name": "read_text_file", "arguments": {"path": path}}).get("result", {})
        text = (read.get("content") or [{}])[0].get("text")
        check("read_text_file", not read.get("isError") and text == FIXTURE, json.dumps(read))

        new = a.root.rstrip("/") + "/written.txt"
        wr = call(4, "tools/call", {"name": "write_file", "arguments": {"path": new, "content": WRITTEN}}).get("result", {})
        check("write_file", not wr.get("isError"), json.dumps(wr))
        on_disk = os.path.join(host_root, "written.txt")
        try:
            with open(on_disk, encoding="utf-8") as f:
                got = f.read()
        except OSError as e:
            got = repr(e)
        check("write_file on disk", got == WRITTEN, got)

        out = call(5, "tools/call", {"name": "read_text_file", "arguments": {"path": "/etc/passwd"}}).get("result", {})
        check("outside the root refused", out.get("isError") is True, json.dumps(out))
    except queue.Empty:
        check("reply within 20 s", False, "timeout")
    finally:
        proc.stdin.close()
        try:
            code = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = "killed after 20 s"
    check("clean exit at end of input", code == 0, f"exit {code}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
