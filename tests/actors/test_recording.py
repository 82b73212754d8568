"""A chat's turn is on disk as it happens (actors.lane with iota.agent's recorder): the user's
message fsynced before the request is sent, each reply and tool call before a tool acts on it,
each result before the next request, the streamed text about once a second, and a turn that
fails keeps what it did. Runs the real lane against the fake model server, as test_lane does.
"""

from __future__ import annotations

import errno
import json
import os

import trio

from actors.events import ErrorLine, Notice, Status, TurnEnded
from iota.messages import FAILED_NOTICE, PARTIAL, TOOL_STARTED, TURN_END
from iota.sessions.conversation import Conversation
from tests.actors.test_lane import all_records, open_lane, records, user_texts  # noqa: F401  (the fixture)
from tests.support.fake_model import Gate, tool_call

BOUND = 10


def synced_log(session, monkeypatch) -> list[bytes]:
    """Every fsync of the session's log from now on appends what the log then held."""
    seen: list[bytes] = []
    real_fsync = os.fsync

    def fsync(fd):
        real_fsync(fd)
        if os.readlink(f"/proc/self/fd/{fd}") == str(session.dir / "messages.jsonl"):
            seen.append((session.dir / "messages.jsonl").read_bytes())

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


class Watched:
    """The chat's provider, noting at each request what the log had fsynced by then."""

    def __init__(self, provider, synced: list[bytes]):
        self.provider, self.synced = provider, synced
        self.name, self.reports_usage = provider.name, provider.reports_usage
        self.synced_at_request: list[bytes] = []

    async def stream(self, request, on_text):
        self.synced_at_request.append(self.synced[-1] if self.synced else b"")
        return await self.provider.stream(request, on_text)

    async def aclose(self):
        await self.provider.aclose()


async def test_the_users_message_and_each_result_are_fsynced_before_the_next_request(
        open_lane, fake_model, session, project, monkeypatch):
    (project / "a.txt").write_text("alpha\n")
    fake_model.reply("Reading.", tool_calls=[tool_call("read_file", {"path": "a.txt"}, id="r1")])
    fake_model.reply("It says alpha.")
    synced = synced_log(session, monkeypatch)
    async with open_lane(Conversation(session=session), agent="coder") as chat:
        watched = Watched(chat.setup.provider(), synced)
        chat.setup._provider = watched
        chat.submit("what is in a.txt?")
        await chat.until(TurnEnded)
    first, second = watched.synced_at_request
    assert b'"content":"what is in a.txt?"' in first
    assert b'"role":"tool_started","tool_call_id":"r1"' in second and b'"tool_call_id":"r1","tool_call_name":' \
        b'"read_file"' in second
    saved = all_records(session)
    assert [r["role"] for r in saved] == ["user", "assistant", TOOL_STARTED, "tool", "assistant", TURN_END]
    assert len({r["turn"] for r in saved}) == 1 and len(saved[0]["turn"]) == 8
    assert list(saved[0]) == ["role", "content", "turn"]  # the new key goes after the existing ones


async def test_a_tool_runs_only_once_its_call_is_on_disk(open_lane, fake_model, session, project):
    fake_model.reply(tool_calls=[tool_call("list_dir", {"path": "."}, id="l1")])
    fake_model.reply("Listed.")
    seen_by_the_tool: list[list[str]] = []
    async with open_lane(Conversation(session=session), agent="coder") as chat:
        tool = chat.lane.toolbox.get("list_dir")
        run = tool.run

        async def watching_run(args):
            seen_by_the_tool.append([r["role"] for r in all_records(session)])
            return await run(args)

        tool.run = watching_run
        chat.submit("list it")
        await chat.until(TurnEnded)
    assert seen_by_the_tool == [["user", "assistant", TOOL_STARTED]]


async def test_streamed_text_reaches_the_log_about_once_a_second_and_the_reply_supersedes_it(
        open_lane, fake_model, session):
    gate = Gate()
    fake_model.reply("The first part. The second part.", pieces=2, gate=gate)
    gate.release(1)
    async with open_lane(Conversation(session=session)) as chat:
        chat.submit("tell me")
        with trio.fail_after(3):  # one flush interval and then some
            while not any(r["role"] == PARTIAL for r in all_records(session)):
                await trio.sleep(0.05)
        assert [r["content"] for r in all_records(session) if r["role"] == PARTIAL] == ["The first part. "]
        gate.open()
        await chat.until(TurnEnded)
        assert [m.content for m in chat.conversation.messages] == ["tell me", "The first part. The second part."]
    assert [r["content"] for r in records(session)] == ["tell me", "The first part. The second part."]


