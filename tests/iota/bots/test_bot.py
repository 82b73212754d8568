"""Bots: the requirement checks, the start sequence, resume notices, and who owns a session."""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from iota.bots import bot as bots
from iota.bots.bot import (
    BotStart,
    bot_session_ids,
    check_bot,
    check_bot_run,
    check_not_bot_session,
    open_bot,
    owning_bot,
    session_of,
    system_record_change,
)
from iota.config.settings import Config, ResolvedModel, resolve_model
from iota.config.entries import AgentConfig, ModelConfig, ProviderConfig
from iota.errors import BotError, LockingUnsupported, SessionLocked
from iota.messages import Message
from iota.paths import bots_dir, sessions_dir
from iota.sessions.bundle import Session, read_meta, render_meta, write_atomically
from iota.sessions.listing import list_sessions

REPO = Path(__file__).resolve().parents[3]
PROJECT = Path("/work/iota")
NOW = datetime.fromisoformat("2026-10-02T09:00:00+00:00")

# Takes a bot's lock the way another iota process running the bot would, then waits.
HOLDER = """
import sys
from pathlib import Path
from iota.sessions import locking
lock = locking.acquire(Path(sys.argv[1]), lambda pid: "refused")
print("held", flush=True)
sys.stdin.read()
"""


def bot(name: str = "coder", *, agent: dict | None = None, model: dict | None = None,
        model_name: str = "m") -> tuple[AgentConfig, ResolvedModel]:
    """A bot entry and its resolved model, built in memory so nothing is read or written."""
    provider = ProviderConfig(name="local", type="openai", url="http://127.0.0.1:1")
    entry = AgentConfig(name=name, mode="bot", model=model_name, **(agent or {}))
    config = Config(providers={"local": provider},
                    models={model_name: ModelConfig(name=model_name, provider="local", id=f"{model_name}-1",
                                                    **(model or {}))},
                    agents={name: entry})
    return entry, resolve_model(config, entry)


def start(name: str = "coder", project: Path = PROJECT, now: datetime = NOW, **model_options) -> BotStart:
    _, model = bot(name, **model_options)
    return open_bot(name, model=model, project_root=project, now=now)


def everything_under(home: Path) -> list[Path]:
    return sorted(home.rglob("*"))


def set_updated_at(bundle: Path, stamp: str) -> None:
    meta = read_meta(bundle)
    meta["updated_at"] = stamp
    write_atomically(bundle / "meta.json", render_meta(meta))


