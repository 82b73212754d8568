"""The agent loop (iota.agent) against the fake model server: send, run the tools, send again,
approvals, and the streamed text's flushes to the log (what Ctrl+C and Esc leave behind is in
test_agent_cancel.py, which uses this module's tools and helpers).

The tools are small in-test `Tool`s whose `run` waits on trio Events the test controls, so every
ordering is forced by the test rather than by timing. The provider is the real OpenAI-dialect
one, talking HTTP to the fake server on 127.0.0.1 (so these tests run on trio's real clock; the
`fail_after` bounds only keep a broken loop from hanging the suite).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
import trio

from iota import agent
from iota.agent import Approvals, Decision, Turn, run_turn
from iota.messages import ASSISTANT, Message, PARTIAL, TOOL, USER
from iota.providers import make_provider
from iota.providers.base import Request
from iota.tools.base import ApprovalRequest, Tool, ToolResult, Toolbox
from iota.errors import ToolError
from tests.support.fake_model import Gate, fake_model, tool_call  # noqa: F401  (the fixture)

HEADLESS_REFUSAL = (
    "write was not executed: it requires interactive approval, which is unavailable in this non-interactive run. "
    "Set the toolset's auto-approve option (tools.code.auto_write / tools.shell.auto_run) to permit it here."
)
DECLINED = "The user declined this call."
BOUND = 10  # seconds: a bound on a hang, never a measurement


@pytest.fixture
async def provider(fake_model):
    provider = make_provider("fake", "openai", "k", fake_model.openai_url)
    yield provider
    await provider.aclose()


# ---- in-test tools ------------------------------------------------------------------------------


class Echo(Tool):
    """A writer (not parallel) that needs no approval: answers `echo: <text>`."""

    name = "echo"

    def __init__(self) -> None:
        self.ran: list[dict[str, Any]] = []

    async def run(self, args: dict[str, Any]) -> ToolResult:
        self.ran.append(args)
        return ToolResult(f"echo: {args.get('text', '')}")


class Rendezvous(Tool):
    """A reader: call `a` and call `b` each wait for the other to have started, so they can only
    finish when run side by side; `a` also waits for `b` to finish, so `b` finishes first."""

    name = "meet"
    parallel = True

    def __init__(self) -> None:
        self.started = {"a": trio.Event(), "b": trio.Event()}
        self.finished: list[str] = []

    async def run(self, args: dict[str, Any]) -> ToolResult:
        me = args["who"]
        other = "b" if me == "a" else "a"
        self.started[me].set()
        await self.started[other].wait()
        if me == "a":
            while "b" not in self.finished:
                await trio.sleep(0)
        self.finished.append(me)
        return ToolResult(f"met by {me}")


class Raises(Tool):
    name = "raises"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def run(self, args: dict[str, Any]) -> ToolResult:
        raise self.error


class Write(Tool):
    """A gated writer: asks `write <path>`."""

    name = "write"

    def __init__(self) -> None:
        self.written: list[str] = []

    def approval(self, args: dict[str, Any]) -> str | None:
        return f"write {args['path']}"

    def target(self, args: dict[str, Any]) -> str:
        return args["path"]

    async def run(self, args: dict[str, Any]) -> ToolResult:
        self.written.append(args["path"])
        return ToolResult(f"wrote {args['path']}")


class Recorder:
    """A TurnObserver that remembers what it saw and signals the first text."""

    def __init__(self) -> None:
        self.text = ""
        self.first_text = trio.Event()
        self.events: list[tuple[str, str]] = []

    def on_text(self, text: str) -> None:
        self.text += text
        self.first_text.set()

    def on_tool_start(self, call, target: str) -> None:
        self.events.append(("start", call.id))

    def on_tool_end(self, call, result: ToolResult) -> None:
        self.events.append(("end", call.id))


def request(toolbox: Toolbox, text: str = "hi") -> Request:
    return Request(model="fake-model", system="You test.", messages=[Message(USER, content=text)],
                   tools=toolbox.specs())


async def run(provider, toolbox: Toolbox, approvals: Approvals | None = None, observer=None,
              max_turns: int = 0) -> Turn:
    turn = Turn()
    with trio.fail_after(BOUND):
        await run_turn(turn, provider, request(toolbox), toolbox, approvals or Approvals(None),
                       **({"observer": observer} if observer else {}), max_turns=max_turns)
    return turn


def sent(model, n: int) -> list[dict]:
    """The messages of the n-th request (0-based) the fake model received, without the system."""
    return [m for m in model.requests[n].body["messages"] if m["role"] != "system"]


def tool_results(model, n: int) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in sent(model, n) if m["role"] == "tool"]


# ---- the loop -----------------------------------------------------------------------------------


async def test_the_loop_sends_again_after_tool_calls_and_stops_when_the_model_stops(fake_model, provider):
    echo = Echo()
    toolbox = Toolbox([echo])
    fake_model.reply("Let me echo.", tool_calls=[tool_call("echo", {"text": "one"}, id="c1")])
    fake_model.reply(tool_calls=[tool_call("echo", {"text": "two"}, id="c2")])
    fake_model.reply("All done.")

    turn = await run(provider, toolbox)

    assert len(fake_model.requests) == 3
    assert turn.model_calls == 3
    assert echo.ran == [{"text": "one"}, {"text": "two"}]
    assert [(m.role, m.content) for m in turn.messages] == [
        (ASSISTANT, "Let me echo."), (TOOL, "echo: one"), (ASSISTANT, ""), (TOOL, "echo: two"),
        (ASSISTANT, "All done."),
    ]
    assert turn.reply == "All done."
    assert not turn.interrupted
    # each request carries the whole turn so far, after the user's message
    assert [m["role"] for m in sent(fake_model, 2)] == ["user", "assistant", "tool", "assistant", "tool"]
    assert tool_results(fake_model, 2) == [("c1", "echo: one"), ("c2", "echo: two")]
    assert turn.messages[-1].usage is not None


async def test_parallel_readers_run_side_by_side_and_results_stay_in_call_order(fake_model, provider):
    meet = Rendezvous()
    toolbox = Toolbox([meet])
    fake_model.reply(tool_calls=[tool_call("meet", {"who": "a"}, id="ca"), tool_call("meet", {"who": "b"}, id="cb")])
    fake_model.reply("Met.")
    observer = Recorder()

    turn = await run(provider, toolbox, observer=observer)  # run one after the other, `a` would wait forever

    assert meet.finished == ["b", "a"]
    assert [(m.tool_call_id, m.content) for m in turn.messages if m.role == TOOL] == [
        ("ca", "met by a"), ("cb", "met by b")]
    assert tool_results(fake_model, 1) == [("ca", "met by a"), ("cb", "met by b")]
    assert observer.events.index(("end", "cb")) < observer.events.index(("end", "ca"))


async def test_a_gated_call_between_readers_runs_alone(fake_model, provider):
    """Readers either side of a writer are not batched across it: the writer runs after the reader
    before it has finished and before the reader after it starts."""
    order: list[str] = []

    class Reader(Tool):
        name = "read"
        parallel = True

        async def run(self, args):
            order.append(f"start {args['n']}")
            await trio.sleep(0)
            order.append(f"end {args['n']}")
            return ToolResult(f"read {args['n']}")

    class Writer(Echo):
        async def run(self, args):
            order.append("write")
            return await super().run(args)

    toolbox = Toolbox([Reader(), Writer()])
    fake_model.reply(tool_calls=[tool_call("read", {"n": 1}, id="r1"), tool_call("echo", {"text": "x"}, id="w"),
                                 tool_call("read", {"n": 2}, id="r2")])
    fake_model.reply("ok")
    await run(provider, toolbox)
    assert order == ["start 1", "end 1", "write", "start 2", "end 2"]
    assert [call_id for call_id, _ in tool_results(fake_model, 1)] == ["r1", "w", "r2"]


async def test_a_tool_error_becomes_an_error_result_and_the_turn_goes_on(fake_model, provider):
    toolbox = Toolbox([Raises(ToolError("path is outside the project root"))])
    fake_model.reply(tool_calls=[tool_call("raises", id="c1")])
    fake_model.reply("I see, it failed.")

    turn = await run(provider, toolbox)

    result = turn.messages[1]
    assert (result.role, result.content, result.is_error) == (TOOL, "path is outside the project root", True)
    assert tool_results(fake_model, 1) == [("c1", "path is outside the project root")]
    assert turn.reply == "I see, it failed."


async def test_an_os_error_in_a_tool_becomes_an_error_result(fake_model, provider):
    toolbox = Toolbox([Raises(FileNotFoundError(2, "No such file or directory"))])
    fake_model.reply(tool_calls=[tool_call("raises", id="c1")])
    fake_model.reply("ok")

    turn = await run(provider, toolbox)

    assert turn.messages[1].is_error
    assert turn.messages[1].content == "raises failed: [Errno 2] No such file or directory"
    assert turn.reply == "ok"


async def test_any_exception_in_a_tool_becomes_an_error_result(fake_model, provider):
    toolbox = Toolbox([Raises(RuntimeError("tool bug"))])
    fake_model.reply(tool_calls=[tool_call("raises", id="c1")])
    fake_model.reply("ok")

    turn = await run(provider, toolbox)

    assert turn.messages[1].is_error
    assert "tool bug" in turn.messages[1].content
    assert turn.reply == "ok"


async def test_an_unknown_tool_is_an_error_result(fake_model, provider):
    fake_model.reply(tool_calls=[tool_call("teleport", {"to": "mars"}, id="c1")])
    fake_model.reply("No such tool, then.")

    turn = await run(provider, Toolbox([Echo()]))

    result = turn.messages[1]
    assert (result.content, result.is_error, result.tool_call_name) == ("unknown tool: teleport", True, "teleport")
    assert tool_results(fake_model, 1) == [("c1", "unknown tool: teleport")]
    assert turn.reply == "No such tool, then."


async def test_max_turns_stops_after_that_many_model_calls(fake_model, provider):
    echo = Echo()
    for n in range(2):
        fake_model.reply(tool_calls=[tool_call("echo", {"text": str(n)}, id=f"c{n}")])
    # a third reply is never asked for: the fake would fail the test on an unscripted request

    turn = await run(provider, Toolbox([echo]), max_turns=2)

    assert turn.model_calls == 2
    assert len(fake_model.requests) == 2
    assert echo.ran == [{"text": "0"}, {"text": "1"}]


# ---- approvals ----------------------------------------------------------------------------------


class Asker:
    def __init__(self, *answers: Decision) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, str]] = []

    async def __call__(self, request: ApprovalRequest) -> Decision:
        self.asked.append((request.tool_name, request.label))
        return self.answers.pop(0)


def two_writes(model) -> None:
    model.reply(tool_calls=[tool_call("write", {"path": "a.txt"}, id="w1"),
                            tool_call("write", {"path": "b.txt"}, id="w2")])
    model.reply("Written.")


async def test_allow_once_asks_again_the_next_time(fake_model, provider):
    write = Write()
    asker = Asker(Decision.ALLOW_ONCE, Decision.ALLOW_ONCE)
    two_writes(fake_model)

    await run(provider, Toolbox([write]), Approvals(asker))

    assert asker.asked == [("write", "write a.txt"), ("write", "write b.txt")]
    assert write.written == ["a.txt", "b.txt"]
    assert tool_results(fake_model, 1) == [("w1", "wrote a.txt"), ("w2", "wrote b.txt")]


async def test_allow_for_this_session_does_not_ask_again(fake_model, provider):
    write = Write()
    asker = Asker(Decision.ALLOW_SESSION)
    approvals = Approvals(asker)
    two_writes(fake_model)
    fake_model.reply(tool_calls=[tool_call("write", {"path": "c.txt"}, id="w3")])
    fake_model.reply("Again.")

    await run(provider, Toolbox([write]), approvals)
    await run(provider, Toolbox([write]), approvals)  # the next turn: still granted

    assert asker.asked == [("write", "write a.txt")]
    assert write.written == ["a.txt", "b.txt", "c.txt"]


async def test_deny_answers_that_the_user_declined(fake_model, provider):
    write = Write()
    asker = Asker(Decision.DENY, Decision.ALLOW_ONCE)
    two_writes(fake_model)

    turn = await run(provider, Toolbox([write]), Approvals(asker))

    assert write.written == ["b.txt"]
    denied = turn.messages[1]
    assert (denied.content, denied.is_error) == (DECLINED, True)
    assert tool_results(fake_model, 1) == [("w1", DECLINED), ("w2", "wrote b.txt")]
    assert turn.reply == "Written."


async def test_headless_refuses_every_gated_call_with_the_exact_text(fake_model, provider):
    write = Write()
    echo = Echo()
    fake_model.reply(tool_calls=[tool_call("write", {"path": "a.txt"}, id="w1"),
                                 tool_call("echo", {"text": "ungated"}, id="e1")])
    fake_model.reply("Refused, then.")

    turn = await run(provider, Toolbox([write, echo]), Approvals(None))

    assert write.written == []
    assert echo.ran == [{"text": "ungated"}]
    refused = turn.messages[1]
    assert (refused.content, refused.is_error) == (HEADLESS_REFUSAL, True)
    assert tool_results(fake_model, 1) == [("w1", HEADLESS_REFUSAL), ("e1", "echo: ungated")]


# ---- the streamed text on its way to the log -----------------------------------------------------


class Records:
    """A TurnRecorder that keeps what it is given."""

    def __init__(self) -> None:
        self.records: list[Message] = []

    async def record(self, messages: list[Message], *, durable: bool = True) -> None:
        self.records += messages


async def test_each_flush_of_a_streaming_reply_holds_only_what_came_since_the_last(fake_model, provider, monkeypatch):
    monkeypatch.setattr(agent, "PARTIAL_FLUSH_SECONDS", 0.01)
    gate = Gate()
    fake_model.reply("one two three four", pieces=4, gate=gate)  # "one t", "wo th", "ree f", "our"
    records, turn, toolbox = Records(), Turn(id="t1"), Toolbox()

    def flushed() -> list[str]:
        return [record.content for record in records.records if record.role == PARTIAL]

    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(run_turn, turn, provider, request(toolbox), toolbox, Approvals(None),
                                       recorder=records))
            for shown in ("one t", "one two th", "one two three f"):
                gate.release(1)
                while "".join(flushed()) != shown:
                    await trio.sleep(0.005)
                assert turn.partial == shown
            gate.open()
    assert flushed() in (["one t", "wo th", "ree f"], ["one t", "wo th", "ree f", "our"])  # the last, if in time
    assert [(record.role, record.content) for record in records.records[-1:]] == [(ASSISTANT, "one two three four")]
    assert turn.partial == ""
