#!/usr/bin/env python3
"""Instructions per tool call, counted by valgrind's callgrind (deterministic: they do not
depend on the machine's load).

    python3 ci/callgrind.py [--pipe] [--n N] BIN ROOT TOOL JSONARGS [-- SERVER-FLAGS...]

Runs two sessions of `BIN filesystem ROOT SERVER-FLAGS` under `valgrind --tool=callgrind`:
`initialize` alone, then `initialize` and N identical `tools/call`s (each sent when the one
before is answered; with --pipe, all written at once, then the answers read), then end of
input. Prints both totals (threads included) and (calls - initialize) / N. `{root}` in
JSONARGS is replaced by ROOT. Used for the instruction tables of docs/maintainers/path-rules-cost.md,
docs/performance.md and the closing notes; needs valgrind (Debian's package).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def session(bin_, root, flags, n, pipe, tool, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               bin_, "filesystem", root, *flags]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)

        def send(o):
            p.stdin.write((json.dumps(o) + "\n").encode())
            p.stdin.flush()

        def recv():
            while True:
                line = p.stdout.readline()
                if not line:
                    sys.exit("the server closed its output")
                m = json.loads(line)
                if "id" in m:
                    return m

        send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "callgrind.py", "version": "1"}}})
        recv()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        errors = 0

        def call(i):
            return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": tool, "arguments": args}}

        def failed(m):
            return "error" in m or m["result"].get("isError", False)

        if pipe:
            for i in range(1, n + 1):
                send(call(i))
            errors = sum(failed(recv()) for _ in range(n))
        else:
            for i in range(1, n + 1):
                send(call(i))
                errors += failed(recv())
        p.stdin.close()
        p.wait()
        if errors:
            sys.exit(f"{errors} of {n} calls failed: fix the arguments first")
        with open(out) as f:
            for line in f:
                if line.startswith("summary:"):
                    return int(line.split()[1])
        sys.exit("no summary line in the callgrind output")


def main():
    argv = sys.argv[1:]
    flags = []
    if "--" in argv:
        i = argv.index("--")
        argv, flags = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pipe", action="store_true", help="write all calls at once")
    ap.add_argument("--n", type=int, default=100, help="calls in the second session")
    ap.add_argument("bin")
    ap.add_argument("root")
    ap.add_argument("tool")
    ap.add_argument("args", help="the tool's arguments, JSON; {root} is replaced")
    a = ap.parse_args(argv)
    args = json.loads(a.args.replace("{root}", a.root))
    base = session(a.bin, a.root, flags, 0, False, a.tool, args)
    total = session(a.bin, a.root, flags, a.n, a.pipe, a.tool, args)
    per = (total - base) / a.n
    print(f"initialize alone: {base:,} instructions; with {a.n} calls: {total:,}; "
          f"per call: {per:,.0f}")


if __name__ == "__main__":
    main()
