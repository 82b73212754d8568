"""Repairing a damaged session log (iota.sessions.repair, through Session.open).

Every log here is written by the real agent loop (iota.agent.run_turn against the fake model
server, recording into a real Session as the chat does), then damaged the way it breaks: cut
off where a `kill -9` would leave it, a line in the middle overwritten, meta.json lost or cut
short. Each test then opens it and checks the view the next request would carry against the
fake model's strictness, which is the real APIs' (tests.support.fake_model.conversation_error),
for both wire dialects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from iota.agent import Approvals, Turn, run_turn
from iota.messages import ASSISTANT, PARTIAL, SYSTEM, TOOL, TOOL_STARTED, TURN_END, USER, Message
from iota.paths import bots_dir, sessions_dir
from iota.providers import anthropic, make_provider, openai
from iota.providers.base import Request
from iota.sessions.bundle import Session, new_turn_id
from iota.sessions.repair import CRASH_NOT_STARTED_RESULT, CRASH_STARTED_RESULT, INTERRUPTED_RESULT, LOST_RESULT
from iota.tools.base import Tool, ToolResult, Toolbox
from tests.support.api_rules import conversation_error
from tests.support.fake_model import Gate, fake_model, tool_call  # noqa: F401  (the fixture)

BOUND = 10


class Note(Tool):
    """A writer that needs no approval."""

    name = "note"

    async def run(self, args) -> ToolResult:
        return ToolResult(f"noted {args.get('text', '')}")


class SessionRecorder:
    """Records into the session as the chat's lane does: durable records without a meta rewrite."""

    def __init__(self, session: Session):
        self.session = session

    async def record(self, messages, *, durable: bool = True) -> None:
        self.session.append(messages, durable=durable, meta=False)


async def real_turn(session: Session, provider, text: str) -> Turn:
    """One turn as the chat runs it: the user's message first, the loop's records as they come,
    `turn_end` last."""
    turn = Turn(id=new_turn_id())
    user = Message(USER, text, turn=turn.id)
    session.append([user], meta=False)
    history = [m for m in session.view.messages if m.role != SYSTEM]
    toolbox = Toolbox([Note()])
    request = Request(model="fake-model", system="You test.", messages=history + [user], tools=toolbox.specs())
    with trio.fail_after(BOUND):
        await run_turn(turn, provider, request, toolbox, Approvals(None), recorder=SessionRecorder(session))
    session.append([Message(TURN_END, turn=turn.id)])
    session.view.messages += [user, *turn.messages]
    return turn


@pytest.fixture
async def provider(fake_model):
    provider = make_provider("fake", "openai", "k", fake_model.openai_url)
    yield provider
    await provider.aclose()


@pytest.fixture
async def real_log(fake_model, provider):
    """A log of two turns, the second with two tool calls: `(session dir, its records)`."""
    fake_model.reply("Hello.")
    fake_model.reply("Noting both.", tool_calls=[tool_call("note", {"text": "a"}, id="c1"),
                                                  tool_call("note", {"text": "b"}, id="c2")])
    fake_model.reply("Both noted.")
    with Session.new(sessions_dir(), provider="fake", model="fake-model") as session:
        await real_turn(session, provider, "hi")
        await real_turn(session, provider, "note a and b")
    return session.dir


def records(bundle: Path) -> list[dict]:
    log = bundle / "messages.jsonl"
    return [json.loads(line) for line in log.read_bytes().splitlines()] if log.exists() else []


def cut_after(bundle: Path, matches) -> None:
    """Truncate the log right after the first record `matches` accepts: where a kill -9 between
    that write and the next leaves it."""
    log = bundle / "messages.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if matches(json.loads(line)))
    log.write_bytes(b"".join(lines[: at + 1]))


def overwrite(bundle: Path, matches) -> None:
    """Overwrite the first record `matches` accepts with garbage of the same length: a damaged
    block in the middle of the file."""
    log = bundle / "messages.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if matches(json.loads(line)))
    lines[at] = b"\xff" * (len(lines[at]) - 1) + b"\n"
    log.write_bytes(b"".join(lines))


def role(name: str, **keys):
    return lambda record: record["role"] == name and all(record.get(k) == v for k, v in keys.items())


def assert_both_providers_accept(view: list[Message]) -> None:
    """The next request (the view plus a new message) passes the real APIs' checks, as each
    provider puts it on the wire."""
    messages = [m for m in view if m.role != SYSTEM] + [Message(USER, "and now?")]
    for dialect, convert in (("anthropic", anthropic.wire_messages), ("openai", openai.wire_messages)):
        assert conversation_error(dialect, {"messages": [wire for _, wire in convert(messages)]}) is None


def opened(bundle: Path) -> Session:
    session = Session.open(bundle)
    session.close()
    return session


# ---- a turn cut short by kill -9 -------------------------------------------------------------------


