"""The `delegate` tool: hand a self-contained task to a narrower agent and read its answer.

    {"agent": "reviewer", "task": "Review src/app.py for …"}

The helper runs in this process as a task of the calling turn (iota.delegation runs it; this
module only speaks to the model), so several calls in one reply run side by side — the tool is a
reader to the agent loop, which puts neighbouring readers in one nursery — while `max_parallel`
bounds how many run at once. Ctrl+C on the turn cancels every helper with it.

The result is the helper's final reply (its beginning and end when long: a conclusion is never
cut off) and one line of what it did: `[reviewer: 3 turns, read_file ×2 (a.py, b.py), grep · 1.2k
tokens · session 20260101-…]`. A helper that failed or was cancelled is an error result the model
reads, with whatever it had said.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from iota.bots.journal_entry import group_calls, head_and_tail
from iota.errors import ToolError
from iota.text import format_size
from iota.tools.base import ApprovalRequest, Tool, ToolResult

# The helper's reply the caller reads: the first HEAD and the last TAIL characters of a longer one.
REPLY_HEAD = 2_000
REPLY_TAIL = 6_000


@dataclass
class HelperRun:
    """What one helper did, as the tool reports it."""

    agent: str
    reply: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)   # (tool, arguments) in order
    turns: int = 0          # model calls
    tokens: int = 0         # input + output over its model calls
    session: str = ""       # its child session's id, "" when not saved
    failure: str = ""       # why it ended early, "" when it finished
    conversation: str = ""  # the whole of it as text, for the person's Ctrl+O (never the model's)


# How the chat runs a helper: (agent name, task) → what it did. Raises ToolError for a call that
# cannot run at all (an agent not on the list).
RunHelper = Callable[[str, str], Awaitable[HelperRun]]
# How the chat starts one in the background: (agent, task, run) → its id. None in a chat that
# cannot deliver a result later (a headless run, a helper's own tools).
StartBackground = Callable[[str, str, RunHelper], str]


class Definitions(Protocol):
    """Where a bot's defined agents are checked and kept (iota.delegation.BotDefinitions)."""

    def check(self, args: dict[str, Any]) -> tuple[str, str, str]:
        """(name, description, the file's whole text) of the agent `args` define; ToolError if refused."""
        ...

    def save(self, name: str, text: str) -> str:
        """Write it (after the person's yes); where it went."""
        ...


DEFINE_REFUSAL = ("delegate define was not executed: an agent you define joins your helpers, so the user "
                  "approves each one, and this non-interactive run cannot ask. Tell the user the agent you would define.")


