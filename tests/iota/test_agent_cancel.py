"""What Ctrl+C and Esc leave behind in the agent loop (iota.agent), against the fake model server:
Ctrl+C cancels the turn from outside, and every call it leaves unanswered is answered as
interrupted; Esc cancels only the innermost scope (a running tool, or the stream).

The tools, the provider and the helpers are test_agent's: in-test `Tool`s whose `run` waits on
trio Events the test controls, so every ordering is forced by the test rather than by timing,
and the real OpenAI-dialect provider talking HTTP to the fake server (trio's real clock; the
`fail_after` bounds only keep a broken loop from hanging the suite).
"""

from __future__ import annotations

from typing import Any

import trio

from iota.agent import Approvals, Decision, Turn, run_turn
from iota.messages import ASSISTANT, CANCELLED_RESULT, TOOL
from iota.tools.base import ApprovalRequest, Tool, ToolResult, Toolbox
from tests.iota.test_agent import BOUND, Echo, Recorder, Write, provider, request, tool_results  # noqa: F401  (the fixture)
from tests.support.fake_model import Gate, fake_model, tool_call  # noqa: F401  (the fixture)

INTERRUPTED = "interrupted: no result was recorded"


class Block(Tool):
    """Runs until cancelled; `started` is set once it runs."""

    name = "block"

    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = False

    async def run(self, args: dict[str, Any]) -> ToolResult:
        self.started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")


# ---- Ctrl+C: the turn is cancelled from outside -------------------------------------------------


async def test_cancelling_mid_stream_keeps_the_partial_text_as_interrupted(fake_model, provider):
    gate = Gate()
    fake_model.reply("partial answer here", pieces=3, gate=gate)
    gate.release(1)  # only "partial" gets out
    observer = Recorder()
    turn = Turn()
    toolbox = Toolbox()

    with trio.fail_after(BOUND):
        with trio.CancelScope() as ctrl_c:
            async with trio.open_nursery() as nursery:
                async def press_ctrl_c_on_text():
                    await observer.first_text.wait()
                    ctrl_c.cancel()

                nursery.start_soon(press_ctrl_c_on_text)
                await run_turn(turn, provider, request(toolbox), toolbox, Approvals(None), observer)
    assert ctrl_c.cancelled_caught
    assert turn.partial == "partial"
    turn.interrupt()

    assert turn.interrupted
    assert turn.partial == ""
    assert [(m.role, m.content, m.interrupted) for m in turn.messages] == [(ASSISTANT, "partial", True)]
    assert await trio.to_thread.run_sync(fake_model.requests[0].wait_done)
    assert fake_model.requests[0].disconnected  # the stream was really closed


async def test_cancelling_mid_tool_answers_the_unanswered_calls_as_interrupted(fake_model, provider):
    echo, block = Echo(), Block()
    toolbox = Toolbox([echo, block])
    fake_model.reply("Working.", tool_calls=[tool_call("echo", {"text": "first"}, id="c1"),
                                             tool_call("block", id="c2"), tool_call("echo", {"text": "never"}, id="c3")])
    turn = Turn()

    with trio.fail_after(BOUND):
        with trio.CancelScope() as ctrl_c:
            async with trio.open_nursery() as nursery:
                async def press_ctrl_c_when_blocked():
                    await block.started.wait()
                    ctrl_c.cancel()

                nursery.start_soon(press_ctrl_c_when_blocked)
                await run_turn(turn, provider, request(toolbox), toolbox, Approvals(None))
    assert block.cancelled
    turn.interrupt()

    assert echo.ran == [{"text": "first"}]
    assert [(m.role, m.tool_call_id, m.content, m.is_error) for m in turn.messages] == [
        (ASSISTANT, "", "Working.", False),
        (TOOL, "c1", "echo: first", False),
        (TOOL, "c2", INTERRUPTED, True),
        (TOOL, "c3", INTERRUPTED, True),
    ]
    assert turn.messages[0].interrupted is False  # the reply itself was complete
    assert turn.interrupted


