"""A full disk, for real: HOME on a 3 MiB tmpfs, filled while the bot runs. The reply shows, the
status row says so, nothing ends the chat, and once there is room every record lands in order.
Needs root (to mount the tmpfs); skipped with the reason elsewhere."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

BOT = "  coder:\n    mode: bot\n    model: m\n    journal: true\n"


@pytest.fixture
def small_home(iota):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(iota.home)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield iota.home
    finally:
        subprocess.run(["umount", "-l", str(iota.home)], check=False)


def fill(directory) -> os.PathLike:
    """Fill the file system of `directory` to the last byte; return the filler to delete."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        chunk = b"\0" * 65536
        while True:
            try:
                out.write(chunk)
            except OSError:
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]
    return filler


def test_a_full_disk_keeps_what_was_shown_and_writes_it_in_order_once_there_is_room(iota, terminal, small_home):
    iota.write_config(BOT)
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=30, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    iota.model.reply("first answer")
    screen.type("hello")
    screen.send_keys("Enter")
    screen.wait_for("first answer")
    filler = fill(small_home)
    long_reply = " ".join(["word"] * 300) + " END-OF-REPLY"
    iota.model.reply(long_reply)
    screen.type("hi")
    screen.send_keys("Enter")
    screen.wait_for("END-OF-REPLY")
    screen.wait_for("not saved: disk full")
    # (Whether a record fits depends on the room left in the log's last page: the actor-level
    # tests in tests/actors/test_recording.py fail the log itself and check nothing unsaved is
    # sent. Here it is meta.json, a new file, that cannot be written, and the journal.)
    assert screen.capture().count("Journal: ") <= 1
    os.unlink(filler)
    screen.wait_for("Saved again", timeout=20)  # the timer's retry: nothing more is typed
    screen.wait_for_gone("not saved: disk full")  # the status row follows the notice
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    pointer = json.loads((paths.bots_dir() / "coder" / "bot.json").read_text())
    log = paths.sessions_dir() / pointer["session"] / "messages.jsonl"
    said = [(r["role"], r.get("content")) for r in map(json.loads, log.read_text().splitlines())
            if r["role"] in ("user", "assistant") and not r.get("notice")]
    assert said == [("user", "hello"), ("assistant", "first answer"), ("user", "hi"), ("assistant", long_reply)]
    meta = json.loads((log.parent / "meta.json").read_text())
    assert meta["message_count"] == 4