class DelegateTool(Tool):
    name = "delegate"
    parallel = True   # helpers of one reply run side by side; each one's own tools still ask
    # It changes nothing itself: in plan mode it runs, and its helpers' own writes and commands are
    # refused by the same mode (iota.agent.Approvals.for_helper).
    read_only = True

    def __init__(self, agents: dict[str, str], run_helper: RunHelper, max_parallel: int,
                 start_background: StartBackground | None = None, definitions: Definitions | None = None):
        """`agents`: the helpers this agent may use, name → description (shown to the model).
        `definitions`: a bot's, which lets it define narrower agents (`action: define`)."""
        self.agents = dict(agents)
        self.max_parallel = max_parallel
        self._run_helper = run_helper
        self._start_background = start_background
        self._definitions = definitions
        # The define entries shown to the person, by the call's arguments: the one approved is the
        # one written (a second check would stamp another `created_at`).
        self._shown: dict[str, tuple[str, str, str]] = {}
        self._limit = trio.CapacityLimiter(max_parallel)
        self._describe()

    def _describe(self) -> None:
        """The description and parameters for the helpers known now (a define adds one)."""
        listed = "\n".join(f"- {name}: {about}" if about else f"- {name}" for name, about in self.agents.items())
        self.description = (
            "Hand a task to a helper agent with its own fresh conversation and tools, and get back its final "
            "answer. The helper sees only the task you write: make it self-contained (the goal, the files, "
            "what to report). Several delegate calls in one reply run at the same time. Helpers:\n" + listed)
        properties: dict[str, Any] = {
            "agent": {"type": "string", "enum": list(self.agents), "description": "Which helper runs the task."},
            "task": {"type": "string", "description": "The whole task, self-contained."},
        }
        if self._start_background is not None:
            properties["background"] = {"type": "boolean", "description": (
                "true: return at once with an id; the helper's result comes to the conversation as a "
                "notice when it ends. Default false: wait for its answer.")}
        if self._definitions is not None:
            self.description += DEFINE_HELP
            properties.update(DEFINE_PROPERTIES)
        self.parameters = {"type": "object", "properties": properties,
                           "required": [] if self._definitions is not None else ["agent", "task"]}

    def reads_only(self, args: dict[str, Any]) -> bool:
        return not _defines(args)   # a define writes a file: plan mode refuses it

    def forget(self, name: str) -> None:
        """A defined agent the person removed (`/agents remove`): no longer offered."""
        if self.agents.pop(name, None) is not None:
            self._describe()

    def target(self, args: dict[str, Any]) -> str:
        return f"define {args.get('name', '')}" if _defines(args) else str(args.get("agent", ""))

    def approval(self, args: dict[str, Any]) -> str | None:
        return f"delegate define {args.get('name', '')}" if _defines(args) else None

    def approval_request(self, args: dict[str, Any]) -> ApprovalRequest | None:
        """A define asks every time, whatever auto_* says, with the whole entry shown; a run asks
        nothing (its helper's own calls ask)."""
        if not _defines(args) or self._definitions is None:
            return None
        try:
            checked = self._definitions.check(args)
        except ToolError:
            return None   # refused without asking: the call fails with the reason
        name, _, text = checked
        grant = _key(args)
        self._shown = {grant: checked}   # define calls run one at a time: only the latest can be approved
        return ApprovalRequest(self.name, f"delegate define {name}", text, action=f"define the agent {name}",
                               grant=grant, ask_every_time=True, refusal=DEFINE_REFUSAL)

    def preflight(self, args: dict[str, Any]) -> None:
        if _defines(args):
            if self._definitions is None:
                raise ToolError("define is for bots: this agent cannot define agents")
            self._definitions.check(args)
            return
        agent, task = args.get("agent"), args.get("task")
        if agent not in self.agents:
            raise ToolError(f"unknown helper {agent!r}: use one of {', '.join(self.agents) or 'none'}")
        if not isinstance(task, str) or not task.strip():
            raise ToolError("task is empty: write the whole task for the helper")

    async def run(self, args: dict[str, Any]) -> ToolResult:
        self.preflight(args)
        if _defines(args) and self._definitions is not None:
            # preflight checked it again (still no wider, the name still free); what is written is
            # the text the person read, not a fresh one.
            name, about, text = self._shown.pop(_key(args), None) or self._definitions.check(args)
            where = self._definitions.save(name, text)
            self.agents[name] = about
            self._describe()
            return ToolResult(f"defined the agent {name} ({where}); hand it tasks with "
                              f'{{"agent": "{name}", "task": …}}')
        if args.get("background") is True:
            if self._start_background is None:
                raise ToolError("background helpers need an interactive chat to deliver their result: "
                                "call delegate without background")
            work = self._start_background(args["agent"], args["task"], self._limited)
            return ToolResult(f"helper {work} ({args['agent']}) started in the background; its result comes "
                              "to this conversation as a notice when it ends. Do not start the same task again.")
        done = await self._limited(args["agent"], args["task"])
        return ToolResult(report(done), is_error=bool(done.failure),
                          more=f"── {done.agent}'s conversation ──\n{done.conversation}" if done.conversation else None)

    async def _limited(self, agent: str, task: str) -> HelperRun:
        """Run a helper once one of the `max_parallel` places is free."""
        async with self._limit:
            return await self._run_helper(agent, task)


DEFINE_HELP = (
    "\nYou can also define a new helper for later use with action \"define\" (name, system, tools, model, "
    "description): it never gets more than you have, and the user approves each definition.")
DEFINE_PROPERTIES: dict[str, Any] = {
    "action": {"type": "string", "enum": ["run", "define"], "description": "run (the default) or define."},
    "name": {"type": "string", "description": "define: the new agent's name (lowercase, digits, hyphens)."},
    "system": {"type": "string", "description": "define: its system prompt."},
    "tools": {"type": "object", "description": "define: its toolsets, as in the config, e.g. "
                                               "{\"code\": {\"read_only\": true}}."},
    "model": {"type": "string", "description": "define: its model (default: yours)."},
    "description": {"type": "string", "description": "define: one line on what it is for."},
}


def _defines(args: dict[str, Any]) -> bool:
    return args.get("action") == "define"


def _key(args: dict[str, Any]) -> str:
    """One call's arguments as a string: the grant of its approval, and how its shown entry is found."""
    return json.dumps(args, sort_keys=True, default=str)


def report(done: HelperRun) -> str:
    """The helper's reply (head and tail when long), then the line of what it did."""
    reply = head_and_tail(done.reply, REPLY_HEAD, REPLY_TAIL) if done.reply else "(no reply)"
    if len(done.reply) > REPLY_HEAD + REPLY_TAIL + 3 and done.session:
        reply += f"\n(the reply was cut in the middle; all of it is in session {done.session})"
    did = [f"{done.turns} turn{'s' if done.turns != 1 else ''}"]
    if done.calls:
        did.append(group_calls(done.calls))
    did.append(f"{format_size(done.tokens)} tokens")
    if done.session:
        did.append(f"session {done.session}")
    head = f"{done.agent} {done.failure}: " if done.failure else ""
    return f"{head}{reply}\n[{done.agent}: {' · '.join(did)}]"
