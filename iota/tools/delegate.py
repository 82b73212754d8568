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
from dataclasses import dataclass, field
from typing import Any

import trio

from iota.bots.journal_entry import group_calls, head_and_tail
from iota.errors import ToolError
from iota.text import format_size
from iota.tools.base import Tool, ToolResult

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


# How the chat runs a helper: (agent name, task) → what it did. Raises ToolError for a call that
# cannot run at all (an agent not on the list).
RunHelper = Callable[[str, str], Awaitable[HelperRun]]
# How the chat starts one in the background: (agent, task, run) → its id. None in a chat that
# cannot deliver a result later (a headless run, a helper's own tools).
StartBackground = Callable[[str, str, RunHelper], str]


class DelegateTool(Tool):
    name = "delegate"
    parallel = True   # helpers of one reply run side by side; each one's own tools still ask
    # It changes nothing itself: in plan mode it runs, and its helpers' own writes and commands are
    # refused by the same mode (iota.agent.Approvals.for_helper).
    read_only = True

    def __init__(self, agents: dict[str, str], run_helper: RunHelper, max_parallel: int,
                 start_background: StartBackground | None = None):
        """`agents`: the helpers this agent may use, name → description (shown to the model)."""
        self.agents = agents
        self.max_parallel = max_parallel
        self._run_helper = run_helper
        self._start_background = start_background
        self._limit = trio.CapacityLimiter(max_parallel)
        listed = "\n".join(f"- {name}: {about}" if about else f"- {name}" for name, about in agents.items())
        self.description = (
            "Hand a task to a helper agent with its own fresh conversation and tools, and get back its final "
            "answer. The helper sees only the task you write: make it self-contained (the goal, the files, "
            "what to report). Several delegate calls in one reply run at the same time. Helpers:\n" + listed)
        self.parameters = {
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": list(agents), "description": "Which helper runs the task."},
                "task": {"type": "string", "description": "The whole task, self-contained."},
                **({"background": {"type": "boolean", "description": (
                    "true: return at once with an id; the helper's result comes to the conversation as a "
                    "notice when it ends. Default false: wait for its answer.")}} if start_background else {}),
            },
            "required": ["agent", "task"],
        }

    def target(self, args: dict[str, Any]) -> str:
        return str(args.get("agent", ""))

    def preflight(self, args: dict[str, Any]) -> None:
        agent, task = args.get("agent"), args.get("task")
        if agent not in self.agents:
            raise ToolError(f"unknown helper {agent!r}: use one of {', '.join(self.agents) or 'none'}")
        if not isinstance(task, str) or not task.strip():
            raise ToolError("task is empty: write the whole task for the helper")

    async def run(self, args: dict[str, Any]) -> ToolResult:
        self.preflight(args)
        if args.get("background") is True:
            if self._start_background is None:
                raise ToolError("background helpers need an interactive chat to deliver their result: "
                                "call delegate without background")
            work = self._start_background(args["agent"], args["task"], self._limited)
            return ToolResult(f"helper {work} ({args['agent']}) started in the background; its result comes "
                              "to this conversation as a notice when it ends. Do not start the same task again.")
        done = await self._limited(args["agent"], args["task"])
        return ToolResult(report(done), is_error=bool(done.failure))

    async def _limited(self, agent: str, task: str) -> HelperRun:
        """Run a helper once one of the `max_parallel` places is free."""
        async with self._limit:
            return await self._run_helper(agent, task)


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
