"""A stdio MCP server that is slow to start, for the tests of what outlives iota.

    python slow_mcp_server.py PIDS_FILE [SECONDS]

It starts a helper process of its own (as `npx` or `uvx` start the real server), writes its pid
and the helper's, one a line, to PIDS_FILE, then sleeps SECONDS (default 300) before it answers
anything — so a test can end iota while the server is still starting. After that it is a real
MCP server with one tool, `echo`.

The helper is `sleep` in a process group of its own: so only a subreaper, not a kill of the
server's process group, can still find it once the server is gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def main(pids_file: str, seconds: float) -> None:
    helper = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              process_group=0)
    temporary = f"{pids_file}.partial"
    with open(temporary, "w") as pids:
        pids.write(f"{os.getpid()}\n{helper.pid}\n")
    os.replace(temporary, pids_file)  # whole or not at all: the test reads it while it is written
    time.sleep(seconds)

    from mcp.server.mcpserver import MCPServer

    server = MCPServer("slow")

    @server.tool()
    def echo(text: str) -> str:
        return text

    server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 300.0)