@pytest.fixture
def utc():
    """Local time is UTC, so `last activity` reads the same on every machine."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


# -- the requirement checks ------------------------------------------------------------------------


def test_a_bot_that_meets_every_requirement_passes():
    check_bot(*bot(agent={"context_window": 32_000}))
    check_bot(*bot())  # the built-in 128k


@pytest.mark.parametrize(("agent", "model", "message"), [
    ({"context_window": 8200}, {},
     'bot "coder" needs a context window of at least 32k, this one is 8.2k (context_window: in its config)'),
    ({"context_window": 31_999}, {"context_window": 200_000},
     'bot "coder" needs a context window of at least 32k, this one is 32k (context_window: in its config)'),
    ({}, {"context_window": 16_000},
     'bot "coder" needs a context window of at least 32k, this one is 16k (context_window: in its config)'),
    ({}, {"reports_usage": False}, 'bot "coder" needs a chat model that reports token usage and supports tools'),
    ({}, {"supports_tools": False}, 'bot "coder" needs a chat model that reports token usage and supports tools'),
    ({"no_save": True}, {}, "agents.coder: no_save contradicts mode: bot"),
])
def test_each_requirement_is_refused_with_its_message_and_nothing_on_disk(fake_home, agent, model, message):
    with pytest.raises(BotError) as refused:
        check_bot(*bot(agent=agent, model=model))
    assert str(refused.value) == message
    assert everything_under(fake_home) == []


def test_a_small_default_window_names_the_default():
    agent, model = bot()
    small = dataclasses.replace(model, context_window=8200, window_source="default")
    with pytest.raises(BotError, match=r"this one is 8\.2k \(the default\)$"):
        check_bot(agent, small)


@pytest.mark.parametrize("name", ["x y", "-coder", ".coder", "_coder", "a" * 65, "a/b", "bot\u00e9", ""])
def test_a_name_that_cannot_be_a_directory_is_refused_and_nothing_is_created(fake_home, name):
    with pytest.raises(BotError, match=r'^bot name ".*" must be letters, digits, "\.", "_" or "-", at most '
                                       r"64 characters, starting with a letter or digit$"):
        check_bot(*bot(name))
    with pytest.raises(BotError):
        start(name)
    assert everything_under(fake_home) == []


def test_the_name_message_quotes_the_name():
    with pytest.raises(BotError) as refused:
        check_bot(*bot("x y"))
    assert str(refused.value) == ('bot name "x y" must be letters, digits, ".", "_" or "-", at most 64 characters, '
                                  "starting with a letter or digit")


@pytest.mark.parametrize("name", ["a" * 64, "9", "coder.v2_x-1", "Coder"])
def test_names_that_can_be_directories_pass(name):
    check_bot(*bot(name))


def test_the_flags_a_bot_cannot_honour(fake_home):
    with pytest.raises(BotError, match="^bot agents are interactive-only for now; run iota run coder$"):
        check_bot_run("coder", headless=True, no_save=False)
    with pytest.raises(BotError, match="^--no-save contradicts mode: bot$"):
        check_bot_run("coder", headless=False, no_save=True)
    check_bot_run("coder", headless=False, no_save=False)
    assert everything_under(fake_home) == []


# -- the first start and the next ------------------------------------------------------------------


def test_the_first_start_makes_the_directory_the_memory_the_bundle_and_then_the_pointer():
    with start() as first:
        directory = bots_dir() / "coder"
        assert first.dir == directory and first.created and first.notices == []
        assert (directory / "lock").read_text() == str(os.getpid())
        assert "bot: coder" in (directory / "MEMORY.md").read_text()
        bundle = first.session.dir
        assert bundle.parent == sessions_dir()  # flat, never in a project bucket
        assert [info.id for info in list_sessions()] == [first.session.id]
        meta = read_meta(bundle)
        assert (meta["title"], meta["agent"], meta["cwd"]) == ("coder", "coder", str(PROJECT))
        assert (meta["provider"], meta["model"], meta["message_count"]) == ("local", "m-1", 0)
        pointer = directory / "bot.json"
        assert pointer.read_bytes() == b'{"session":"%s"}\n' % first.session.id.encode()
        assert pointer.stat().st_mode & 0o777 == 0o644


def test_the_pointer_is_published_only_after_the_bundle_exists(monkeypatch):
    sessions_at_publish = []

    def failing_publish(path: Path, data: bytes) -> None:
        sessions_at_publish.append([info.id for info in list_sessions()])
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(bots, "write_atomically", failing_publish)
    with pytest.raises(BotError) as refused:
        start()
    pointer = bots_dir() / "coder" / "bot.json"
    assert str(refused.value) == f"cannot write {pointer}: Input/output error; bot coder was not started"
    [orphan] = list_sessions()
    assert sessions_at_publish == [[orphan.id]]
    assert not pointer.exists()
    # Both locks were let go: the bundle and the bot can be opened again.
    Session.open(orphan.dir).close()
    monkeypatch.undo()
    start().close()


def test_the_next_start_opens_the_same_session():
    with start() as first:
        session_id = first.session.id
    with start() as second:
        assert second.session.id == session_id and not second.created
    assert [info.id for info in list_sessions()] == [session_id]


def test_a_second_process_is_refused_with_the_holders_pid_and_a_killed_holder_never_blocks():
    lock = bots_dir() / "coder" / "lock"
    lock.parent.mkdir(parents=True)
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        with pytest.raises(SessionLocked) as refused:
            start()
        assert str(refused.value) == f"bot coder is open in another iota process (pid {child.pid})"
        assert not (lock.parent / "bot.json").exists() and not sessions_dir().exists()
    finally:
        child.kill()
        child.wait()
    start().close()


def test_the_lock_is_held_until_close_even_within_one_process():
    first = start()
    with pytest.raises(SessionLocked, match=f"^bot coder is open in another iota process \\(pid {os.getpid()}\\)$"):
        start()
    first.close()
    first.close()  # harmless twice
    start().close()


def test_a_filesystem_that_cannot_lock_is_refused(monkeypatch):
    def cannot_lock(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", cannot_lock)
    with pytest.raises(LockingUnsupported) as refused:
        start()
    directory = bots_dir() / "coder"
    assert str(refused.value) == (f"file locking is not supported under {directory}; "
                                  "iota cannot open or delete a session there")
    assert not (directory / "bot.json").exists() and not (directory / "MEMORY.md").exists()
    assert not sessions_dir().exists()


def test_a_new_name_is_a_new_bot_and_the_old_one_stays():
    with start("coder") as coder:
        pass
    with start("coder2") as coder2:
        pass
    assert sorted(path.name for path in bots_dir().iterdir()) == ["coder", "coder2"]
    assert coder.session.id != coder2.session.id
    assert {info.id for info in list_sessions()} == {coder.session.id, coder2.session.id}


# -- a pointer that cannot be followed -------------------------------------------------------------


def remove_bundle(bundle: Path) -> None:
    for path in sorted(bundle.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    bundle.rmdir()


def pointer_of(name: str = "coder") -> Path:
    return bots_dir() / name / "bot.json"


def test_a_lost_pointer_is_rebuilt_from_the_bots_newest_session_with_a_notice():
    with start() as first:
        first.session.append([Message("user", "remember the seed 17")])
    older = Session.create(sessions_dir(), provider="p", model="m", agent="coder", title="coder")
    older.close()
    set_updated_at(older.dir, "2020-01-01T00:00:00+00:00")
    # Sessions that are not the bot's: another agent's, and a helper's child session.
    Session.create(sessions_dir(), provider="p", model="m", agent="other").close()
    Session.create(sessions_dir(), provider="p", model="m", agent="coder", parent=first.session.id).close()
    set_updated_at(first.session.dir, "2026-10-01T09:00:00+00:00")
    pointer_of().unlink()
    assert session_of("coder") == first.session.id and owning_bot(first.session.id) == "coder"
    with start() as again:
        assert again.session.id == first.session.id and not again.created
        assert again.warnings == [f"bot coder: bot.json was missing; resumed its newest session {first.session.id}"]
        assert [m.content for m in again.session.view.messages] == ["remember the seed 17"]
    assert pointer_of().read_bytes() == b'{"session":"%s"}\n' % first.session.id.encode()
    with start() as third:
        assert third.warnings == []


@pytest.mark.parametrize(("data", "why"), [
    (b"{not json", "bot.json was not valid JSON"),
    (b"garbage", "bot.json was not valid JSON"),
    (b"[]", "bot.json held no session id"),
    (b'{"other": "abc"}', "bot.json held no session id"),
    (b'{"session": 42}', "bot.json held no session id"),
    (b'{"session": "../../elsewhere"}', "bot.json held no session id"),
])
def test_a_damaged_pointer_is_rebuilt_from_the_newest_session(data, why):
    with start() as first:
        pass
    pointer_of().write_bytes(data)
    assert bot_session_ids() == {first.session.id}
    with start() as again:
        assert again.session.id == first.session.id
        assert again.warnings == [f"bot coder: {why}; resumed its newest session {first.session.id}"]
    assert pointer_of().read_bytes() == b'{"session":"%s"}\n' % first.session.id.encode()


def test_a_damaged_pointer_with_no_session_left_starts_a_new_one_and_says_so():
    pointer_of().parent.mkdir(parents=True)
    pointer_of().write_bytes(b'{"session": 42}')
    with start() as fresh:
        assert fresh.created
        assert fresh.warnings == ["bot coder: bot.json held no session id and no session of the bot was found; "
                                  "a new session starts (memory is kept)"]
    assert pointer_of().read_bytes() == b'{"session":"%s"}\n' % fresh.session.id.encode()


def test_a_first_start_says_nothing_but_a_lost_pointer_with_memory_does():
    with start() as first:
        assert first.warnings == []
    remove_bundle(first.session.dir)
    pointer_of().unlink()
    with start() as fresh:
        assert fresh.created and fresh.warnings == [
            "bot coder: bot.json was missing and no session of the bot was found; a new session starts (memory is kept)"]


def test_a_pointer_to_a_gone_session_takes_the_newest_other_one():
    with start() as first:
        pass
    other = Session.create(sessions_dir(), provider="p", model="m", agent="coder", title="coder")
    other.close()
    pointer_of().write_bytes(b'{"session":"%s"}\n' % first.session.id.encode())
    remove_bundle(first.session.dir)
    with start() as again:
        assert again.session.id == other.id
        assert again.warnings == [f"bot coder: its session {first.session.id} is gone; "
                                  f"resumed its newest session {other.id}"]
    remove_bundle(other.dir)
    with start() as fresh:
        assert fresh.created and fresh.warnings == [
            f"bot coder: its session {other.id} is gone and no session of the bot was found; "
            "a new session starts (memory is kept)"]
    assert (bots_dir() / "coder" / "MEMORY.md").exists()


def test_an_unreadable_pointer_says_to_make_it_readable():
    pointer = bots_dir() / "coder" / "bot.json"
    pointer.mkdir(parents=True)  # reading a directory fails the way an unreadable file does
    with pytest.raises(BotError) as refused:
        start()
    assert str(refused.value) == (f"cannot tell which session bot coder has: cannot read {pointer}: Is a directory; "
                                  f"make {pointer} readable, or delete it (without it the bot resumes its newest "
                                  "session; memory is kept)")
    assert not sessions_dir().exists()


# -- resume notices and the config winning ---------------------------------------------------------


@pytest.mark.parametrize(("away", "notice"), [
    (timedelta(minutes=59, seconds=59), None),
    (timedelta(hours=1), "Resumed after 1 hour (last activity 2026-09-29 18:04)"),
    (timedelta(hours=23, minutes=59), "Resumed after 23 hours (last activity 2026-09-29 18:04)"),
    (timedelta(days=1), "Resumed after 1 day (last activity 2026-09-29 18:04)"),
    (timedelta(days=3, hours=5), "Resumed after 3 days (last activity 2026-09-29 18:04)"),
])
def test_the_away_notice_starts_at_an_hour_in_the_largest_whole_unit(utc, away, notice):
    with start() as first:
        pass
    # Written in another offset; the notice reads it in local time.
    set_updated_at(first.session.dir, "2026-09-30T02:04:00+08:00")
    last = datetime.fromisoformat("2026-09-29T18:04:00+00:00")
    with start(now=last + away) as resumed:
        assert resumed.notices == ([notice] if notice else [])


def test_the_away_notice_is_measured_before_this_start_stamps_the_session(utc):
    with start() as first:
        pass
    set_updated_at(first.session.dir, "2026-09-29T18:04:00+00:00")
    # A changed model rewrites meta (and so its updated_at) as the bot starts.
    with start(now=NOW, model_name="m2") as resumed:
        assert resumed.notices == ["Resumed after 2 days (last activity 2026-09-29 18:04)"]
        assert read_meta(resumed.session.dir)["updated_at"] != "2026-09-29T18:04:00+00:00"


def test_a_start_in_another_project_says_so_and_moves_the_session_there():
    with start(project=Path("/work/iota")) as first:
        pass
    with start(project=Path("/work/herdr"), now=datetime.now().astimezone()) as moved:
        assert moved.notices == ["Resumed in a different project: /work/iota → /work/herdr"]
        assert moved.session.meta["cwd"] == "/work/herdr"
    assert read_meta(first.session.dir)["cwd"] == "/work/herdr"
    with start(project=Path("/work/herdr"), now=datetime.now().astimezone()) as again:
        assert again.notices == []


def test_both_notices_time_first(utc):
    with start() as first:
        pass
    set_updated_at(first.session.dir, "2026-09-29T18:04:00+00:00")
    with start(project=Path("/work/herdr")) as resumed:
        assert resumed.notices == ["Resumed after 2 days (last activity 2026-09-29 18:04)",
                                   "Resumed in a different project: /work/iota → /work/herdr"]


def test_the_config_wins_at_every_start():
    with start(model={"temperature": 0.5, "effort": "high"}) as first:
        assert (first.session.meta["temperature"], first.session.meta["effort"]) == (0.5, "high")
    with start(model_name="other", model={"top_p": 0.9}) as second:
        pass
    meta = read_meta(first.session.dir)
    assert (meta["provider"], meta["model"], meta["top_p"]) == ("local", "other-1", 0.9)
    assert "temperature" not in meta and "effort" not in meta
    assert meta["title"] == "coder" and second.session.id == first.session.id


# -- the system prompt from the config -------------------------------------------------------------


def test_a_changed_system_prompt_becomes_a_new_system_record():
    view = [Message("system", "be brief"), Message("user", "hi")]
    assert system_record_change(view, "be brief") is None
    changed = system_record_change(view, "be thorough")
    assert changed is not None and changed.to_record() == {"role": "system", "content": "be thorough"}
    assert system_record_change([Message("user", "hi")], "") is None
    first = system_record_change([], "be brief")
    assert first is not None and first.to_record() == {"role": "system", "content": "be brief"}
    assert bots.SYSTEM_PROMPT_UPDATED == "system prompt updated from config"


def test_a_removed_system_prompt_is_recorded_as_cleared_and_loads_as_none():
    cleared = system_record_change([Message("system", "be brief")], "")
    assert cleared is not None and cleared.to_record() == {"role": "system", "system_cleared": True}
    with start() as first:
        first.session.append([Message("system", "be brief"), Message("user", "hi"), cleared])
    with start() as again:
        assert [m.role for m in again.session.view.messages] == ["user"]
        assert system_record_change(again.session.view.messages, "") is None


# -- which sessions belong to bots -----------------------------------------------------------------


def test_owning_bot_and_the_resume_refusal():
    assert owning_bot("abc") is None and bot_session_ids() == set()
    assert not bots_dir().exists()
    with start("coder") as coder, start("helper") as helper:
        pass
    (bots_dir() / "fresh").mkdir()  # a bot that never got a pointer owns nothing
    assert owning_bot(coder.session.id) == "coder" and owning_bot(helper.session.id) == "helper"
    assert owning_bot("0000000000000") is None
    assert bot_session_ids() == {coder.session.id, helper.session.id}
    with pytest.raises(BotError) as refused:
        check_not_bot_session(coder.session.id)
    assert str(refused.value) == f"session {coder.session.id} belongs to bot coder; run iota run coder"
    check_not_bot_session("0000000000000")


def test_a_damaged_pointer_still_guards_its_session_and_an_unreadable_one_blocks_the_checks():
    with start("coder"):
        pass
    with start("broken") as broken:
        pass
    pointer = pointer_of("broken")
    pointer.write_text("{")  # damaged: the bot's newest session is still its own
    assert owning_bot(broken.session.id) == "broken"
    with pytest.raises(BotError, match="belongs to bot broken"):
        check_not_bot_session(broken.session.id)
    pointer.unlink()
    pointer.mkdir()  # unreadable: nobody can tell
    with pytest.raises(BotError) as refused:
        owning_bot("k7")
    assert str(refused.value) == (
        f"cannot tell whether session k7 belongs to a bot: cannot read {pointer}: Is a directory; "
        f"make {pointer} readable, or delete it (without it the bot resumes its newest session; memory is kept)")
    with pytest.raises(BotError, match="^cannot tell whether session k7 belongs to a bot"):
        check_not_bot_session("k7")
    with pytest.raises(BotError, match="^cannot tell which sessions belong to bots: cannot read"):
        bot_session_ids()
