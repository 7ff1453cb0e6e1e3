"""Drives a tuls command with the official MCP Python SDK client (`pip install mcp`):
connect, list tools, read a file, write a file and check it on disk.

usage: python check.py CMD [ARG...]     # runs `CMD ARG... filesystem ROOT`
e.g.   python check.py tuls-mcp          # the wheel's entry point
       python check.py target/debug/tuls
Prints one line per check and "N passed, N failed"; exits 1 on a failure.
"""

import asyncio
import os
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

results = {"passed": 0, "failed": 0}


def check(name: str, cond: bool, detail: object = "") -> None:
    if cond:
        results["passed"] += 1
        print(f"ok - {name}")
    else:
        results["failed"] += 1
        print(f"not ok - {name}: {detail}")


async def session(cmd: list[str], root: str) -> None:
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "filesystem", root])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            check("initialize", init.server_info.name == "tuls", init.server_info)

            tools = (await s.list_tools()).tools
            names = sorted(t.name for t in tools)
            check("tools/list has 17 tools", len(tools) == 17 and "search_file_contents" in names, names)
            check("every tool has an outputSchema", all(t.output_schema for t in tools), names)

            # The SDK validates structuredContent against the tool's outputSchema.
            hello = os.path.join(root, "hello.txt")
            r = await s.call_tool("read_text_file", {"path": hello, "head": 2})
            text = r.content[0].text if r.content else None
            check("read_text_file head", not r.is_error and text == "line1\nline2", r)
            check("read_text_file structuredContent",
                  (r.structured_content or {}).get("content") == "line1\nline2", r.structured_content)

            new = os.path.join(root, "from-python.txt")
            w = await s.call_tool("write_file", {"path": new, "content": "from the Python SDK\n"})
            check("write_file", not w.is_error and w.content[0].text == f"Successfully wrote to {new}", w)
            with open(new, encoding="utf-8") as f:
                check("write_file on disk", f.read() == "from the Python SDK\n")

            out = await s.call_tool("read_text_file", {"path": os.path.join(root, "..", "etc")})
            check("escape refused", out.is_error is True, out)


def main() -> int:
    cmd = sys.argv[1:]
    if not cmd:
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tuls-py-sdk-") as d:
        root = os.path.realpath(d)
        with open(os.path.join(root, "hello.txt"), "w", encoding="utf-8") as f:
            f.write("line1\nline2\nline3\n")
        asyncio.run(asyncio.wait_for(session(cmd, root), 60))
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 0 if results["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
