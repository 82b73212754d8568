"""Deferred tools: the MCP servers with `defer: "<one-line summary>"`, whose tools the model is not
sent until it asks for them.

A tool's schema costs hundreds of tokens on every request, and a long tool list makes the model
choose worse; a line that says what a server can do costs a few, once. So a deferred server's
tools wait behind a search, and load when the model searches for them — or calls one by its
name, which loads it too (a model that skips the search loses a few tokens, never the tool).
Loaded tools stay for the rest of the chat; a resumed session starts deferred again.

How the model is shown what waits is the model's `defer_mode` (a property of the provider's
wire protocol; the config refuses a mode the provider cannot speak). The `Deferral` is made
once, when the chat's tools open, so a `/model` switch keeps the mode the chat started with.

    normal        every provider: a `search_tools` tool whose description lists the hidden
                  groups; what it loads joins the tools array from the next request
    reference     Anthropic: every tool is sent, the deferred ones marked `defer_loading`, and
                  Anthropic's own tool search finds them within a response (the provider adds
                  the search tool and replays its blocks; see iota.providers.anthropic)
    tool-search   the OpenAI Responses API: the deferred tools are marked as for reference, and
                  the provider answers the API's tool-search calls with `search` (the
                  openresponses provider does this)
    system-tools  Chat Completions (Kimi K3's dynamically loaded tools): `search_tools` as in
                  normal, but the tools array never changes; what loads is mounted in the
                  history instead, as a system message carrying the schemas after the tool
                  result that loaded it (the agent loop attaches `take_mounts()`)

The model-facing texts (the search tool's description, its results, the catalog) are the Rust
iota's, word for word.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from iota.memory.document import go_quote
from iota.providers.base import ToolSpec
from iota.providers.tool_search import SEARCH_TOP_K, search
from iota.tools.base import Tool, ToolResult

SEARCH_TOOL_NAME = "search_tools"
DESCRIPTION_BUDGET = 800  # the tightest known provider limits on a description sit around 1 KB
SUMMARY_CLAMP = 120  # a group's summary in the description (the catalog has it whole)
CATALOG_DESCRIPTION_CLAMP = 100
CATALOG_NAMES_ONLY_AT = 50  # past this many hidden tools, the catalog lists names only
SEARCH_HEAD = "Search and load additional tools before first use. Hidden tool groups:\n"
SEARCH_FOOT = ('Query by capability keywords (e.g. "create pull request"); matched tools load and stay available. '
               "An empty query lists every hidden tool. Calling a hidden tool directly by name also loads it.")
QUERY_DESCRIPTION = "Capability keywords; empty lists everything hidden."
# The modes whose tools array carries the hidden tools marked, for the provider's own search.
MARKING_MODES = ("reference", "tool-search")


@dataclass(frozen=True)
class DeferredGroup:
    """One deferred server: its name and its `defer:` summary."""

    name: str
    summary: str


@dataclass
class _GroupView:
    group: DeferredGroup
    label: str  # `12 tools`, `connecting…`, `failed`
    tools: list[Tool]


class Deferral:
    """Which tools of a toolbox are hidden, which have loaded, and what the model is sent. Made
    with the toolbox it defers for, it puts itself (and `search_tools`, in the modes that have
    it) there: the toolbox asks it for the specs, and tells it each call."""

    def __init__(self, groups: list[DeferredGroup], mode: str, toolbox: Any):
        self.groups = groups
        self.mode = mode
        self.toolbox = toolbox
        self.loaded: set[str] = set()
        self._mounts: list[ToolSpec] = []  # system-tools: loaded schemas not yet in the history
        toolbox.deferral = self
        if mode not in MARKING_MODES:
            toolbox.add(SearchTools(self))

    def specs(self) -> list[ToolSpec]:
        """What the model is sent of the toolbox, in this mode."""
        views, rest = self._resolve()
        if self.mode in MARKING_MODES:
            hidden = {tool.name for view in views for tool in view.tools}
            return [dataclasses.replace(tool.spec(), deferred=tool.name in hidden) for tool in self.toolbox]
        specs = [self._search_spec(views), *(tool.spec() for tool in rest)]
        if self.mode == "normal":
            specs += [tool.spec() for view in views for tool in view.tools if tool.name in self.loaded]
        return specs

    def take_mounts(self) -> list[ToolSpec]:
        """system-tools: the schemas loaded since the last call, to mount in the history."""
        mounts, self._mounts = self._mounts, []
        return mounts

    def note_call(self, name: str) -> None:
        """A call by name of a hidden tool loads it (the toolbox runs it as any other)."""
        views, _ = self._resolve()
        for tool in (tool for view in views for tool in view.tools if tool.name == name):
            self._load(tool)

    def search(self, query: str) -> str:
        """`search_tools`: the catalog for an empty query, else load the best matches."""
        views, _ = self._resolve()
        if not query.strip():
            return self._catalog(views)
        hits = search(query, [tool for view in views for tool in view.tools])
        if not hits:
            lines = "".join(f"- {view.group.name} ({view.label}): {view.group.summary}\n" for view in views)
            return (f"No tools matched {go_quote(query)}. Hidden groups:\n{lines}"
                    "Try different keywords, or an empty query to list every tool.")
        loaded, extra = hits[:SEARCH_TOP_K], len(hits) - SEARCH_TOP_K
        for tool in loaded:
            self._load(tool)
        text = f"Loaded {len(loaded)} tool(s) — available from the next step:\n"
        text += "".join(f"- {tool.name} — {clamp_line(tool.description, CATALOG_DESCRIPTION_CLAMP)}\n" for tool in loaded)
        if extra > 0:
            text += (f"+{extra} more matched but were not loaded — refine the query, list everything with an empty "
                     "query, or call a tool by its exact name.\n")
        return text.rstrip("\n")

    def _load(self, tool: Tool) -> None:
        if tool.name in self.loaded:
            return
        self.loaded.add(tool.name)
        if self.mode == "system-tools":
            self._mounts.append(tool.spec())

    def _resolve(self) -> tuple[list[_GroupView], list[Tool]]:
        """The deferred groups with their tools as the toolbox holds them now, and the rest."""
        toolbox = self.toolbox
        by_server: dict[str, list[Tool]] = {group.name: [] for group in self.groups}
        rest = []
        for tool in toolbox:
            server = getattr(tool, "server", None)
            if server in by_server:
                by_server[server].append(tool)
            elif tool.name != SEARCH_TOOL_NAME:
                rest.append(tool)
        states = {status.name: status.state for status in toolbox.mcp.statuses()} if toolbox.mcp else {}
        views = []
        for group in self.groups:
            tools = by_server[group.name]
            state = states.get(group.name, "connecting")
            label = f"{len(tools)} tools" if state == "ready" else "connecting…" if state == "connecting" else state
            views.append(_GroupView(group, label, tools))
        return views, rest

    @staticmethod
    def _search_spec(views: list[_GroupView]) -> ToolSpec:
        """`search_tools`, with as many group lines as the description's budget holds: all of
        them, else some and `+N more`, else (not even one fits) the bare counts."""
        lines = [f"- {view.group.name} ({view.label}): {clamp_line(view.group.summary, SUMMARY_CLAMP)}"
                 for view in views]
        kept, omitted = fit_lines(lines, DESCRIPTION_BUDGET - len(SEARCH_HEAD) - len(SEARCH_FOOT) - 1)
        if not kept and omitted:
            count = sum(len(view.tools) for view in views)
            description = (f"Search and load additional tools before first use. {len(views)} tool groups "
                           f"({count} tools) are hidden.\n")
        else:
            description = SEARCH_HEAD + "\n".join(kept) + "\n"
            if omitted:
                description += f"… +{omitted} more groups — empty query lists all\n"
        parameters = {"type": "object", "properties": {"query": {"type": "string", "description": QUERY_DESCRIPTION}}}
        return ToolSpec(SEARCH_TOOL_NAME, description + SEARCH_FOOT, parameters)

    def _catalog(self, views: list[_GroupView]) -> str:
        """Every group with its whole summary, then each hidden tool (a line each; past
        CATALOG_NAMES_ONLY_AT tools, names only)."""
        total = sum(len(view.tools) for view in views)
        text = f"Hidden tool groups ({len(views)} groups, {total} tools):\n"
        for view in views:
            text += f"\n{view.group.name} ({view.label}): {view.group.summary}\n"
            for tool in view.tools:
                mark = " (loaded)" if tool.name in self.loaded else ""
                if total > CATALOG_NAMES_ONLY_AT:
                    text += f"  {tool.name}{mark}\n"
                else:
                    text += f"  {tool.name} — {clamp_line(tool.description, CATALOG_DESCRIPTION_CLAMP)}{mark}\n"
        return text + ("\nQuery by capability keywords to load tools, or call a listed tool directly to load and run "
                       "it in one step.")


class SearchTools(Tool):
    """The `search_tools` tool: its description is the Deferral's to write (`Deferral.specs`)."""

    name = SEARCH_TOOL_NAME
    description = "Search and load additional tools before first use."  # as /tools lists it
    parallel = False  # a search changes what is loaded

    def __init__(self, deferral: Deferral):
        self.deferral = deferral
        self.parameters = Deferral._search_spec([]).parameters

    def target(self, args: dict[str, Any]) -> str:
        return str(args.get("query") or "")

    async def run(self, args: dict[str, Any]) -> ToolResult:
        query = args.get("query")
        return ToolResult(self.deferral.search(query if isinstance(query, str) else ""))


def clamp_line(text: str, limit: int) -> str:
    """The first line, trimmed, cut to `limit` characters with `…`."""
    first = (text or "").split("\n", 1)[0].strip()
    return first if len(first) <= limit else first[: limit - 1] + "…"


def fit_lines(lines: list[str], budget: int) -> tuple[list[str], int]:
    """The leading lines that fit in `budget` bytes (each with its newline), and how many did not."""
    used = 0
    for index, line in enumerate(lines):
        size = len(line.encode()) + 1
        if used + size > budget:
            return lines[:index], len(lines) - index
        used += size
    return lines, 0