async def test_a_call_that_had_started_is_answered_as_may_have_run_and_the_repair_is_appended_once(real_log):
    cut_after(real_log, role(TOOL_STARTED, tool_call_id="c2"))
    session = opened(real_log)
    view = [(m.role, m.content, m.tool_call_id) for m in session.view.messages]
    assert view[-3:-1] == [(TOOL, "noted a", "c1"), (TOOL, CRASH_STARTED_RESULT, "c2")]
    notice = session.view.messages[-1]
    assert notice.notice and notice.content.startswith("iota stopped during the last turn (killed or crashed)")
    assert "1 tool call without a result was answered as interrupted (1 had started and may have run)" in notice.content
    assert_both_providers_accept(session.view.messages)
    after = records(real_log)
    assert [r["role"] for r in after[-3:]] == [TOOL, USER, TURN_END]
    assert len({r.get("turn") for r in after[-6:]}) == 1  # the repair is part of the turn it closes
    assert opened(real_log).view.warnings == [] and records(real_log) == after  # repaired once


async def test_a_call_that_had_not_started_is_answered_as_not_run(real_log):
    cut_after(real_log, role(TOOL, tool_call_id="c1"))
    session = opened(real_log)
    results = [(m.tool_call_id, m.content) for m in session.view.messages if m.role == TOOL]
    assert results[-1] == ("c2", CRASH_NOT_STARTED_RESULT)
    assert_both_providers_accept(session.view.messages)


async def test_a_reply_cut_mid_stream_keeps_its_flushed_text_once_marked_interrupted(fake_model, provider):
    gate = Gate()
    fake_model.reply("First half. Second half.", pieces=2, gate=gate)
    gate.release(1)
    with Session.new(sessions_dir(), provider="fake", model="fake-model") as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(real_turn, session, provider, "tell me")
            with trio.fail_after(BOUND):  # the first half is flushed within about a second
                while not any(r["role"] == PARTIAL for r in records(session.dir)):
                    await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
    assert [r.get("content") for r in records(session.dir) if r["role"] == PARTIAL] == ["First half. "]
    reopened = opened(session.dir)
    assert [(m.role, m.content, m.interrupted) for m in reopened.view.messages[:2]] == [
        (USER, "tell me", False), (ASSISTANT, "First half. ", True)]
    assert "its partial reply was kept, marked interrupted" in reopened.view.messages[2].content
    assert_both_providers_accept(reopened.view.messages)


async def test_a_finished_reply_supersedes_its_partial_records(fake_model, provider):
    gate = Gate()
    fake_model.reply("First half. Second half.", pieces=2, gate=gate)
    gate.release(1)
    with Session.new(sessions_dir(), provider="fake", model="fake-model") as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(real_turn, session, provider, "tell me")
            with trio.fail_after(BOUND):
                while not any(r["role"] == PARTIAL for r in records(session.dir)):
                    await trio.sleep(0.05)
            gate.open()
    reopened = opened(session.dir)
    assert [(m.role, m.content) for m in reopened.view.messages] == [(USER, "tell me"),
                                                                     (ASSISTANT, "First half. Second half.")]
    assert reopened.view.warnings == []


async def test_a_turn_killed_before_any_reply_is_closed_and_the_next_message_is_accepted(real_log):
    cut_after(real_log, role(USER, content="note a and b"))
    session = opened(real_log)
    assert session.view.messages[-1].content.endswith("no reply had arrived")
    # user, notice, and (next) user: merged on the Anthropic wire, taken as they are by OpenAI
    assert_both_providers_accept(session.view.messages)


async def test_the_message_count_is_recounted_after_a_kill(real_log):
    cut_after(real_log, role(TOOL, tool_call_id="c2"))
    meta = json.loads((real_log / "meta.json").read_text())
    meta["message_count"] = 2  # as the end of the first turn left it: meta.json is rewritten at a turn's end
    (real_log / "meta.json").write_text(json.dumps(meta))
    session = opened(real_log)
    written = sum(r["role"] in (USER, ASSISTANT, TOOL) for r in records(real_log))
    assert json.loads((real_log / "meta.json").read_text())["message_count"] == written == 7
    assert session.meta["updated_at"] == meta["updated_at"]  # a repair is not activity


# ---- damage in the middle ----------------------------------------------------------------------------


async def test_a_lost_tool_result_gets_a_synthetic_one_and_the_log_is_usable_again(real_log):
    """The issue's dead bot: one corrupt tool result in the middle, then every request was
    refused with `tool_use ids were found without tool_result blocks`."""
    overwrite(real_log, role(TOOL, tool_call_id="c1"))
    session = opened(real_log)
    results = [(m.tool_call_id, m.content) for m in session.view.messages if m.role == TOOL]
    assert results == [("c1", LOST_RESULT), ("c2", "noted b")]
    assert "messages.jsonl: 1 tool call had no result in the log; it was answered as lost" in session.view.warnings
    assert_both_providers_accept(session.view.messages)


async def test_results_whose_call_was_lost_are_dropped(real_log):
    overwrite(real_log, role(ASSISTANT, content="Noting both."))
    session = opened(real_log)
    assert not any(m.role == TOOL for m in session.view.messages)
    assert "messages.jsonl: dropped 2 tool results that answered no call" in session.view.warnings
    assert_both_providers_accept(session.view.messages)