async def test_a_turn_that_fails_after_its_tools_ran_keeps_them_and_the_next_request_says_so(
        open_lane, fake_model, session, project):
    (project / "a.txt").write_text("alpha\n")
    fake_model.reply("Reading.", tool_calls=[tool_call("read_file", {"path": "a.txt"}, id="r1")])
    fake_model.fail(400, message="the provider gave up")
    fake_model.reply("Sorry about that.")
    async with open_lane(Conversation(session=session), agent="coder") as chat:
        chat.submit("what is in a.txt?")
        events = await chat.until(TurnEnded)
        assert events[-1] == TurnEnded(failed=True)
        error = next(e.text for e in events if isinstance(e, ErrorLine))
        chat.submit("and now?")
        await chat.until(TurnEnded)
    sent = [(m["role"], m.get("content")) for m in fake_model.requests[2].body["messages"] if m["role"] != "system"]
    assert sent == [("user", "what is in a.txt?"), ("assistant", "Reading."), ("tool", "     1\talpha"),
                    ("user", FAILED_NOTICE.format(error=error)), ("user", "and now?")]
    assert [r["role"] for r in records(session)] == ["user", "assistant", "tool", "user", "user", "assistant"]


REAL_WRITE = os.write


def failing_writes(monkeypatch, name: str) -> None:
    real_write = REAL_WRITE

    def write(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(name):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)


def statuses(events) -> list[str]:
    return [e.unsaved for e in events if isinstance(e, Status)]


async def test_on_a_full_disk_what_was_shown_is_kept_in_order_and_nothing_unsaved_is_sent(
        open_lane, fake_model, session, monkeypatch):
    fake_model.reply("first answer")
    fake_model.reply("second answer")
    async with open_lane(Conversation(session=session)) as chat:
        chat.submit("first")
        await chat.until(TurnEnded)
        # meta.json cannot be written: the records are in the log all the same, nothing is lost.
        failing_writes(monkeypatch, "/meta.json.tmp")
        chat.submit("second")
        meta_events = await chat.until(TurnEnded)
        assert [r["content"] for r in records(session)] == ["first", "first answer", "second", "second answer"]
        assert "disk full" in statuses(meta_events)
        # Now the log too: the message is shown and kept, but never sent.
        failing_writes(monkeypatch, "/messages.jsonl")
        chat.submit("third")
        log_events = await chat.until(TurnEnded)
        assert log_events[-1] == TurnEnded(failed=True)
        assert len(fake_model.requests) == 2
        assert [r["content"] for r in records(session)] == ["first", "first answer", "second", "second answer"]
        assert statuses(log_events)[-1] == "disk full"
        monkeypatch.undo()  # room again: the next write brings everything kept, in order, first
        fake_model.reply("fourth answer")
        chat.submit("fourth")
        later = await chat.until(TurnEnded)
        assert statuses(later)[-1] == ""
        assert any(isinstance(e, Notice) and e.text.startswith("Saved again") for e in later)
    errors = [e.text for e in [*meta_events, *log_events] if isinstance(e, ErrorLine)]
    assert errors[0] == (f"Save failed: failed to save session {session.id}: meta.json not updated: No space left on "
                         "device (the messages are in messages.jsonl) — kept in memory and written once a write "
                         "succeeds; the conversation goes on")
    assert sum(text.startswith("Save failed") for text in errors) == 1  # said once for the whole outage
    assert any(text.startswith("not sent: the conversation could not be saved (disk full)") for text in errors)
    contents = [r.get("content") for r in all_records(session) if r["role"] in ("user", "assistant")]
    assert contents[:5] == ["first", "first answer", "second", "second answer", "third"]
    assert contents[-2:] == ["fourth", "fourth answer"]
    sent = [m.get("content") for m in fake_model.requests[2].body["messages"] if m["role"] == "user"]
    assert sent[:3] == ["first", "second", "third"] and sent[-1] == "fourth"
    assert json.loads((session.dir / "meta.json").read_text())["message_count"] == len(records(session))


