"""What a tool is, and the toolbox the agent loop calls tools through.

A tool has a name, a description and a JSON schema for its arguments (what the model sees),
an `approval` check (what the user is asked, if anything; `approval_request` gathers the whole
question) and `run`. A tool that cannot do what it was asked raises `ToolError`; the toolbox
turns that, and any other exception, into an error *result* the model reads. Tool failures never
end a turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from iota.errors import ToolError
from iota.providers.base import ToolSpec


class ToolResult(NamedTuple):
    content: str
    is_error: bool = False
    # What the person sees in the transcript when it differs from what the model reads
    # (the diff of an edit, the whole memory line written). None shows `content`.
    display: str | None = None
    # More for the person, shown only when the transcript is expanded (Ctrl+O): a helper's whole
    # conversation under the report its caller's model reads.
    more: str | None = None


@dataclass(frozen=True)
class ApprovalRequest:
    """What the person is asked before a gated call runs: `<label> wants to <action> — allow?`,
    with `detail` (the whole of what a yes approves) shown in full before the choice."""

    tool_name: str
    label: str                      # `edit_file src/a.py`, `shell make test`
    detail: str = ""
    action: str = "modify files"
    # What "Allow for this session" allows from then on: None for every call of the tool (the
    # reference's rule), else a key naming this call alone (the shell's exact command).
    grant: str | None = None
    # What a run that cannot ask answers instead, when the usual refusal's advice would be wrong.
    refusal: str = ""
    # Asked every time, whatever the auto_* settings: no "Allow for this session" (a schedule's
    # create and delete).
    ask_every_time: bool = False
    # What "Allow for this session" covers, in the words its option shows ("" for the default:
    # every call of the tool), so no one expects more of it than it gives.
    covers: str = ""
    # A change to the project's files (edit_file, write_file): what the `auto-edit` mode lets
    # land without asking.
    edits_files: bool = False

    @property
    def question(self) -> str:
        return f"{self.label} wants to {self.action}"

    @property
    def session_grant(self) -> str:
        """`every edit_file call`, `exactly this command in this directory`."""
        return self.covers or f"every {self.tool_name} call"


class Tool:
    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    # Readers may run side by side with their neighbours; writers run one at a time.
    parallel: bool = False
    # Changes nothing outside the chat (reads files, searches, asks the person): what the `plan`
    # mode still lets the model call. Off unless a tool says so: a tool not marked is refused there.
    read_only: bool = False
    # How the transcript names the tool when not by `name` (an MCP tool: `server:tool`).
    display_name: str = ""

    def reads_only(self, args: dict[str, Any]) -> bool:
        """Whether this call changes nothing (what plan mode lets through): `read_only`, unless a
        tool with several actions says otherwise for one of them."""
        return self.read_only

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def approval(self, args: dict[str, Any]) -> str | None:
        """The label to ask about (`edit_file src/a.py`) when this call needs a yes, else None."""
        return None

    def preflight(self, args: dict[str, Any]) -> None:
        """Every check of this call that needs no one (the path, the file's existence and size,
        read before edit): raise ToolError when the call would be refused. It runs before the
        approval question, so a call that would be refused is refused without asking; `run`
        checks again all the same, since the file may change while the person decides."""

    def approval_detail(self, args: dict[str, Any]) -> str:
        """The whole of what a yes approves, shown before the person decides: the full command
        line, the diff of an edit, the content of a new file. "" when the label says it all."""
        return ""

    def approval_request(self, args: dict[str, Any]) -> ApprovalRequest | None:
        """The whole question when this call needs a yes, else None."""
        label = self.approval(args)
        if label is None:
            return None
        return ApprovalRequest(self.name, label, self.approval_detail(args))

    def target(self, args: dict[str, Any]) -> str:
        """A short description of what the call acts on, for the transcript."""
        return ""

    async def run(self, args: dict[str, Any]) -> ToolResult:
        raise NotImplementedError


DECLINED = "The user declined this call."


def denied_with_reason(reason: str) -> str:
    """What the model reads of a call the person denied and said why ("Deny and say why")."""
    return f"denied by the person: {reason}"


def headless_refusal(tool_name: str) -> str:
    return (
        f"{tool_name} was not executed: it requires interactive approval, which is unavailable in this "
        "non-interactive run. Set the toolset's auto-approve option (tools.code.auto_write / "
        "tools.shell.auto_run) to permit it here."
    )


class Toolbox:
    """The tools of one chat, by name, in the order the model is told about them."""

    def __init__(self, tools: list[Tool] | None = None):
        self._tools: dict[str, Tool] = {}
        self.jobs = None  # the shell's background job table, when the chat has one
        self.helpers = None  # the background helpers (iota.delegation.BackgroundHelpers), when it has them
        self.mcp = None  # the MCP servers' hub (iota.mcp.hub.McpHub), when the chat has servers
        self.deferral = None  # what hides deferred servers' tools (iota.mcp.defer.Deferral), if any
        for tool in tools or []:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __iter__(self):
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def specs(self) -> list[ToolSpec]:
        """What the model is sent: every tool, unless a deferral hides some."""
        if self.deferral is not None:
            return self.deferral.specs()
        return [tool.spec() for tool in self._tools.values()]

    def take_mounts(self) -> list[ToolSpec]:
        """Schemas loaded since the last call that go into the history rather than the tools
        array (iota.mcp.defer, `system-tools` mode); usually none."""
        return self.deferral.take_mounts() if self.deferral is not None else []

    def preflight(self, name: str, args: dict[str, Any]) -> ToolResult | None:
        """The error result of a call its tool would refuse (`Tool.preflight`), else None."""
        tool = self._tools.get(name)
        try:
            if tool is not None:
                tool.preflight(args)
        except ToolError as error:
            return ToolResult(str(error), is_error=True)
        except Exception:  # noqa: BLE001 — a check's own bug: the call is asked about and run, as before
            return None
        return None

    async def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Run a tool; every failure comes back as an error result."""
        if self.deferral is not None:
            self.deferral.note_call(name)  # a hidden tool called by name loads
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(f"unknown tool: {name}", is_error=True)
        try:
            return await tool.run(args)
        except ToolError as error:
            return ToolResult(str(error), is_error=True)
        except Exception as error:  # a tool's own bug is still only a result: the turn goes on
            return ToolResult(f"{name} failed: {error}", is_error=True)