async def test_a_result_written_twice_or_out_of_order_is_put_right(real_log):
    log = real_log / "messages.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    c1 = next(i for i, line in enumerate(lines) if b'"tool_call_id":"c1"' in line and b'"role":"tool"' in line)
    c2 = next(i for i, line in enumerate(lines) if b'"tool_call_id":"c2"' in line and b'"role":"tool"' in line)
    lines[c1], lines[c2] = lines[c2], lines[c1]  # side by side calls finish in any order
    lines.insert(c2 + 1, lines[c2])
    log.write_bytes(b"".join(lines))
    session = opened(real_log)
    assert [m.tool_call_id for m in session.view.messages if m.role == TOOL] == ["c1", "c2"]
    assert session.view.warnings == ["messages.jsonl: dropped 1 tool result that answered no call"]
    assert_both_providers_accept(session.view.messages)


async def test_an_unfinished_turn_in_the_middle_is_closed_in_the_view(real_log, fake_model, provider):
    """A turn whose closing could not be appended (the disk was full at that open) and was
    followed by more turns."""
    cut_after(real_log, role(TOOL_STARTED, tool_call_id="c2"))
    fake_model.reply("Later.")
    with Session.new(sessions_dir(), provider="fake", model="fake-model") as later:
        await real_turn(later, provider, "later")
    with open(real_log / "messages.jsonl", "ab") as log:
        log.write((later.dir / "messages.jsonl").read_bytes())
    session = opened(real_log)
    assert "messages.jsonl: closed 1 unfinished turn in the middle of the log" in session.view.warnings
    assert (TOOL, CRASH_STARTED_RESULT) in [(m.role, m.content) for m in session.view.messages]
    assert session.view.messages[-1].content == "Later."
    assert_both_providers_accept(session.view.messages)


def test_a_log_from_before_turn_ids_gets_its_trailing_calls_answered_as_interrupted():
    from iota.messages import ToolCall

    with Session.new(sessions_dir(), provider="fake", model="m") as session:
        session.append([Message(USER, "go"), Message(ASSISTANT, tool_calls=[ToolCall("c1", "shell", {})])])
    reopened = opened(session.dir)
    assert reopened.view.messages[-1] == Message(TOOL, INTERRUPTED_RESULT, tool_call_id="c1", tool_call_name="shell",
                                                 is_error=True)
    assert reopened.view.warnings == ["1 tool call left unanswered by the last run was answered as interrupted"]
    assert records(session.dir)[-1]["content"] == INTERRUPTED_RESULT


# ---- meta.json ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage, why", [
    (lambda meta: meta.unlink(), "was missing"),
    (lambda meta: meta.write_bytes(meta.read_bytes()[:40]), "was cut short or is not a JSON object"),
])
async def test_a_lost_or_truncated_meta_json_is_rebuilt_from_the_log(real_log, damage, why):
    damage(real_log / "meta.json")
    session = opened(real_log)
    assert session.view.warnings == [
        f"meta.json {why}; it was rebuilt from messages.jsonl (the title and settings are not in the log)"]
    meta = json.loads((real_log / "meta.json").read_text())
    assert meta["id"] == real_log.name
    assert meta["message_count"] == sum(r["role"] in (USER, ASSISTANT, TOOL) for r in records(real_log))
    assert [m.content for m in session.view.messages][-1] == "Both noted."


def test_a_bots_session_whose_meta_json_was_lost_still_opens_and_a_missing_bundle_is_said():
    from iota.sessions.meta import read_meta
    from tests.iota.bots.test_bot import start

    with start() as first:
        first.session.append([Message(USER, "remember me")])
        bundle = first.session.dir
    (bundle / "meta.json").unlink()
    with start() as again:
        assert again.session.id == first.session.id
        assert [m.content for m in again.session.view.messages] == ["remember me"]
        assert again.session.view.warnings[0].startswith("meta.json was missing; it was rebuilt")
    assert read_meta(bundle)["agent"] == "coder"  # so a lost pointer still finds it
    (bots_dir() / "coder" / "bot.json").unlink()
    with start() as third:
        assert third.session.id == first.session.id
    for path in sorted(bundle.iterdir()):
        path.unlink()
    bundle.rmdir()
    with start() as fresh:
        assert fresh.created and fresh.warnings == [
            f"bot coder: its session {first.session.id} is gone and no session of the bot was found; "
            "a new session starts (memory is kept)"]


async def test_a_turn_killed_just_before_its_end_mark_is_closed_with_nothing_to_add(real_log):
    cut_after(real_log, role(ASSISTANT, content="Both noted."))
    session = opened(real_log)
    assert session.view.messages[-1].content.endswith(": everything it did was already on disk")
    assert [m.content for m in session.view.messages if m.role == TOOL] == ["noted a", "noted b"]
    assert_both_providers_accept(session.view.messages)
