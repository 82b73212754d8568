"""MCP servers: which servers a run loads (`servers`), the hub that starts and watches them
(`hub`) over one connection each (`connection`), their tools as iota tools (`tool`), the tools of
deferred servers waiting behind a search (`defer`), OAuth tokens and the login that gets them
(`auth`, `login`), and the `iota mcp` edits of the config file (`config_file`).

The `mcp` SDK is imported only inside the functions that connect, log in or build an OAuth
client, and only when a chat has servers or a login runs.
"""
