#!/usr/bin/env python3
"""Drive `small mcp` with the Python MCP SDK (PyPI package `mcp`) through a whole workflow:
init (with the `small` binary), plan, progress, checkpoint, handoff, check, resume.

Usage: mcp_client.py SMALL_BINARY
Exits 0 when every step behaved, 1 with the failing step otherwise, and 3 when the `mcp`
package is not installed (the caller reports that as a skip).
"""

import asyncio
import json
import subprocess
import sys
import tempfile

try:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as e:  # the caller turns this into a visible skip
    print(f"mcp_client.py: the Python `mcp` package is not installed: {e}", file=sys.stderr)
    sys.exit(3)


def structured(result):
    data = getattr(result, "structured_content", None)
    if data is None:
        data = getattr(result, "structuredContent", None)
    if data is None and result.content:
        data = json.loads(result.content[0].text)
    return data


async def call(session, name, args, expect_error=False):
    result = await session.call_tool(name, args)
    is_error = bool(getattr(result, "is_error", None) or getattr(result, "isError", None))
    data = structured(result)
    if is_error != expect_error:
        raise SystemExit(f"{name} {args}: is_error={is_error}, result {data}")
    return data


async def workflow(small, root):
    subprocess.run([small, "init", "--intent", "Python MCP client", "--no-merge-driver"],
                   cwd=root, check=True, capture_output=True)
    params = StdioServerParameters(command=small, args=["mcp", "--dir", root])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            for needed in ["resume", "plan", "progress_add", "checkpoint", "handoff", "check"]:
                assert needed in tools, f"{needed} not in {sorted(tools)}"

            out = await call(session, "plan", {"add": "Port the lexer", "id": "lexer"})
            assert out["added"][0]["id"] == "lexer", out
            out = await call(session, "progress_add",
                             {"task": "lexer", "status": "in_progress", "evidence": "tokens done"})
            assert out["entry"]["task_id"] == "lexer", out
            await call(session, "checkpoint",
                       {"task": "lexer", "status": "completed", "evidence": "pytest passes"})
            await call(session, "checkpoint",
                       {"task": "task-1", "status": "completed", "evidence": "placeholder closed"})
            err = await call(session, "progress_add",
                             {"task": "lexr", "status": "in_progress", "evidence": "typo"},
                             expect_error=True)
            assert err["error"]["code"] == "unknown-task", err
            assert "lexer" in err["error"]["help"], err
            out = await call(session, "handoff", {"summary": "Lexer ported"})
            assert out["summary"] == "Lexer ported", out
            out = await call(session, "check", {})
            assert out["passed"] is True, out
            out = await call(session, "resume", {"max_chars": 3000})
            assert out["markdown"].startswith("# SMALL resume"), out
            assert out["handoff"]["summary"] == "Lexer ported", out

            resources = (await session.list_resources()).resources
            assert str(resources[0].uri) == "small://workspace/handoff.small.yml", resources[0]
    # The CLI sees everything the MCP session wrote.
    check = subprocess.run([small, "check", "--strict", "--dir", root], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as root:
        asyncio.run(workflow(sys.argv[1], root))
    print("mcp_client.py: init, plan, progress, checkpoint, handoff, check, resume: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
