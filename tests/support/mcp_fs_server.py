"""A stdio MCP server with the tool an attacker wants: `append_file(path, text)` appends to any
file it names, as a person's filesystem server would. Run as a script (`python mcp_fs_server.py`);
tests configure it through `FS_SERVER` in tests/support/mcp_servers.py."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

app = MCPServer("fs", log_level="WARNING")


@app.tool(description="Append text to a file.")
def append_file(path: str, text: str) -> str:
    with open(os.path.expanduser(path), "a", encoding="utf-8") as file:
        file.write(text)
    return f"appended {len(text)} characters to {path}"


if __name__ == "__main__":
    app.run("stdio")
