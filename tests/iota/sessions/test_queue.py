"""A bundle's queue.json (iota.sessions.queue): the typed messages not yet in the log."""

from __future__ import annotations

import pytest

from iota import paths
from iota.errors import SessionError
from iota.messages import USER, Message
from iota.sessions.bundle import Session
from iota.sessions.queue import QUEUE_NAME, Queued, read_queue, save_queue, unsent, write_queue


def test_written_and_read_back_in_order(tmp_path):
    queued = [Queued("a1", "first"), Queued("b2", "second\nwith a line"), Queued("c3", "ünïcode \udcff")]
    write_queue(tmp_path, queued)
    assert read_queue(tmp_path) == (queued, None)
    assert not (tmp_path / (QUEUE_NAME + ".tmp")).exists()


def test_an_empty_queue_is_no_file(tmp_path):
    write_queue(tmp_path, [Queued("a1", "first")])
    write_queue(tmp_path, [])
    assert not (tmp_path / QUEUE_NAME).exists()
    write_queue(tmp_path, [])  # nothing to remove
    assert read_queue(tmp_path) == ([], None)


@pytest.mark.parametrize("data, warning", [
    ("{not json", "queue.json: not valid JSON; the messages queued before iota stopped could not be read"),
    ('{"messages": 42}', "queue.json: has no list of messages; the messages queued before iota stopped could "
                         "not be read"),
    ('[1, 2]', "queue.json: has no list of messages; the messages queued before iota stopped could not be read"),
])
def test_an_unreadable_file_is_one_warning(tmp_path, data, warning):
    (tmp_path / QUEUE_NAME).write_text(data)
    assert read_queue(tmp_path) == ([], warning)


def test_unreadable_entries_are_skipped_and_counted(tmp_path):
    (tmp_path / QUEUE_NAME).write_text(
        '{"messages": [{"id": "a1", "text": "kept"}, {"id": "", "text": "no id"}, {"id": "b2"}, 7]}')
    assert read_queue(tmp_path) == ([Queued("a1", "kept")], "queue.json: skipped 3 unreadable entries")


def test_a_message_whose_turn_is_in_the_view_is_sent():
    view = [Message(USER, "sent", turn="a1"), Message(USER, "a notice", notice=True, turn="n1"),
            Message("assistant", "reply", turn="c3")]
    queued = [Queued("a1", "sent"), Queued("b2", "waiting"), Queued("c3", "same id as a reply")]
    assert unsent(queued, view) == [Queued("b2", "waiting"), Queued("c3", "same id as a reply")]


def test_saving_writes_a_new_sessions_bundle_first():
    session = Session.new(paths.sessions_dir(), provider="fake", model="m")
    try:
        save_queue(session, [])  # nothing to keep: a chat never used leaves no trace
        assert not session.dir.exists()
        save_queue(session, [Queued("a1", "hello")])
        assert session.on_disk and (session.dir / "meta.json").exists()
        assert read_queue(session.dir) == ([Queued("a1", "hello")], None)
    finally:
        session.close()
    with pytest.raises(SessionError, match="was closed"):
        save_queue(session, [Queued("a1", "hello")])


def test_a_write_that_fails_names_what_was_not_kept(tmp_path, monkeypatch):
    session = Session.create(paths.sessions_dir(), provider="fake", model="m")
    try:
        def full(*args, **kwargs):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr("iota.sessions.queue.write_atomically", full)
        with pytest.raises(SessionError) as raised:
            save_queue(session, [Queued("a1", "hello"), Queued("b2", "there")])
        assert str(raised.value) == (f"failed to save session {session.id}: 2 queued messages not written to "
                                     "queue.json: No space left on device")
    finally:
        session.close()