async def test_what_a_full_disk_kept_is_written_by_the_timer_with_nothing_typed(
        open_lane, fake_model, session, monkeypatch):
    from actors import save_backlog
    monkeypatch.setattr(save_backlog, "RETRY_SAVE_SECONDS", 0.05)
    fake_model.reply("first answer")
    async with open_lane(Conversation(session=session)) as chat:
        failing_writes(monkeypatch, "/messages.jsonl")
        chat.submit("first")
        await chat.until(TurnEnded)
        log = session.dir / "messages.jsonl"
        assert not log.exists() or b"first" not in log.read_bytes()
        monkeypatch.setattr(os, "write", REAL_WRITE)  # room again; nothing is typed
        await chat.until(lambda e: isinstance(e, Notice) and e.text.startswith("Saved again"))
    assert [r["content"] for r in all_records(session) if r["role"] == "user"][0] == "first"
    assert len(fake_model.requests) == 0


async def test_a_context_too_long_after_tools_ran_compacts_and_goes_on_with_the_same_turn(
        open_lane, fake_model, session, project):
    """A bot's way out (lane.recover compacts, then the turn is sent again): the user's message
    is written once, what the turn did before the compaction stays in it, and the log reloads
    into the same view."""
    from actors.compactor import compact_now
    from iota.sessions.bundle import Session
    from tests.iota.sessions.test_repair import assert_both_providers_accept

    (project / "a.txt").write_text("alpha\n")
    fake_model.reply("Hello.")
    fake_model.reply("Reading.", tool_calls=[tool_call("read_file", {"path": "a.txt"}, id="r1")])
    fake_model.context_too_long()
    fake_model.reply("The user said hi; the assistant said hello.")  # the summary
    fake_model.reply("It says alpha.")

    async def recover(lane):
        await compact_now(lane)

    async with open_lane(Conversation(session=session), agent="coder") as chat:
        chat.lane.recover = recover
        chat.submit("hi")
        await chat.until(TurnEnded)
        chat.submit("what is in a.txt?")
        assert (await chat.until(TurnEnded))[-1] == TurnEnded()
        live = [(m.role, m.content) for m in chat.conversation.messages]
    last = [(m["role"], m.get("content")) for m in fake_model.requests[-1].body["messages"] if m["role"] != "system"]
    assert last[0][0] == "user" and last[0][1].endswith("what is in a.txt?")
    assert last[0][1].startswith("[Earlier conversation summary]")
    assert last[1:] == [("assistant", "Reading."), ("tool", "     1\talpha")]
    saved = all_records(session)
    assert [r.get("content") for r in saved].count("what is in a.txt?") == 1
    asked = next(r for r in saved if r.get("content") == "what is in a.txt?")
    assert [r["role"] for r in saved if r.get("turn") == asked["turn"]] == [
        "user", "assistant", TOOL_STARTED, "tool", "assistant", TURN_END]  # one turn, around the compaction
    session.close()
    with Session.open(session.dir) as reopened:
        assert [(m.role, m.content) for m in reopened.view.messages if m.role != "system"] == live
        assert reopened.view.warnings == []
        assert_both_providers_accept(reopened.view.messages)


async def test_save_writes_the_backlog_as_finished_turns(open_lane, fake_model):
    """A `--no-save` chat's turns never had their `turn_end` written: `/save` writes them without
    turn ids, so the next open does not take them for turns cut short."""
    from iota.sessions.bundle import Session

    fake_model.reply("first answer")
    async with open_lane() as chat:
        chat.submit("first")
        await chat.until(TurnEnded)
        chat.command("save")
        with trio.fail_after(BOUND):
            await chat.lane.wait_idle()
            while chat.conversation.session is None:
                await trio.sleep(0.01)
        session = chat.conversation.session
        session.close()
    assert [r for r in all_records(session) if "turn" in r] == []
    with Session.open(session.dir) as reopened:
        assert reopened.view.warnings == [] and reopened.view.closing == []
        assert [m.content for m in reopened.view.messages] == ["first", "first answer"]


async def test_a_stream_cut_mid_reply_keeps_the_message_and_the_partial_reply(open_lane, fake_model, session):
    fake_model.reply("The answer is forty", pieces=2, drop_after=1)
    async with open_lane(Conversation(session=session)) as chat:
        chat.submit("what is the answer?")
        events = await chat.until(TurnEnded)
    assert events[-1] == TurnEnded(failed=True)
    saved = records(session)
    assert [(r["role"], r.get("content"), r.get("interrupted", False)) for r in saved[:2]] == [
        ("user", "what is the answer?", False), ("assistant", "The answer", True)]
    assert saved[2]["notice"] and saved[2]["content"].startswith("The previous turn ended early with an error")