async def test_a_reader_that_finished_before_ctrl_c_keeps_its_result(fake_model, provider):
    class Quick(Tool):
        name = "quick"
        parallel = True

        async def run(self, args):
            return ToolResult("quick result")

    class SlowReader(Block):
        name = "slow"
        parallel = True

    slow = SlowReader()
    toolbox = Toolbox([Quick(), slow])
    fake_model.reply(tool_calls=[tool_call("quick", id="q"), tool_call("slow", id="s")])
    observer = Recorder()
    turn = Turn()
    with trio.fail_after(BOUND):
        with trio.CancelScope() as ctrl_c:
            async with trio.open_nursery() as nursery:
                async def press_ctrl_c_when_quick_is_done():
                    await slow.started.wait()
                    while ("end", "q") not in observer.events:
                        await trio.sleep(0)
                    ctrl_c.cancel()

                nursery.start_soon(press_ctrl_c_when_quick_is_done)
                await run_turn(turn, provider, request(toolbox), toolbox, Approvals(None), observer)
    turn.interrupt()
    assert [(m.tool_call_id, m.content) for m in turn.messages if m.role == TOOL] == [
        ("q", "quick result"), ("s", INTERRUPTED)]


async def test_cancelling_while_an_approval_is_asked_answers_the_call_as_interrupted(fake_model, provider):
    asked = trio.Event()

    async def ask_and_wait(request: ApprovalRequest) -> Decision:
        asked.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    write = Write()
    toolbox = Toolbox([write])
    fake_model.reply(tool_calls=[tool_call("write", {"path": "a.txt"}, id="w1")])
    turn = Turn()
    with trio.fail_after(BOUND):
        with trio.CancelScope() as ctrl_c:
            async with trio.open_nursery() as nursery:
                async def press_ctrl_c_when_asked():
                    await asked.wait()
                    ctrl_c.cancel()

                nursery.start_soon(press_ctrl_c_when_asked)
                await run_turn(turn, provider, request(toolbox), toolbox, Approvals(ask_and_wait))
    turn.interrupt()
    assert write.written == []
    assert [(m.role, m.content) for m in turn.messages][1:] == [(TOOL, INTERRUPTED)]


# ---- Esc: only the innermost scope --------------------------------------------------------------


async def test_esc_on_a_running_tool_cancels_that_call_and_the_loop_goes_on(fake_model, provider):
    block = Block()
    toolbox = Toolbox([block])
    fake_model.reply(tool_calls=[tool_call("block", id="c1")])
    fake_model.reply("Cancelled, moving on.")
    turn = Turn()

    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            async def press_esc_when_blocked():
                await block.started.wait()
                turn.cancel_innermost()

            nursery.start_soon(press_esc_when_blocked)
            await run_turn(turn, provider, request(toolbox), toolbox, Approvals(None))

    assert block.cancelled
    assert not turn.interrupted
    result = turn.messages[1]
    assert (result.role, result.content, result.is_error) == (TOOL, CANCELLED_RESULT, True)
    assert CANCELLED_RESULT == "[command cancelled]"
    assert tool_results(fake_model, 1) == [("c1", "[command cancelled]")]
    assert turn.reply == "Cancelled, moving on."
    assert turn.model_calls == 2
    assert not turn.innermost  # nothing left for a later Esc to reach


async def test_esc_on_the_stream_ends_the_turn_interrupted(fake_model, provider):
    gate = Gate()
    fake_model.reply("firstpart+rest", pieces=2, gate=gate)  # pieces "firstpa", "rt+rest"
    gate.release(1)
    observer = Recorder()
    turn = Turn()
    toolbox = Toolbox()

    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            async def press_esc_on_text():
                await observer.first_text.wait()
                turn.cancel_innermost()

            nursery.start_soon(press_esc_on_text)
            await run_turn(turn, provider, request(toolbox), toolbox, Approvals(None), observer)  # returns, no raise

    assert turn.interrupted
    assert turn.model_calls == 0
    assert [(m.role, m.content, m.interrupted) for m in turn.messages] == [(ASSISTANT, "firstpa", True)]
    assert len(fake_model.requests) == 1
    assert await trio.to_thread.run_sync(fake_model.requests[0].wait_done)
    assert fake_model.requests[0].disconnected
