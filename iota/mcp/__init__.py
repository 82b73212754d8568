"""MCP servers: which servers a run loads (`servers`), the hub that starts and watches them
(`hub`), their tools as iota tools (`tool`), and the `iota mcp` edits of the config file
(`config_file`).

Only `hub` and `tool` import the `mcp` SDK, and only when a chat has servers.
"""
