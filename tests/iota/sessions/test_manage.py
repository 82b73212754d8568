"""Filing sessions (iota.sessions.manage): each change under the bundle's lock, written
atomically, leaving `updated_at` and unknown keys alone; forks that only read the original;
archived sessions out of the lists and prefixes; an old meta.json without the new fields."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from iota.errors import SessionError, SessionLocked, SessionNotFound
from iota.messages import ASSISTANT, SYSTEM, USER, Message, ToolCall, Usage
from iota.paths import sessions_dir
from iota.sessions import manage
from iota.sessions.bundle import Session, read_meta
from iota.sessions.listing import list_sessions, resolve_session
from iota.sessions.log import load_log

OLD_META = {"v": 1, "id": "", "created_at": "2026-08-01T10:00:00+00:00", "updated_at": "2026-08-01T10:00:00+00:00",
            "provider": "fake", "model": "m", "title": "Old one", "message_count": 2, "zz_other_program": [1]}


def saved(title: str = "", parent: str = "", messages: list[Message] | None = None, **fields) -> Path:
    with Session.create(sessions_dir(), provider="fake", model="m", title=title, parent=parent, **fields) as session:
        session.append(messages or [Message(USER, "question"), Message(ASSISTANT, "answer")])
        return session.dir


def old_bundle(name: str = "old000000000") -> Path:
    """A bundle as an older iota left it: no `parent`, no `archived`, a key of another program."""
    bundle = sessions_dir() / name
    bundle.mkdir(parents=True)
    (bundle / "meta.json").write_text(json.dumps({**OLD_META, "id": name}, indent=2))
    (bundle / "messages.jsonl").write_text('{"role":"user","content":"hi"}\n{"role":"assistant","content":"yo"}\n')
    return bundle


def without_turns(messages: list[Message]) -> list[Message]:
    return [dataclasses.replace(message, turn="") for message in messages]


def snapshot(bundle: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(bundle.iterdir()) if path.is_file()}


def test_an_old_meta_json_without_the_new_fields_lists_resolves_opens_and_is_filed():
    bundle = old_bundle()
    [info] = list_sessions()
    assert (info.title, info.parent, info.archived) == ("Old one", "", False)
    assert resolve_session("old0") == bundle
    with Session.open(bundle) as session:
        assert [m.content for m in session.view.messages] == ["hi", "yo"]
    manage.archive(bundle, True)
    meta = read_meta(bundle)
    assert meta["archived"] is True and meta["zz_other_program"] == [1]
    assert meta["updated_at"] == OLD_META["updated_at"]  # filing is not activity


def test_archived_sessions_leave_the_lists_and_the_prefixes_unless_asked_for():
    bundle = saved("Finished")
    manage.archive(bundle, True)
    assert list_sessions() == []
    assert [i.id for i in list_sessions(include_archived=True)] == [bundle.name]
    with pytest.raises(SessionNotFound, match=r'no session matches "\w+" \(an archived session does: add --all\)'):
        resolve_session(bundle.name[:5])
    assert resolve_session(bundle.name[:5], include_archived=True) == bundle
    manage.archive(bundle, False)
    assert "archived" not in read_meta(bundle)
    assert resolve_session(bundle.name[:5]) == bundle


def test_a_session_open_in_another_process_is_not_changed():
    """The lock is held by another open file description (as another process would hold it):
    every change is refused with the holder's pid and the file stays as it was."""
    bundle = saved("Busy")
    other = saved("Other")
    before = (bundle / "meta.json").read_bytes()
    with Session.open(bundle):
        for change, doing in ((lambda: manage.rename(bundle, "New"), "rename it"),
                              (lambda: manage.archive(bundle, True), "archive it"),
                              (lambda: manage.set_parent(bundle, other.name), "move it")):
            with pytest.raises(SessionLocked) as refused:
                change()
            assert str(refused.value) == (f"session {bundle.name} is open in another iota process (pid {os.getpid()}); "
                                          f"cannot {doing} from here")
    assert (bundle / "meta.json").read_bytes() == before


