"""A never-compacted log too long to send opens from a round in its tail (iota.sessions.log,
iota.sessions.offsets): what it leaves out, rewinds within and across it, a writer killed mid-rewind,
a fork of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iota.messages import Message, ToolCall
from iota.sessions import bundle as bundle_module
from iota.sessions import offsets
from iota.sessions.bundle import Session
from iota.sessions.log import left_out_note, load_log, summary_preamble
from tests.iota.sessions.test_bundle import PREAMBLE, compaction, new_session, user
from tests.iota.sessions.test_offsets import index_of, line_start, rebuilt


def long_session(rounds: int) -> Session:
    """`rounds` rounds of ask, tool call, result, answer, with a notice now and then; closed."""
    with new_session() as session:
        session.append([Message("system", "sys")])
        for i in range(rounds):
            call = ToolCall(f"c{i}", "read", {"path": f"f{i}"})
            session.append([user(f"ask {i} " + "x" * 200), Message("assistant", tool_calls=[call]),
                            Message("tool", "y" * 300, tool_call_id=f"c{i}", tool_call_name="read")]
                           + ([Message("user", f"job {i} done", notice=True)] if i % 3 == 0 else [])
                           + [Message("assistant", f"answer {i}")])
    return session


def test_a_never_compacted_log_past_the_tail_opens_from_a_round_in_its_tail(monkeypatch):
    session = long_session(200)
    size = (session.dir / "messages.jsonl").stat().st_size
    monkeypatch.setattr(bundle_module, "TAIL_BYTES", size // 10)
    with Session.open(session.dir) as reloaded:
        view = reloaded.view
        first = view.messages[1]
        assert view.messages[0].content == "sys"
        assert first.role == "user" and not first.notice
        assert first.content.startswith(summary_preamble(left_out_note(view.left_out)))
        assert first.content.endswith("x" * 200) and "ask " in first.content
        asked = int(first.content.split("ask ")[1].split()[0])
        assert view.left_out == sum(4 + (i % 3 == 0) for i in range(asked)) > 0
        assert len(view.messages) - 1 == reloaded.conversation_count - view.left_out
        assert reloaded.conversation_count == sum(4 + (i % 3 == 0) for i in range(200))
        assert view.message_count == reloaded.conversation_count + 1
        loaded = sum(len(m.content) for m in view.messages)
        assert loaded < size // 10
        assert view.last_usage is None and view.warnings == []
        assert [offset for offset, _ in view.rewind_points][0] == line_start(session.dir, f"ask {asked} " + "x" * 200)
        # A compaction now counts its N against the whole log, and the next open starts there.
        kept = reloaded.conversation_count - 4
        reloaded.append([compaction("s", kept)])
    monkeypatch.setattr(bundle_module, "TAIL_BYTES", size * 2)
    with Session.open(session.dir) as again:
        assert [m.content for m in again.view.messages] == \
            ["sys", PREAMBLE.format("s") + "ask 199 " + "x" * 200, "", "y" * 300, "answer 199"]
        assert again.view.left_out == 0


def test_a_never_compacted_log_within_the_tail_opens_whole(monkeypatch):
    session = long_session(20)
    # Nothing is read to measure the tail when the whole log fits in it (rewinds only shorten it).
    monkeypatch.setattr(offsets, "_tail_from", lambda f, tail_bytes: pytest.fail("the log was read for rewinds"))
    view, _ = load_log(session.dir / "messages.jsonl", tail_bytes=10 ** 9)
    assert view.left_out == 0 and len(view.messages) == 1 + sum(4 + (i % 3 == 0) for i in range(20))
    assert not view.messages[1].content.startswith("[Earlier")


def test_a_last_round_longer_than_the_tail_is_still_whole(monkeypatch):
    session = long_session(3)
    view, index = load_log(session.dir / "messages.jsonl", tail_bytes=10)
    assert view.messages[1].content == summary_preamble(left_out_note(view.left_out)) + "ask 2 " + "x" * 200
    assert view.left_out == 9 and index.conversation_count == 13


def _without_undone(log: Path, into: Path) -> None:
    """Write to `into` the log as if what its rewinds undid (and the rewinds) had never been written."""
    kept: list[tuple[int, bytes]] = []
    offset = 0
    for line in log.read_bytes().splitlines(keepends=True):
        record = json.loads(line)
        if record["role"] == "rewind":
            kept = [(at, text) for at, text in kept if at < record["rewound_to"]]
        else:
            kept.append((offset, line))
        offset += len(line)
    into.write_bytes(b"".join(text for _, text in kept))


@pytest.mark.parametrize("back", [3, 20, 24])
def test_a_rewind_in_a_long_never_compacted_log_opens_the_tail_it_would_without_the_undone_records(
        monkeypatch, tmp_path, back):
    """What a rewind undid does not count against the tail: the view after it is the one the log
    would give had the undone records never been written (not the last round alone)."""
    with new_session() as session:
        session.append([Message("system", "sys")])
        for i in range(100):
            session.append([user(f"ask {i} " + "x" * 200), Message("assistant", f"answer {i} " + "y" * 300)])
        tail = (session.dir / "messages.jsonl").stat().st_size // 4  # about 25 rounds
        monkeypatch.setattr(bundle_module, "TAIL_BYTES", tail)
        target = line_start(session.dir, f"ask {100 - back} " + "x" * 200)
        view = session.rewind(target, f"ask {100 - back}")
    _without_undone(session.dir / "messages.jsonl", tmp_path / "messages.jsonl")
    expected, _ = load_log(tmp_path / "messages.jsonl", tail)
    assert [m.content for m in view.messages] == [m.content for m in expected.messages]
    assert view.left_out == expected.left_out
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == [m.content for m in expected.messages]


def test_a_single_round_longer_than_the_tail_opens_whole_without_rebuilding_the_index(monkeypatch):
    """One message and a long run of tool calls after it (a system record first): the view is all
    of it, read once, and the index, true, is kept rather than rebuilt at every open."""
    with new_session() as session:
        session.append([Message("system", "sys"), user("go")])
        for i in range(30):
            call = ToolCall(f"c{i}", "read", {"path": f"f{i}"})
            session.append([Message("assistant", tool_calls=[call]),
                            Message("tool", "y" * 300, tool_call_id=f"c{i}", tool_call_name="read")])
    monkeypatch.setattr(bundle_module, "TAIL_BYTES", 2_000)
    inode = (session.dir / offsets.INDEX_NAME).stat().st_ino
    rebuilds = []
    real_rebuilt = offsets.rebuilt
    monkeypatch.setattr(offsets, "rebuilt", lambda f: rebuilds.append(1) or real_rebuilt(f))
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages[:2]] == ["sys", "go"] and len(reloaded.view.messages) == 62
        assert reloaded.view.left_out == 0
    assert rebuilds == [] and (session.dir / offsets.INDEX_NAME).stat().st_ino == inode


class Killed(BaseException):
    """Stands for kill -9: the writer stops where it is, and nothing after runs."""


def _killed_at(monkeypatch, point: str) -> None:
    if point == "between the log and the index append":
        def append(self, records):
            raise Killed
        monkeypatch.setattr(offsets.OffsetsFile, "append", append)
    else:  # after the index was cut back for a rewind, before its entries are written again
        def write(fd, data):
            import os
            os.close(fd)
            raise Killed
        monkeypatch.setattr(offsets, "_write", write)


@pytest.mark.parametrize("point", ["between the log and the index append", "between the index's cut and its rewrite"])
@pytest.mark.parametrize("back_to", ["ask 110", "the tail's first", "ask 40"])  # within the tail, to its start, across a compaction
def test_a_writer_killed_mid_rewind_leaves_what_a_full_scan_of_the_log_gives(monkeypatch, point, back_to):
    session = long_session(120)
    size = (session.dir / "messages.jsonl").stat().st_size
    monkeypatch.setattr(bundle_module, "TAIL_BYTES", size // 4)
    with Session.open(session.dir) as reopened:
        if back_to == "ask 40":
            reopened.append([compaction("s", 5 * 30)])
        reopened.append([user("after")])
        target = reopened.view.rewind_points[0][0] if back_to == "the tail's first" else \
            line_start(session.dir, f"{back_to} " + "x" * 200)
        _killed_at(monkeypatch, point)
        with pytest.raises(Killed):
            reopened.rewind(target, back_to)
        monkeypatch.undo()
        monkeypatch.setattr(bundle_module, "TAIL_BYTES", size // 4)
    log = session.dir / "messages.jsonl"
    seen, _ = load_log(log, size // 4)  # a reader, before the next open
    with Session.open(session.dir) as reloaded:
        assert index_of(session.dir) == rebuilt(session.dir)
        (session.dir / offsets.INDEX_NAME).unlink()
        full, _ = load_log(log, size // 4)
        for view in (seen, reloaded.view):
            assert [m.content for m in view.messages] == [m.content for m in full.messages]
            assert (view.left_out, view.message_count, view.rewind_points) == \
                (full.left_out, full.message_count, full.rewind_points)
        assert all(not m.content.endswith("after") for m in full.messages)  # the rewind holds


def test_a_fork_of_a_conversation_opened_from_its_tail_still_says_what_it_left_out(monkeypatch):
    """The fork holds the tail, its first message carrying the note; its view says how many
    records were left out, so the chat offers to compact it and a headless turn sends what fits."""
    from iota.sessions import manage

    session = long_session(60)
    tail = (session.dir / "messages.jsonl").stat().st_size // 4
    monkeypatch.setattr(bundle_module, "TAIL_BYTES", tail)
    monkeypatch.setattr(manage, "TAIL_BYTES", tail)
    with Session.open(session.dir) as original:
        view = original.view
    assert view.left_out > 0
    with manage.fork_bundle(session.dir) as child:
        assert child.view.left_out == view.left_out
        assert [m.content for m in child.view.messages] == [m.content for m in view.messages]
