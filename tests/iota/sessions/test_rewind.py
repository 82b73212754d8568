"""Rewinding a conversation (`/rewind`): the log records the rewind, nothing is deleted, and the
view — now and after a resume — is the conversation as it stood just before the chosen message,
valid for both providers."""

from __future__ import annotations

import json

import pytest

from iota.errors import SessionError
from iota.messages import ASSISTANT, COMPACTION, REWIND, SYSTEM, TOOL, TURN_END, USER, Message, ToolCall, Usage
from iota.paths import sessions_dir
from iota.providers import anthropic, openai
from iota.sessions.bundle import Session
from iota.sessions.conversation import Conversation
from iota.sessions.log import summary_preamble
from tests.support.api_rules import conversation_error


def assert_both_providers_accept(view: list[Message]) -> None:
    messages = [m for m in view if m.role != SYSTEM] + [Message(USER, "and now?")]
    for dialect, convert in (("anthropic", anthropic.wire_messages), ("openai", openai.wire_messages)):
        assert conversation_error(dialect, {"messages": [wire for _, wire in convert(messages)]}) is None


def turn(session: Session, text: str, turn_id: str, *, tool: bool = True) -> None:
    """One turn as the lane writes it: the message, a tool call and its result, the reply, turn_end."""
    records = [Message(USER, text, turn=turn_id)]
    if tool:
        call = ToolCall(f"c-{turn_id}", "shell", {"command": f"echo {turn_id}"})
        records += [Message(ASSISTANT, tool_calls=[call], turn=turn_id),
                    Message(TOOL, f"out {turn_id}", tool_call_id=call.id, tool_call_name="shell", turn=turn_id)]
    records += [Message(ASSISTANT, f"reply to {text}", usage=Usage(100, 10), turn=turn_id),
                Message(TURN_END, turn=turn_id)]
    session.append(records)


def contents(view: list[Message]) -> list[str]:
    return [m.content for m in view if m.role in (USER, ASSISTANT) and m.content]


def log_records(session: Session) -> list[dict]:
    return [json.loads(line) for line in (session.dir / "messages.jsonl").read_text().splitlines()]


def point(session: Session, text: str) -> int:
    return next(offset for offset, said in session.rewind_points() if said == text)


@pytest.fixture
def session():
    session = Session.create(sessions_dir(), provider="fake", model="m")
    session.append([Message(SYSTEM, "be brief")])
    for n in (1, 2, 3):
        turn(session, f"m{n}", f"t{n}")
    yield session
    session.close()


def test_the_conversation_continues_from_just_before_the_message_and_nothing_is_deleted(session):
    before = (session.dir / "messages.jsonl").read_bytes()
    view = session.rewind(point(session, "m2"), "m2")
    assert contents(view.messages) == ["m1", "reply to m1"]
    assert view.messages[0].content == "be brief"
    assert_both_providers_accept(view.messages)
    after = (session.dir / "messages.jsonl").read_bytes()
    assert after.startswith(before)  # appended to, never rewritten
    rewind = log_records(session)[-1]
    assert rewind["role"] == REWIND and rewind["content"] == "m2" and "at" in rewind
    assert before[rewind["rewound_to"]:].startswith(b'{"role":"user","content":"m2"')
    # the live count and meta.json agree with the view: 1 system + 4 records of the first turn
    assert session.meta["message_count"] == 5
    assert session.conversation_count == 4
    session.close()
    resumed = Session.open(session.dir)
    assert [m.content for m in resumed.view.messages] == [m.content for m in view.messages]
    assert [text for _, text in resumed.view.rewind_points] == ["m1"]
    resumed.close()


def test_the_conversation_goes_on_after_a_rewind_and_a_resume_shows_both_parts(session):
    session.rewind(point(session, "m3"), "m3")
    turn(session, "m3 again", "t4")
    assert [text for _, text in session.rewind_points()] == ["m1", "m2", "m3 again"]
    session.close()
    resumed = Session.open(session.dir)
    assert contents(resumed.view.messages) == ["m1", "reply to m1", "m2", "reply to m2", "m3 again",
                                               "reply to m3 again"]
    assert_both_providers_accept(resumed.view.messages)
    resumed.close()


