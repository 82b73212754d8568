"""The person's unsent messages kept in the session's queue.json (actors.kept_queue) by the lane:
written before a message is queued, gone once its record is in the log, put back held after a
restart, and never sent twice when iota stopped between the log's record and the file's rewrite."""

from __future__ import annotations

import json

import trio

from actors.events import Choose, Notice, TurnEnded
from actors.lane import Command, Lane
from iota.messages import TURN_END, USER, Message
from iota.sessions.bundle import Session
from iota.sessions.conversation import Conversation
from iota.sessions.queue import QUEUE_NAME, Queued, write_queue
from tests.actors.test_lane import BOUND, all_records, open_lane, user_texts  # noqa: F401  (the fixture)
from tests.support.fake_model import Gate


def on_disk(session: Session) -> list[tuple[str, str]]:
    path = session.dir / QUEUE_NAME
    return [(e["id"], e["text"]) for e in json.loads(path.read_text())["messages"]] if path.exists() else []


def busy_until(release: trio.Event) -> Command:
    async def body(lane: Lane, argument: str) -> None:
        await release.wait()

    return Command("busy", "", body)


async def test_a_typed_message_is_on_disk_before_it_is_queued_and_leaves_once_its_record_is_written(
        open_lane, fake_model, session):  # noqa: F811
    fake_model.reply("Answer.")
    release = trio.Event()
    async with open_lane(Conversation(session=session)) as chat:
        chat.lane.submit(busy_until(release))
        await chat.lane.submit_message("and then this")
        assert chat.lane.inbox.messages() == ("and then this",)
        [(message_id, text)] = on_disk(session)  # a new chat's bundle was written for it
        assert text == "and then this"
        release.set()
        await chat.until(TurnEnded)
    assert on_disk(session) == [] and not (session.dir / QUEUE_NAME).exists()
    sent = [r for r in all_records(session) if r["role"] == USER]
    assert sent == [{"role": "user", "content": "and then this", "turn": message_id}]
    assert user_texts(fake_model, 0) == ["and then this"]


async def test_after_a_restart_unsent_messages_are_held_and_a_written_one_is_not_queued_twice(
        open_lane, fake_model, session):  # noqa: F811
    # iota stopped after writing the record of `k1` and before rewriting queue.json; `k2` waited.
    session.append([Message(USER, "sent before the kill", turn="k1"), Message(TURN_END, turn="k1")])
    write_queue(session.dir, [Queued("k1", "sent before the kill"), Queued("k2", "still waiting")])
    session.close()
    resumed = Session.open(session.dir)
    try:
        async with open_lane(Conversation.from_session(resumed)) as chat:
            notices = [e for e in chat.pending() if isinstance(e, Notice)]
            assert chat.lane.inbox.messages() == ("still waiting",) and chat.lane.inbox.held
            assert notices[-1].text.startswith("1 message you typed before iota stopped was not sent")
            assert on_disk(resumed) == [("k2", "still waiting")]
            await trio.sleep(0.2)
            assert fake_model.requests == []  # held: nothing goes until the person says so
            fake_model.reply("Now.")
            chat.lane.send_queued()
            await chat.until(TurnEnded)
        assert on_disk(resumed) == []
        assert [r["content"] for r in all_records(resumed) if r["role"] == USER] == [
            "sent before the kill", "still waiting"]
        assert user_texts(fake_model, 0) == ["sent before the kill", "still waiting"]
    finally:
        resumed.close()


async def test_a_queued_message_taken_back_or_dropped_leaves_the_file(open_lane, session):  # noqa: F811
    release = trio.Event()
    async with open_lane(Conversation(session=session)) as chat:
        chat.lane.submit(busy_until(release))
        for text in ("one", "two", "three"):
            await chat.lane.submit_message(text)
        assert [text for _, text in on_disk(session)] == ["one", "two", "three"]
        assert chat.lane.take_back_queued() == "three"
        await chat.lane.kept.save()
        assert [text for _, text in on_disk(session)] == ["one", "two"]
        assert chat.lane.drop_queued() == 2
        await chat.lane.kept.save()
        assert on_disk(session) == []
        release.set()


async def test_ctrl_c_on_a_question_before_sending_writes_the_message_as_a_cancelled_turn(
        open_lane, session):  # noqa: F811
    async def offer(lane: Lane, user: Message) -> None:
        await lane.ask("Context 170k / 200k (85%) — compact before sending?", ("Compact now", "Not now"))

    async with open_lane(Conversation(session=session)) as chat:
        chat.lane.before_send.append(offer)
        await chat.lane.submit_message("a long message")
        await chat.until(Choose)
        [(message_id, _)] = on_disk(session)  # asked before sending: still only in the queue file
        assert chat.lane.interrupt() is True
        with trio.fail_after(BOUND):
            await chat.lane.wait_idle()
    assert on_disk(session) == []
    assert all_records(session)[-2:] == [{"role": "user", "content": "a long message", "turn": message_id},
                                         {"role": "turn_end", "turn": message_id, "outcome": "cancelled",
                                          "at": all_records(session)[-1]["at"]}]
    session.close()
    reopened = Session.open(session.dir)  # a closed turn: nothing to repair, nothing queued again
    try:
        assert reopened.view.warnings == [] and reopened.view.closing == []
        assert [m.content for m in reopened.view.messages] == ["a long message"]
    finally:
        reopened.close()


async def test_a_chat_that_does_not_save_keeps_no_queue(open_lane, fake_model):  # noqa: F811
    gate = Gate()
    fake_model.reply("slow", pieces=2, gate=gate)
    async with open_lane() as chat:
        await chat.lane.submit_message("hello")
        assert [m.text for m in chat.lane.inbox.unsent()] == ["hello"]
        gate.open()
        await chat.until(TurnEnded)
        assert chat.lane.inbox.unsent() == []  # sent: nothing left to keep once /save gives it a bundle


async def test_what_waits_moves_with_the_chat_to_another_session(open_lane, session):  # noqa: F811
    other = Session.create(session.dir.parent, provider="fake", model="fake-model")
    write_queue(other.dir, [Queued("o1", "kept in the other session")])
    release = trio.Event()
    try:
        async with open_lane(Conversation(session=session)) as chat:
            chat.lane.submit(busy_until(release))
            await chat.lane.submit_message("typed here")
            await chat.lane.switch_session(other)
            assert chat.lane.inbox.messages() == ("typed here", "kept in the other session")
            assert chat.lane.inbox.held  # what the other session kept comes back held, as after a restart
            assert [text for _, text in on_disk(other)] == ["typed here", "kept in the other session"]
            assert on_disk(session) == []
            release.set()
    finally:
        other.close()


async def test_clear_takes_what_waits_to_the_new_conversation_and_out_of_the_old_ones_file(
        open_lane, fake_model, session):  # noqa: F811
    from actors.commands.conversation import clear

    fake_model.reply("Answer.")
    release = trio.Event()
    async with open_lane(Conversation(session=session)) as chat:
        chat.lane.submit(busy_until(release))
        await chat.lane.submit_message("typed while busy")
        assert [text for _, text in on_disk(session)] == ["typed while busy"]
        await clear(chat.lane, "")
        new = chat.conversation.session
        assert new is not session
        assert on_disk(session) == []  # resuming the old one shows nothing as not sent
        assert [text for _, text in on_disk(new)] == ["typed while busy"]
        release.set()
        await chat.until(TurnEnded)
    assert [r["content"] for r in all_records(new) if r["role"] == USER] == ["typed while busy"]
    assert on_disk(new) == []
    new.close()