def test_the_session_a_chat_writes_is_changed_through_its_own_handle():
    with Session.open(saved("Mine")) as mine:
        manage.rename(mine.dir, "  Renamed\x1b[2J  ", current=mine)
        manage.archive(mine.dir, True, current=mine)
        assert (mine.meta["title"], mine.meta["archived"]) == ("Renamed[2J", True)
        assert read_meta(mine.dir)["title"] == "Renamed[2J"
    with pytest.raises(SessionError, match="at least one printable character"):
        manage.rename(mine.dir, "\x1b\n")


def test_a_session_cannot_be_put_under_itself_or_its_descendants():
    top = saved("Top")
    middle = saved("Middle", parent=top.name)
    bottom = saved("Bottom", parent=middle.name)
    with pytest.raises(SessionError, match="cannot sit under itself"):
        manage.set_parent(top, top.name)
    with pytest.raises(SessionError, match=f"session {bottom.name} is under {top.name}; .* would make a loop"):
        manage.set_parent(top, bottom.name)
    manage.set_parent(bottom, "")
    manage.set_parent(top, bottom.name)
    assert read_meta(top)["parent"] == bottom.name and "parent" not in read_meta(bottom)


def test_deleting_a_session_moves_its_children_up_to_its_parent():
    top = saved("Top")
    middle = saved("Middle", parent=top.name)
    children = [saved(f"Child {n}", parent=middle.name) for n in (1, 2)]
    moved = manage.delete_with_children(middle)
    assert sorted(info.id for info in moved) == sorted(child.name for child in children)
    assert not middle.exists()
    assert [read_meta(child)["parent"] for child in children] == [top.name, top.name]
    manage.delete_with_children(top)
    assert ["parent" not in read_meta(child) for child in children] == [True, True]


def test_a_delete_that_would_move_a_child_open_elsewhere_changes_nothing():
    parent = saved("Parent")
    free = saved("Free child", parent=parent.name)
    busy = saved("Busy child", parent=parent.name)
    before = {bundle.name: snapshot(bundle) for bundle in (parent, free, busy)}
    with Session.open(busy):
        with pytest.raises(SessionLocked, match=f"session {busy.name} is open .*; cannot move it out from under "
                                                f"{parent.name} from here, so {parent.name} was not deleted"):
            manage.delete_with_children(parent)
    assert {bundle.name: snapshot(bundle) for bundle in (parent, free, busy)} == before


def test_a_fork_holds_the_visible_context_and_leaves_the_original_byte_identical():
    call = ToolCall("c1", "read_file", {"path": "a"})
    original = saved("Garden", messages=[
        Message(SYSTEM, "be brief"), Message(USER, "one", turn="t1"), Message(ASSISTANT, "1", turn="t1"),
        Message(USER, "two", turn="t2"), Message(ASSISTANT, "", tool_calls=[call], turn="t2",
                                                 usage=Usage(120, 5))], cwd="/w/p", agent="coder", temperature=0.5)
    with Session.open(original) as session:  # compact: the summary covers "one" and "1"
        session.append([Message("compaction", "SUMMARY", compacted_through=2, usage=Usage(1, 1))])
    before = snapshot(original)
    parent_view, _ = load_log(original / "messages.jsonl")

    with manage.fork_bundle(original) as child:
        assert snapshot(original) == before
        meta = read_meta(child.dir)
        assert (meta["parent"], meta["title"], meta["agent"], meta["cwd"], meta["temperature"]) == (
            original.name, "Garden (fork)", "coder", "/w/p", 0.5)
        assert child.view.messages == without_turns(parent_view.messages)  # the open tool call answered in both
        assert child.view.last_usage == Usage(120, 5)
        records = [json.loads(line) for line in (child.dir / "messages.jsonl").read_text().splitlines()]
        assert not any("turn" in record for record in records)  # those turns are over
        assert records[1]["content"].startswith("[Earlier conversation summary]\nSUMMARY")
    reopened, _ = load_log(child.dir / "messages.jsonl")
    assert reopened.messages == without_turns(parent_view.messages)
    with manage.fork_bundle(original, "Raised beds \x1b[2J") as named:
        assert named.meta["title"] == "Raised beds [2J"
    assert snapshot(original) == before


def test_a_fork_of_an_empty_conversation_is_refused():
    with Session.create(sessions_dir(), provider="fake", model="m") as empty:
        pass
    with pytest.raises(SessionError, match="has no conversation to fork yet"):
        manage.fork_bundle(empty.dir)
    assert [i.id for i in list_sessions()] == [empty.id]  # nothing was written for the fork