def test_a_second_rewind_further_back_undoes_the_first_ones_continuation(session):
    session.rewind(point(session, "m3"), "m3")
    turn(session, "m3 again", "t4")
    view = session.rewind(point(session, "m2"), "m2")
    assert contents(view.messages) == ["m1", "reply to m1"]
    turn(session, "later", "t5")
    session.close()
    resumed = Session.open(session.dir)
    assert contents(resumed.view.messages) == ["m1", "reply to m1", "later", "reply to later"]
    resumed.close()


def test_a_compaction_after_a_rewind_counts_only_what_is_not_undone(session):
    # The compaction's N is counted against the conversation as it stands; counting the undone
    # records too would make the resumed view keep the wrong records.
    session.rewind(point(session, "m2"), "m2")
    turn(session, "m4", "t4")
    tail = 4  # m4's turn: message, call, result, reply
    session.append([Message(COMPACTION, "summary of m1", compacted_through=session.conversation_count - tail,
                            usage=Usage(10, 5))])
    turn(session, "m5", "t5", tool=False)
    session.close()
    resumed = Session.open(session.dir)
    assert contents(resumed.view.messages) == [summary_preamble("summary of m1") + "m4", "reply to m4", "m5",
                                               "reply to m5"]
    assert_both_providers_accept(resumed.view.messages)
    resumed.close()


def test_rewinding_to_the_message_a_summary_rides_on_brings_back_the_conversation_before_it(session):
    tail = 4  # m3's turn
    session.append([Message(COMPACTION, "m1 and m2 happened", compacted_through=session.conversation_count - tail,
                            usage=Usage(10, 5))])
    turn(session, "m4", "t4", tool=False)
    session.close()
    session = Session.open(session.dir)  # the checkpoint now starts at m3
    assert [text for _, text in session.view.rewind_points] == ["m3", "m4"]
    view = session.rewind(point(session, "m3"), "m3")
    # The compaction was written after m3, so it is undone too: the whole conversation before m3 is back.
    assert contents(view.messages) == ["m1", "reply to m1", "m2", "reply to m2"]
    assert view.summary == ""
    assert_both_providers_accept(view.messages)
    session.close()
    resumed = Session.open(session.dir)
    assert contents(resumed.view.messages) == contents(view.messages)
    resumed.close()


def test_only_a_message_of_the_person_in_the_view_can_be_rewound_to(session):
    reply = next(offset for offset, _ in session.rewind_points()) + 1
    with pytest.raises(SessionError, match="there is no message of yours at byte"):
        session.rewind(reply)
    assert log_records(session)[-1]["role"] == TURN_END


def test_a_rewind_record_that_names_nothing_before_it_is_ignored(session):
    size = (session.dir / "messages.jsonl").stat().st_size
    session.append([Message(REWIND, rewound_to=size + 10)])
    session.close()
    resumed = Session.open(session.dir)
    assert contents(resumed.view.messages)[-2:] == ["m3", "reply to m3"]
    resumed.close()


def test_a_chat_that_does_not_save_drops_the_messages_in_memory():
    conversation = Conversation(messages=[Message(USER, "a"), Message(ASSISTANT, "b"), Message(USER, "c"),
                                          Message(ASSISTANT, "d")])
    points = conversation.rewind_points()
    assert [p.text for p in points] == ["a", "c"]
    conversation.rewind(points[1])
    assert contents(conversation.messages) == ["a", "b"]


def test_an_unsaved_rewind_keeps_the_summary_its_first_message_carried():
    conversation = Conversation(messages=[Message(USER, summary_preamble("s") + "a"), Message(ASSISTANT, "b")])
    point_ = conversation.rewind_points()[0]
    assert point_.text == "a"
    conversation.rewind(point_)
    assert [m.content for m in conversation.messages] == [summary_preamble("s")]


def test_a_saving_conversation_rewinds_through_its_session(session):
    conversation = Conversation.from_session(session)
    points = conversation.rewind_points()
    assert [p.text for p in points] == ["m1", "m2", "m3"]
    conversation.rewind(points[1])
    assert contents(conversation.messages) == ["m1", "reply to m1"]
    assert conversation.instructions == "be brief"
