"""Session bundles: ids, meta.json, the append-only log, the live view (finding and listing them:
test_listing.py)."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest

from iota.sessions import bundle as session_module
from iota.sessions import log as session_log
from iota.errors import SessionError, SessionLocked
from iota.messages import Message, ToolCall, Usage
from iota.paths import project_sessions_dir, sessions_dir
from iota.sessions.bundle import Session, new_session_id, render_meta
from iota.sessions.log import INTERRUPTED_RESULT, LINE_CAP, repair_tail

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")
PREAMBLE = "[Earlier conversation summary]\n{}\n\n———\n\n"


def make_bundle(bucket: Path, name: str, **meta) -> Path:
    bundle = bucket / name
    bundle.mkdir(parents=True)
    (bundle / "meta.json").write_text(json.dumps({"v": 1, "id": name, **meta}))
    return bundle


def write_lines(path: Path, *records: dict | bytes) -> None:
    with open(path, "ab") as f:
        for record in records:
            f.write(record if isinstance(record, bytes) else json.dumps(record).encode() + b"\n")


def new_session(**fields) -> Session:
    return Session.new(sessions_dir(), provider="anthropic", model="claude", **fields)


def user(text: str) -> Message:
    return Message("user", text)


def compaction(summary: str, through: int) -> Message:
    return Message("compaction", summary, compacted_through=through, usage=Usage(10, 5))


def reopen(session: Session) -> Session:
    session.close()
    return Session.open(session.dir)


def fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


# -- ids ---------------------------------------------------------------------------------


def test_ids_are_twelve_lowercase_crockford_characters():
    for _ in range(20):
        assert re.fullmatch(r"[0-9a-hjkmnp-tv-z]{12}", new_session_id())


def test_an_id_taken_in_either_layout_is_drawn_again(monkeypatch):
    (sessions_dir() / "aaaaaaaaaaaa").mkdir(parents=True)
    (project_sessions_dir(Path("/work/p1")) / "bbbbbbbbbbbb").mkdir(parents=True)
    drawn = iter(["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"])
    monkeypatch.setattr(session_module, "_random_id", lambda: next(drawn))
    assert new_session_id() == "cccccccccccc"


# -- meta.json -----------------------------------------------------------------------------------------


def test_meta_json_has_its_keys_in_order_and_no_trailing_newline():
    meta = {"zz_unknown": [1], "message_count": 3, "title": "t", "model": "m", "temperature": 0.0, "cwd": "/w",
            "provider": "p", "updated_at": "U", "created_at": "C", "id": "i", "v": 1, "agent": "", "top_p": 0.5}
    assert render_meta(meta).decode() == (
        '{\n  "v": 1,\n  "id": "i",\n  "created_at": "C",\n  "updated_at": "U",\n  "provider": "p",\n'
        '  "model": "m",\n  "top_p": 0.5,\n  "cwd": "/w",\n  "title": "t",\n  "message_count": 3,\n'
        '  "zz_unknown": [\n    1\n  ]\n}'
    )


def test_meta_json_always_has_its_head_keys_and_count():
    assert json.loads(render_meta({"id": "i"})) == {
        "v": 1, "id": "i", "created_at": "", "updated_at": "", "provider": "", "model": "", "message_count": 0,
    }


def test_real_writes_stamp_updated_at():
    bundle = make_bundle(sessions_dir(), "k7aaaaaaaaaa", updated_at="2020-01-01T00:00:00+00:00")
    with Session.open(bundle) as session:
        session.append([user("a")])
        appended = json.loads((bundle / "meta.json").read_text())["updated_at"]
        session.meta["updated_at"] = "2020-01-01T00:00:00+00:00"
        session.update_meta(title="t")
        retitled = json.loads((bundle / "meta.json").read_text())["updated_at"]
    assert STAMP.fullmatch(appended) and appended != "2020-01-01T00:00:00+00:00"
    assert STAMP.fullmatch(retitled) and retitled != "2020-01-01T00:00:00+00:00"


def test_a_created_bundle_stamps_rfc3339_seconds_with_an_offset():
    with Session.create(sessions_dir(), provider="openai", model="gpt", title="chat") as session:
        meta = json.loads((session.dir / "meta.json").read_text())
    assert list(meta) == ["v", "id", "created_at", "updated_at", "provider", "model", "title", "message_count"]
    assert meta["id"] == session.id and meta["message_count"] == 0
    assert STAMP.fullmatch(meta["created_at"]) and STAMP.fullmatch(meta["updated_at"])


def test_unknown_meta_keys_survive_a_rewrite():
    bundle = make_bundle(sessions_dir(), "k7aaaaaaaaaa", model="m", later_key={"a": 1}, other="x")
    with Session.open(bundle) as session:
        session.update_meta(title="new")
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["title"] == "new"
    assert list(meta)[-3:] == ["message_count", "later_key", "other"] and meta["later_key"] == {"a": 1}


def test_meta_json_is_rewritten_only_when_something_changed():
    with Session.create(sessions_dir(), provider="p", model="m", title="same") as session:
        meta_path = session.dir / "meta.json"
        before = meta_path.stat().st_ino
        session.update_meta(title="same", model="m")
        assert meta_path.stat().st_ino == before
        session.update_meta(title="other")
        assert meta_path.stat().st_ino != before  # replaced by a rename, not written in place
        assert json.loads(meta_path.read_text())["title"] == "other"
        assert not (session.dir / "meta.json.tmp").exists()


# -- the bundle on disk and its lock ---------------------------------------------------------------------


def test_a_new_session_touches_nothing_until_its_first_append():
    session = new_session(title="lazy")
    session.update_meta(cwd="/w")
    assert not sessions_dir().exists()
    session.append([user("hi")])
    assert sorted(p.name for p in session.dir.iterdir()) == [".lock", "messages.idx", "messages.jsonl", "meta.json"]
    assert json.loads((session.dir / "meta.json").read_text())["cwd"] == "/w"
    session.close()


def test_create_writes_the_bundle_at_once():
    with Session.create(sessions_dir(), provider="p", model="m", agent="coder") as session:
        assert (session.dir / "messages.jsonl").read_bytes() == b""
        assert (session.dir / ".lock").read_text() == str(os.getpid())
        assert json.loads((session.dir / "meta.json").read_text())["agent"] == "coder"


def test_a_bundle_open_elsewhere_is_refused_until_closed():
    session = Session.create(sessions_dir(), provider="p", model="m")
    refusal = rf"^session {session.id} is open in another iota process \(pid {os.getpid()}\)$"
    with pytest.raises(SessionLocked, match=refusal):
        Session.open(session.dir)
    session.close()
    Session.open(session.dir).close()


def test_a_closed_session_refuses_to_save():
    session = new_session()
    session.close()
    with pytest.raises(SessionError, match=rf"^session {session.id} was closed; nothing more can be saved to it$"):
        session.append([user("late")])
    assert not session.dir.exists()


# -- messages.jsonl --------------------------------------------------------------------------------------


def test_records_are_compact_utf8_lines():
    with new_session() as session:
        session.append([
            user("héllo"),
            Message("assistant", tool_calls=[ToolCall("c1", "read", {})], usage=Usage(3, 4)),
        ])
        assert (session.dir / "messages.jsonl").read_bytes() == (
            '{"role":"user","content":"héllo"}\n'
            '{"role":"assistant","tool_calls":[{"id":"c1","name":"read","arguments":{}}],"usage":{"in":3,"out":4}}\n'
        ).encode()


def test_a_batch_is_fsynced_once_and_counts_everything_but_compaction_markers(monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(Path(fd_path(fd)).name), real_fsync(fd)))
    with new_session() as session:
        session.append([Message("system", "s"), user("a"), Message("assistant", "b")])
        synced.clear()
        session.append([user("c"), Message("assistant", "d"), compaction("sum", 2), user("e")])
        assert synced.count("messages.jsonl") == 1
        assert synced.count("meta.json.tmp") == 1
        assert json.loads((session.dir / "meta.json").read_text())["message_count"] == 6


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_a_batch_that_fails_part_way_is_cut_back_off_the_log(monkeypatch, failing):
    session = new_session()
    session.append([user("kept")])
    log = session.dir / "messages.jsonl"
    before = log.read_bytes()
    calls = {"write": 0}
    real_write, real_fsync = os.write, os.fsync

    def write(fd, data):
        if fd_path(fd) == str(log):
            calls["write"] += 1
            if failing == "write" and calls["write"] == 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    def fsync(fd):
        if failing == "fsync" and fd_path(fd) == str(log):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(SessionError, match=rf"^failed to save session {session.id}: your message not written to messages.jsonl: No space left on device$"):
        session.append([user("one"), user("two"), user("three")])
    assert log.read_bytes() == before
    assert json.loads((session.dir / "meta.json").read_text())["message_count"] == 1
    monkeypatch.undo()
    session.append([user("after")])
    assert [m.content for m in reopen(session).view.messages] == ["kept", "after"]


def test_undecodable_bytes_from_a_tool_survive_the_round_trip():
    text = b"caf\xe9 output".decode("utf-8", "surrogateescape")
    with new_session() as session:
        session.append([Message("assistant", tool_calls=[ToolCall("c1", "shell", {})]),
                        Message("tool", text, tool_call_id="c1")])
    with Session.open(session.dir) as reloaded:
        assert reloaded.view.messages[1].content == text


def test_a_record_over_the_line_cap_loses_its_content_tail():
    over = LINE_CAP + 1000
    with new_session() as session:
        session.append([user("x" * over)])
        line = (session.dir / "messages.jsonl").read_bytes()
    assert LINE_CAP == 32 * 1024 * 1024
    assert len(line) <= LINE_CAP and line.endswith(b"\n")
    original = len(json.dumps({"role": "user", "content": "x" * over}, separators=(",", ":"))) + 1
    marker = f"[record truncated: {original - LINE_CAP} bytes over the log line cap]"
    assert json.loads(line)["content"].endswith(marker)


def test_reasoning_is_cut_too_when_cutting_content_is_not_enough(monkeypatch):
    monkeypatch.setattr(session_log, "LINE_CAP", 300)
    line = session_log.encode_record(Message("assistant", "short", reasoning="r" * 1000))
    record = json.loads(line)
    assert len(line) <= 300
    assert record["content"].endswith("bytes over the log line cap]")
    assert record["reasoning"].startswith("rrr") and record["reasoning"].endswith("bytes over the log line cap]")


# -- cutting a torn tail -----------------------------------------------------------------------------------


def opened_with_log(*records: dict | bytes) -> Session:
    bundle = make_bundle(sessions_dir(), new_session_id(), model="m")
    write_lines(bundle / "messages.jsonl", *records)
    return Session.open(bundle)


@pytest.mark.parametrize(
    "torn, warning",
    [
        (b'{"role":"us', "a torn last line (11 bytes)"),
        (b"\0\0\0\0\0\0\0\0\n", "a torn last line (9 bytes)"),
        (b'{"role":"us\n\0\0\0', "2 torn last lines (15 bytes)"),
    ],
)
def test_a_torn_last_line_is_cut_back_before_anything_is_appended(torn, warning):
    session = opened_with_log({"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, torn)
    assert session.view.warnings == [f"messages.jsonl: cut {warning} back to the last complete record"]
    session.append([user("c")])
    assert [m.content for m in reopen(session).view.messages] == ["a", "b", "c"]


def test_a_clean_log_is_left_alone():
    session = opened_with_log({"role": "user", "content": "a"})
    assert session.view.warnings == []
    assert (session.dir / "messages.jsonl").read_bytes() == b'{"role": "user", "content": "a"}\n'
    session.close()


def test_bad_lines_in_the_middle_are_skipped_with_a_warning():
    session = opened_with_log({"role": "user", "content": "a"}, b"garbage\n", b"\n", {"role": "user", "content": "b"})
    assert [m.content for m in session.view.messages] == ["a", "b"]
    assert session.view.warnings == ["messages.jsonl: skipped an unreadable line at byte 33"]
    session.close()
    session = opened_with_log(b"[1]\n", b'"x"\n', {"role": "user", "content": "a"})
    assert session.view.warnings == ["messages.jsonl: skipped 2 unreadable lines (the first at byte 0)"]
    session.close()


# -- the live view -----------------------------------------------------------------------------------------


def test_the_last_system_record_goes_first_and_system_cleared_removes_it():
    session = opened_with_log(
        {"role": "system", "content": "old"}, {"role": "user", "content": "a"},
        {"role": "system", "content": "new"}, {"role": "assistant", "content": "b"},
    )
    view = [(m.role, m.content) for m in session.view.messages]
    assert view == [("system", "new"), ("user", "a"), ("assistant", "b")]
    session.append([Message("system", system_cleared=True)])
    session = reopen(session)
    assert [m.role for m in session.view.messages] == ["user", "assistant"]
    session.append([Message("system", "again")])
    assert reopen(session).view.messages[0].content == "again"


def test_the_first_retained_message_is_a_copy_with_the_summary_preamble():
    with new_session() as session:
        session.append([Message("system", "sys"), user("a"), Message("assistant", "b"), user("c"),
                        Message("assistant", "d")])
        session.append([compaction("  first summary \n", 1), compaction("the summary", 2), user("e")])
    session = Session.open(session.dir)
    assert [m.content for m in session.view.messages] == ["sys", PREAMBLE.format("the summary") + "c", "d", "e"]
    assert session.view.summary == "the summary"
    assert session.conversation_count == 5
    log = (session.dir / "messages.jsonl").read_text()
    assert '{"role":"user","content":"c"}\n' in log  # the log keeps the original
    session.close()


@pytest.mark.parametrize("through, contents", [(-5, [PREAMBLE.format("s") + "a", "b"]), (99, [PREAMBLE.format("s")])])
def test_compacted_through_is_clamped_to_the_conversation(through, contents):
    session = opened_with_log(
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
        {"role": "compaction", "content": "s", "compacted_through": through},
    )
    assert [m.content for m in session.view.messages] == contents
    assert session.view.messages[0].role == "user"
    session.close()


def test_unknown_roles_are_skipped_and_not_counted():
    session = opened_with_log(
        {"role": "user", "content": "a"}, {"role": "banana", "content": "?"}, {"role": "assistant", "content": "b"},
        {"role": "compaction", "content": "s", "compacted_through": 1},
    )
    assert [m.content for m in session.view.messages] == [PREAMBLE.format("s") + "b"]
    assert session.conversation_count == 2
    session.close()


def test_last_usage_is_the_last_assistant_usage_after_the_last_compaction():
    with new_session() as session:
        session.append([user("a"), Message("assistant", "b", usage=Usage(100, 10))])
        session.append([compaction("s", 1)])
    session = Session.open(session.dir)
    assert session.view.last_usage is None
    session.append([user("c"), Message("assistant", "d", usage=Usage(50, 5)), Message("assistant", "e")])
    assert reopen(session).view.last_usage == Usage(50, 5)


# -- repairing unanswered tool calls -----------------------------------------------------------------------


def test_trailing_unanswered_tool_calls_get_error_results():
    calls = [ToolCall("c1", "read", {}), ToolCall("c2", "shell", {}), ToolCall("c3", "edit", {})]
    messages = [user("go"), Message("assistant", tool_calls=calls), Message("tool", "ok", tool_call_id="c2")]
    assert repair_tail(messages) == [
        Message("tool", INTERRUPTED_RESULT, tool_call_id="c1", tool_call_name="read", is_error=True),
        Message("tool", INTERRUPTED_RESULT, tool_call_id="c3", tool_call_name="edit", is_error=True),
    ]
    assert INTERRUPTED_RESULT == "interrupted: no result was recorded"


def test_answered_or_superseded_tool_calls_need_no_repair():
    call = ToolCall("c1", "read", {})
    assert repair_tail([Message("assistant", tool_calls=[call]), Message("tool", "ok", tool_call_id="c1")]) == []
    assert repair_tail([Message("assistant", tool_calls=[call]), user("never mind")]) == []
    assert repair_tail([user("hi"), Message("assistant", "hello")]) == []
    assert repair_tail([]) == []
