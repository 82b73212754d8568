"""Finding session bundles (resolving an id's prefix) and `iota list sessions` (iota.sessions.listing)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from iota.errors import AmbiguousSession, SessionError, SessionNotFound
from iota.paths import project_sessions_dir, sessions_dir
from iota.sessions.bundle import Session
from iota.sessions.listing import SessionInfo, format_session_list, list_sessions, resolve_session
from tests.iota.sessions.test_bundle import make_bundle

# -- resolving -------------------------------------------------------------------------------------------


def test_an_exact_case_sensitive_match_wins_over_prefixes():
    for name in ("abc", "abcd", "ABC"):
        make_bundle(sessions_dir(), name)
    assert resolve_session("abc").name == "abc"
    assert resolve_session("ABC").name == "ABC"


def test_a_prefix_matches_ignoring_case():
    make_bundle(sessions_dir(), "k7m2aaaaaaaa")
    make_bundle(sessions_dir(), "x1aaaaaaaaaa")
    assert resolve_session("K7M").name == "k7m2aaaaaaaa"


def test_no_match_and_several_matches_are_errors():
    make_bundle(sessions_dir(), "k7bbbbbbbbbb")
    make_bundle(project_sessions_dir(Path("/p")), "k7aaaaaaaaaa")
    with pytest.raises(SessionNotFound, match='^no session matches "zz"$'):
        resolve_session("zz")
    with pytest.raises(AmbiguousSession, match='^session id "k7" is ambiguous: k7aaaaaaaaaa, k7bbbbbbbbbb$'):
        resolve_session("k7")


def test_the_scoped_view_is_searched_first_and_all_sessions_only_on_no_match():
    scope = project_sessions_dir(Path("/work/p1"))
    make_bundle(scope, "k7aaaaaaaaaa")
    make_bundle(sessions_dir(), "k7bbbbbbbbbb")
    assert resolve_session("k7", scope) == scope / "k7aaaaaaaaaa"
    assert resolve_session("k7b", scope) == sessions_dir() / "k7bbbbbbbbbb"
    make_bundle(scope, "k7cccccccccc")
    with pytest.raises(AmbiguousSession, match="k7aaaaaaaaaa, k7cccccccccc$"):
        resolve_session("k7", scope)


def test_a_directory_without_meta_json_is_not_a_bundle():
    (sessions_dir() / "k7nometa0000").mkdir(parents=True)
    with pytest.raises(SessionNotFound):
        resolve_session("k7n")
    with pytest.raises(SessionNotFound, match="^session k7nometa0000 not found$"):
        Session.open(sessions_dir() / "k7nometa0000")
    assert list_sessions() == []


def test_an_id_that_could_not_be_one_is_invalid():
    with pytest.raises(SessionError, match=r'^invalid session id "\.\./x"$'):
        resolve_session("../x")


# -- iota list sessions --------------------------------------------------------------------------------------

NOW = datetime(2026, 8, 31, 12, 0, 0, tzinfo=timezone.utc)


def info(name: str, ago: timedelta | None, title: str = "", count: int = 1) -> SessionInfo:
    stamp = (NOW - ago).isoformat() if ago is not None else "yesterday-ish"
    return SessionInfo(name, Path(name), title, "claude", stamp, count)


def test_the_session_list_format():
    sessions = [
        info("a1", timedelta(seconds=59), "fix the build", 4),
        info("bbbbbbbbbbbb", timedelta(seconds=60)),
        info("c3", timedelta(minutes=59, seconds=59)),
        info("d4", timedelta(hours=1)),
        info("e5", timedelta(hours=23, minutes=59)),
        info("f6", None),
    ]
    assert format_session_list(sessions, NOW) == "\n".join([
        "Sessions:",
        "            a1  fix the build · claude · just now · 4 msgs",
        "  bbbbbbbbbbbb  (untitled) · claude · 1m ago · 1 msgs",
        "            c3  (untitled) · claude · 59m ago · 1 msgs",
        "            d4  (untitled) · claude · 1h ago · 1 msgs",
        "            e5  (untitled) · claude · 23h ago · 1 msgs",
        "            f6  (untitled) · claude · unknown · 1 msgs",
    ])
    assert format_session_list([], NOW) == "No saved sessions."


@pytest.fixture
def utc_local_time(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_older_sessions_show_a_local_date_and_time(utc_local_time):
    old = SessionInfo("a1", Path("a1"), "", "m", "2026-08-01T03:04:05+08:00", 2)
    assert format_session_list([old], NOW).endswith("a1  (untitled) · m · 2026-07-31 19:04 · 2 msgs")
    # A stamp without an offset is local time.
    naive = SessionInfo("b2", Path("b2"), "", "m", "2026-08-31T11:55:00", 2)
    assert format_session_list([naive], NOW).endswith("b2  (untitled) · m · 5m ago · 2 msgs")


def test_every_bundle_is_listed_newest_first_and_unknown_times_last():
    make_bundle(sessions_dir(), "old000000000", updated_at="2026-01-01T00:00:00+00:00")
    make_bundle(project_sessions_dir(Path("/w/p")), "new000000000", updated_at="2026-03-01T09:00:00+09:00")
    make_bundle(sessions_dir(), "mid000000000", updated_at="2026-02-01T00:00:00-05:00")
    make_bundle(sessions_dir(), "bad000000000", updated_at="soon")
    (make_bundle(sessions_dir(), "torn00000000") / "meta.json").write_text("{")
    assert [s.id for s in list_sessions()] == [
        "new000000000", "mid000000000", "old000000000", "bad000000000", "torn00000000",
    ]
    assert [s.id for s in list_sessions(project_sessions_dir(Path("/w/p")))] == ["new000000000"]
