"""messages.idx, the offset index beside the log: a session opens from where its view begins,
whatever happened to the index (a never-compacted log's tail: test_tail_open.py)."""

from __future__ import annotations

import errno
import json
import random
from pathlib import Path

import pytest

from iota.messages import Message, ToolCall
from iota.paths import sessions_dir
from iota.sessions import offsets
from iota.sessions.bundle import Session, new_session_id
from tests.iota.sessions.test_bundle import PREAMBLE, compaction, make_bundle, new_session, user, write_lines


def index_of(bundle: Path) -> list[offsets.Entry]:
    """The entries in a bundle's messages.idx."""
    data = (bundle / offsets.INDEX_NAME).read_bytes()
    assert data[:16] == b"iota-idx\x02" + bytes(7) and len(data) % 32 == 16, "not an index"
    return [offsets.Entry.unpack(i, data[16 + 32 * i: 48 + 32 * i]) for i in range(len(data) // 32)]


def rebuilt(bundle: Path) -> list[offsets.Entry]:
    """The entries read afresh from the whole log."""
    with open(bundle / "messages.jsonl", "rb") as f:
        index = offsets.rebuilt(f)
    return [index.entry(i) for i in range(len(index))]


def line_start(bundle: Path, content: str) -> int:
    """Where the record with this content starts in the log."""
    offset = 0
    for line in (bundle / "messages.jsonl").read_bytes().splitlines(keepends=True):
        if json.loads(line).get("content") == content:
            return offset
        offset += len(line)
    raise AssertionError(f"no record {content!r}")


def scribble_before(log: Path, end: int, keep: tuple[int, ...] = ()) -> None:
    """Turn every line that starts before `end` into garbage, except those starting at `keep`:
    a load that read any of them would warn of unreadable lines."""
    data = bytearray(log.read_bytes())
    offset = 0
    for line in bytes(data[:end]).splitlines(keepends=True):
        if offset not in keep:
            data[offset: offset + len(line) - 1] = b"#" * (len(line) - 1)
        offset += len(line)
    log.write_bytes(bytes(data))


# -- the writer keeps it true --------------------------------------------------------------------------


def test_the_writers_index_is_the_one_a_reading_of_the_whole_log_gives():
    call = ToolCall("c1", "read", {"path": "a"})
    with new_session() as session:
        session.append([Message("system", "sys")] + [user(f"m{i}") for i in range(6)])
        session.append([Message("assistant", tool_calls=[call]), Message("tool", "ok", tool_call_id="c1")])
        session.append([compaction("s", 5), user("x"), Message("system", "sys2")])
        session.rewind(line_start(session.dir, "x"), "x")
        session.append([user("y"), Message("assistant", "z")])
        entries = index_of(session.dir)
        assert entries == rebuilt(session.dir)
        assert [entry.kind for entry in entries] == [offsets.SYSTEM_KIND] + [offsets.CONVERSATION_KIND] * 8 + \
            [offsets.COMPACTION_KIND] + [offsets.CONVERSATION_KIND] * 2  # x and sys2 were rewound
        y = entries[-2]
        assert (y.conversation, y.systems, y.last_system, y.last_compaction) == (8, 1, 0, 9)


# -- opening from the index ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "after, expected",
    [
        ([user("x")], ["sys", PREAMBLE.format("s") + "m94", "m95", "m96", "m97", "m98", "m99", "x"]),
        ([Message("system", "sys2"), user("x")],
         ["sys2", PREAMBLE.format("s") + "m94", "m95", "m96", "m97", "m98", "m99", "x"]),
        ([Message("system", system_cleared=True)],
         [PREAMBLE.format("s") + "m94", "m95", "m96", "m97", "m98", "m99"]),
    ],
)
def test_a_compacted_log_is_loaded_without_reading_what_came_before(after, expected):
    with new_session() as session:
        session.append([Message("system", "sys")] + [user(f"m{i}") for i in range(100)])
        session.append([compaction("s", 94)] + after)
    scribble_before(session.dir / "messages.jsonl", line_start(session.dir, "m94"), keep=(0,))
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == expected
        assert reloaded.view.warnings == []  # the scribbled lines were never read
        assert reloaded.conversation_count == 100 + sum(m.role == "user" for m in after)
        assert reloaded.view.message_count == 101 + len(after)


def test_a_compaction_that_retains_nothing_starts_at_its_marker():
    with new_session() as session:
        session.append([user(f"m{i}") for i in range(10)] + [compaction("s", 10)])
        session.append([user("x")])
    scribble_before(session.dir / "messages.jsonl", line_start(session.dir, "s"))
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == [PREAMBLE.format("s") + "x"]
        assert reloaded.view.warnings == []


def test_the_last_system_record_before_the_start_is_read_on_its_own():
    with new_session() as session:
        session.append([Message("system", "old")] + [user(f"m{i}") for i in range(5)] + [Message("system", "new")])
        session.append([user(f"n{i}") for i in range(5)] + [compaction("s", 8)])
    log = session.dir / "messages.jsonl"
    scribble_before(log, line_start(session.dir, "n3"), keep=(line_start(session.dir, "new"),))
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == ["new", PREAMBLE.format("s") + "n3", "n4"]
        assert reloaded.view.warnings == []


def test_a_marker_another_program_appended_is_honoured_even_reaching_back():
    with new_session() as session:
        session.append([user(f"m{i}") for i in range(20)] + [compaction("s", 18)])
    # Appended without the index: it is read at the next open, and it retains more.
    write_lines(session.dir / "messages.jsonl", {"role": "compaction", "content": "t", "compacted_through": 15})
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == [PREAMBLE.format("t") + "m15", "m16", "m17", "m18", "m19"]
    assert index_of(session.dir) == rebuilt(session.dir)


# -- an index that does not hold up ---------------------------------------------------------------------------


def _entry_bytes(bundle: Path) -> bytearray:
    return bytearray((bundle / offsets.INDEX_NAME).read_bytes())


def _set_word(data: bytearray, entry: int, word: int, value: int) -> None:
    at = 16 + 32 * entry + 8 * word
    data[at: at + 8] = value.to_bytes(8, "little")


# The log of the next test, as entries: sys, m0 … m19, the marker (through 18), x: 23 entries.
SPOILS = {
    "missing": lambda path, data: path.unlink(),
    "empty": lambda path, data: path.write_bytes(b""),
    "not an index": lambda path, data: path.write_bytes(b"#" * len(data)),
    "header only": lambda path, data: path.write_bytes(bytes(data[:16])),
    "a torn last entry": lambda path, data: path.write_bytes(bytes(data[:-5])),
    "the last entries lost": lambda path, data: path.write_bytes(bytes(data[:16 + 32 * 20])),
    "entries past the end": lambda path, data: (_set_word(data, 22, 0, (1 << 56) | 10 ** 6),
                                                path.write_bytes(bytes(data))),
    "the marker's hash": lambda path, data: (_set_word(data, 21, 1, 7), path.write_bytes(bytes(data))),
    "the start's offset moved": lambda path, data: (_set_word(data, 19, 0, (1 << 56) | 5), path.write_bytes(bytes(data))),
    "the start's count": lambda path, data: (_set_word(data, 19, 2, 5 | 1 << 32), path.write_bytes(bytes(data))),
    "the system's hash": lambda path, data: (_set_word(data, 0, 1, 7), path.write_bytes(bytes(data))),
    # Self-consistent but wrong: the "system record" is a user message.
    "a user line as the system": lambda path, data: (data.__setitem__(slice(16, 32), data[48:64]),
                                                     data.__setitem__(slice(23, 24), b"\x02"),
                                                     path.write_bytes(bytes(data))),
}


@pytest.mark.parametrize("spoil", SPOILS.values(), ids=SPOILS.keys())
def test_an_index_that_does_not_hold_up_is_rebuilt_and_the_view_is_right(spoil):
    with new_session() as session:
        session.append([Message("system", "sys")] + [user(f"m{i}") for i in range(20)])
        session.append([compaction("s", 18), user("x")])
    path = session.dir / offsets.INDEX_NAME
    spoil(path, _entry_bytes(session.dir))
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == ["sys", PREAMBLE.format("s") + "m18", "m19", "x"]
        assert reloaded.conversation_count == 21 and reloaded.view.message_count == 22
        assert reloaded.view.warnings == []
    assert index_of(session.dir) == rebuilt(session.dir)


def test_a_log_written_without_an_index_gets_one_and_then_opens_from_it():
    bundle = make_bundle(sessions_dir(), new_session_id(), model="m")
    write_lines(bundle / "messages.jsonl", *[{"role": "user", "content": f"m{i}"} for i in range(30)],
                {"role": "compaction", "content": "s", "compacted_through": 28})
    Session.open(bundle).close()
    assert index_of(bundle) == rebuilt(bundle)
    scribble_before(bundle / "messages.jsonl", line_start(bundle, "m28"))
    with Session.open(bundle) as reloaded:
        assert [m.content for m in reloaded.view.messages] == [PREAMBLE.format("s") + "m28", "m29"]
        assert reloaded.view.warnings == []


def test_an_index_that_cannot_be_appended_to_is_deleted_so_no_entry_goes_missing(monkeypatch):
    with new_session() as session:
        session.append([user(f"m{i}") for i in range(5)])
        real_write = offsets.os.write

        def full_disk(fd, data):
            if fd == session._offsets._fd:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(fd, data)

        monkeypatch.setattr(offsets.os, "write", full_disk)
        session.append([user("lost from the index")])
        monkeypatch.setattr(offsets.os, "write", real_write)
        assert not (session.dir / offsets.INDEX_NAME).exists()
        session.append([user("after"), compaction("s", 6)])  # not appended to a file that lost an entry
        assert not (session.dir / offsets.INDEX_NAME).exists()
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == [PREAMBLE.format("s") + "after"]
    assert index_of(session.dir) == rebuilt(session.dir)


def test_a_rewind_to_a_negative_byte_undoes_nothing_and_opens():
    with new_session() as session:
        session.append([user("a"), Message("assistant", "b")])
    write_lines(session.dir / "messages.jsonl", {"role": "rewind", "rewound_to": -5}, {"role": "user", "content": "c"})
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == ["a", "b", "c"]


@pytest.mark.parametrize("seed", range(60))
def test_an_index_of_garbage_behind_a_true_last_entry_never_misplaces_the_view(seed):
    """Random words in the entries (counts, pointers, kinds, offsets; of the last entry, its counts
    and pointers) behind a right header: the open either starts where a clean index would, or
    reads the whole log; it never fails and never shows a different view."""
    rng = random.Random(seed)
    with new_session() as session:
        session.append([Message("system", "sys")] + [user(f"m{i}") for i in range(20)])
        session.append([compaction("s", rng.randrange(0, 21)), user("x")])
    with Session.open(session.dir) as clean:
        expected = [m.content for m in clean.view.messages]
    path = session.dir / offsets.INDEX_NAME
    data = bytearray(path.read_bytes())
    for _ in range(rng.randrange(1, 6)):
        entry = rng.randrange(0, len(data) // 32)
        # The last entry's line and hash stay true (else the index is simply rebuilt), its counts not.
        word = rng.randrange(2 if entry == len(data) // 32 - 1 else 0, 4)
        _set_word(data, entry, word, rng.choice([0, 1, 2 ** 32 + 1, rng.getrandbits(64), rng.getrandbits(33),
                                                 (3 << 56) | rng.randrange(0, 2000)]))
    path.write_bytes(bytes(data))
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == expected
        assert reloaded.view.warnings == []


# -- what another program leaves at messages.idx ------------------------------------------------------------


def _open_within(bundle: Path, seconds: float) -> list[str] | None:
    """The view's contents of `Session.open(bundle)`, or None if it did not return in `seconds`
    (the thread is then freed by opening the planted FIFO's other end)."""
    import threading

    result: list[list[str]] = []

    def opening():
        with Session.open(bundle) as reloaded:
            result.append([m.content for m in reloaded.view.messages])

    thread = threading.Thread(target=opening, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        import os
        fd = os.open(bundle / offsets.INDEX_NAME, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join(5)
        return None
    return result[0]


@pytest.mark.parametrize("plant", ["fifo", "link to a fifo", "link to /dev/zero"])
def test_a_fifo_or_link_at_the_index_neither_hangs_an_open_nor_is_read(plant, tmp_path):
    import os
    with new_session() as session:
        session.append([user("a"), Message("assistant", "b")])
    path = session.dir / offsets.INDEX_NAME
    path.unlink()
    if plant == "fifo":
        os.mkfifo(path)
    elif plant == "link to a fifo":
        os.mkfifo(tmp_path / "elsewhere")
        path.symlink_to(tmp_path / "elsewhere")
    else:
        path.symlink_to("/dev/zero")
    assert _open_within(session.dir, 5) == ["a", "b"], "the open hung on what was planted at messages.idx"
    assert not path.is_symlink() and index_of(session.dir) == rebuilt(session.dir)


def test_a_fifo_planted_at_the_index_while_a_session_is_open_does_not_hang_its_writes():
    import os
    import threading
    with new_session() as session:
        session.append([user("a")])
        path = session.dir / offsets.INDEX_NAME
        session._offsets.close()  # the next append opens the file again, as after an open
        path.unlink()
        os.mkfifo(path)
        thread = threading.Thread(target=session.append, args=([user("b")],), daemon=True)
        thread.start()
        thread.join(5)
        if thread.is_alive():
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            thread.join(5)
            pytest.fail("an append hung on a FIFO at messages.idx")
        assert not path.exists()  # dropped: the next open rebuilds it
    with Session.open(session.dir) as reloaded:
        assert [m.content for m in reloaded.view.messages] == ["a", "b"]


@pytest.mark.parametrize("name", ["messages.idx", "messages.idx.tmp"])
def test_a_link_planted_at_the_index_or_its_temporary_is_never_written_through(name, tmp_path):
    with new_session() as session:
        session.append([user("a"), Message("assistant", "b")])
    outside = tmp_path / "someone else's file"
    outside.write_bytes(b"iota-idx\x02" + bytes(7) + b"keep me")  # even one that looks like an index
    (session.dir / offsets.INDEX_NAME).unlink()  # the open rebuilds it, by way of the temporary
    (session.dir / name).symlink_to(outside)
    with Session.open(session.dir) as reloaded:
        reloaded.append([user("c")])
        assert [m.content for m in reloaded.view.messages] == ["a", "b"]
    assert outside.read_bytes() == b"iota-idx\x02" + bytes(7) + b"keep me"
    assert not (session.dir / offsets.INDEX_NAME).is_symlink() and index_of(session.dir) == rebuilt(session.dir)
