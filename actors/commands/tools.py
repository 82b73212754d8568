"""`/tools`: each toolset — on or off, how it asks and where it runs — with its tools in a line
each; then each MCP server: its status, endpoint and tools."""

from __future__ import annotations

from actors.events import Panel
from actors.lane import Lane


async def show_tools(lane: Lane, argument: str) -> None:
    """Each toolset: whether it is on, how it asks and where it runs, and its tools with one line
    each; then each MCP server: its status, endpoint and tools."""
    by_set: dict[str, list] = {}
    for tool in lane.toolbox:
        by_set.setdefault(toolset_of(tool), []).append(tool)
    width = max((len(tool.display_name or tool.name) for tool in lane.toolbox), default=0)
    lines = []
    for name, settings in toolset_settings(lane):
        lines.append(f"{name}  {settings}")
        for tool in by_set.pop(name, []):
            lines.append(f"  {(tool.display_name or tool.name).ljust(width)}  {one_line(tool.description)}".rstrip())
    for name, tools in by_set.items():
        if name == "mcp":
            continue
        lines.append(name)
        lines.extend(f"  {(tool.display_name or tool.name).ljust(width)}  {one_line(tool.description)}".rstrip()
                     for tool in tools)
    lane.emit(Panel("Tools", "\n".join(lines)))
    hub = lane.toolbox.mcp
    if hub is not None:
        rows = []
        for server in hub.statuses():
            rows.append(f"{server.name}  {server.summary()} · {server.endpoint}")
            rows.extend(f"  {tool}" for tool in server.tools)
        lane.emit(Panel("MCP servers", "\n".join(rows)))


def toolset_of(tool) -> str:
    """The toolset a tool belongs to, by the module that defines it."""
    module = type(tool).__module__
    for prefix, name in (("iota.tools.code.toolset", "code"), ("iota.tools.shell", "shell"), ("iota.tools.skills", "skills"),
                         ("iota.tools.ask", "ask"), ("iota.tools.remember", "memory"), ("iota.mcp", "mcp")):
        if module.startswith(prefix):
            return name
    return "other"


def toolset_settings(lane: Lane) -> list[tuple[str, str]]:
    """(toolset, what it is set to) for the built-in sets, in the order the model is told of them."""
    setup = lane.setup
    tools = setup.agent.tools
    code = tools.code
    rows = [("code", "off" if code is None else "on · read only" if code.read_only else
             "on · writes without asking (auto_write: true)" if code.auto_write else "on · writes ask first")]
    shell_options = tools.shell
    if shell_options is None:
        rows.append(("shell", "off"))
    else:
        shell = lane.toolbox.get("shell")
        sandboxed = getattr(shell, "sandbox", None) is not None
        where = ("in the sandbox" + (" · network on" if shell_options.network else " · no network")
                 if sandboxed else "without a sandbox" + (" (sandbox: off)" if shell_options.sandbox == "off"
                                                           else " (none available)"))
        asks = "commands run without asking (auto_run: true)" if shell_options.auto_run else \
            "iota's own commands ask first" if sandboxed else "every command asks first"
        rows.append(("shell", f"on · {where} · {asks}"))
    if setup.mode in ("agent", "bot"):
        rows.append(("skills", f"on · {len(setup.skills)} skill(s)" if tools.skills and setup.skills else
                     "on · no skills found" if tools.skills else "off"))
    rows.append(("ask", "on" if tools.ask and setup.interactive else "off"))
    if setup.mode == "bot":
        rows.append(("memory", "on · MEMORY.md, written with remember, no approval"))
    return rows


def one_line(description: str, limit: int = 90) -> str:
    """A description's first sentence, cut to `limit` characters."""
    first = " ".join(description.split("\n\n")[0].split())
    end = first.find(". ")
    first = first[:end + 1] if end >= 0 else first
    return first if len(first) <= limit else first[:limit - 1].rstrip() + "…"
