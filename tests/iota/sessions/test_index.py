"""The search index of session logs (iota.sessions.index) and searching it (iota.sessions.search):
caught up a turn at a time, the same whether incremental or rebuilt, rewinds marked, a log
replaced under it read again, a damaged file made again, and queries that cannot be anything
but words."""

from __future__ import annotations

import pytest

from iota.errors import SearchError
from iota.messages import COMPACTION, USER, Message, Usage
from iota.paths import sessions_dir
from iota.sessions.bundle import Session
from iota.sessions.index import LogSource, SearchIndex
from iota.sessions import search as search_module
from iota.sessions.search import match_expression, search
from tests.support.turns import Call, write_turn


@pytest.fixture
def session():
    session = Session.create(sessions_dir(), provider="fake", model="m", agent="helper")
    yield session
    session.close()


@pytest.fixture
def index(tmp_path):
    index = SearchIndex(tmp_path / "index.sqlite")
    yield index
    index.close()


def source(session: Session) -> LogSource:
    return LogSource(session.id, session.dir / "messages.jsonl", "helper")


def found(index: SearchIndex, query: str, **options) -> list[tuple[int, str]]:
    return [(hit.position, hit.kind) for hit in search(index, query, limit=20, **options).hits]


def test_messages_tool_calls_results_and_summaries_are_found_with_their_place(session, index):
    write_turn(session, "look at the scheduler", calls=[Call("shell", {"command": "grep -rn frobnicate ."},
                                                              result="src/x.py:3: frobnicate()")],
               reply="The scheduler calls frobnicate.")
    session.append([Message(COMPACTION, "They looked into the quixotic scheduler.", compacted_through=2,
                            usage=Usage(1, 1))])
    assert index.catch_up([source(session)]) == 5
    # records 2-6: the call, its tool_started mark, the result, the reply, turn_end; 7: the compaction
    assert sorted(found(index, "frobnicate")) == [(2, "reply"), (4, "tool"), (5, "reply")]
    assert found(index, "quixotic") == [(7, "summary")]
    hit = search(index, "scheduler frobnicate", limit=5).hits[0]
    assert hit.session == session.id and hit.agent == "helper" and hit.at is not None
    assert "**frobnicate**" in hit.snippet


def test_a_turn_in_progress_waits_for_its_end_and_is_indexed_once(session, index):
    written = write_turn(session, "first words", ended=False, reply="")
    assert index.catch_up([source(session)]) == 0  # its records are held until turn_end
    assert found(index, "first") == []
    session.append([Message(USER, "more of the same turn", turn=written.turn),
                    Message("turn_end", turn=written.turn)])
    assert index.catch_up([source(session)]) == 2
    assert index.catch_up([source(session)]) == 0
    assert found(index, "first") == [(1, "user")]


def test_catching_up_turn_by_turn_and_rebuilding_give_the_same_index(session, tmp_path):
    incremental = SearchIndex(tmp_path / "a.sqlite")
    for n in range(6):
        write_turn(session, f"question {n} about apples", calls=[Call("read_file", {"path": f"f{n}.py"})])
        incremental.catch_up([source(session)])
    rebuilt = SearchIndex(tmp_path / "b.sqlite")
    rebuilt.catch_up([source(session)])
    rows = "SELECT position, offset, kind, name, at, undone FROM records ORDER BY position"
    assert incremental.db.execute(rows).fetchall() == rebuilt.db.execute(rows).fetchall()
    assert found(incremental, "apples") == found(rebuilt, "apples")
    incremental.close()
    rebuilt.close()


def test_a_rewind_marks_what_it_undid_which_is_found_only_when_asked_for(session, index):
    write_turn(session, "keep the pelican")
    second = write_turn(session, "undo the walrus")
    index.catch_up([source(session)])
    session.rewind(next(offset for offset, text in session.rewind_points() if text == "undo the walrus"), "undo")
    index.catch_up([source(session)])
    assert found(index, "walrus") == []
    assert [hit.undone for hit in search(index, "walrus", limit=5, include_undone=True).hits] == [True]
    assert found(index, "pelican") == [(1, "user")]
    assert second.turn  # the undone turn's records are still in the log
    assert b"walrus" in (session.dir / "messages.jsonl").read_bytes()


def test_a_log_replaced_under_the_index_is_read_again_from_its_start(session, index):
    write_turn(session, "the old zebra text")
    index.catch_up([source(session)])
    log = session.dir / "messages.jsonl"
    session.close()
    log.write_bytes(b"")
    replaced = Session.open(session.dir)
    write_turn(replaced, "a new giraffe text that is long enough to pass the old offset " * 3)
    index.catch_up([source(replaced)])
    assert found(index, "zebra") == []
    assert found(index, "giraffe") == [(1, "user")]
    assert index.db.execute("SELECT value FROM info WHERE key = 'orphans'").fetchone()[0] == "2"
    replaced.close()


def test_an_index_full_of_dropped_rows_is_rebuilt(tmp_path, session, monkeypatch):
    path = tmp_path / "index.sqlite"
    index = SearchIndex(path)
    write_turn(session, "hello there")
    index.catch_up([source(session)])
    index.db.execute("UPDATE info SET value = '20000' WHERE key = 'orphans'")
    index.close()
    again = SearchIndex(path)
    assert again.db.execute("SELECT count(*) FROM logs").fetchone()[0] == 0  # made anew
    again.catch_up([source(session)])
    assert found(again, "hello") == [(1, "user")]
    again.close()


@pytest.mark.parametrize("damage", [b"this is not a database at all" * 100, b""])
def test_an_unreadable_index_file_is_made_again_from_the_logs(tmp_path, session, damage):
    path = tmp_path / "index.sqlite"
    path.write_bytes(damage)
    write_turn(session, "recover me")
    index = SearchIndex(path)
    index.catch_up([source(session)])
    assert found(index, "recover") == [(1, "user")]
    index.close()


def test_a_file_of_another_version_is_rebuilt_by_its_writer_and_refused_by_a_reader(tmp_path, session):
    path = tmp_path / "index.sqlite"
    index = SearchIndex(path)
    write_turn(session, "versioned words")
    index.catch_up([source(session)])
    index.db.execute("UPDATE info SET value = '0.0' WHERE key = 'version'")
    index.close()
    with pytest.raises(SearchError, match="was written by another version of iota"):
        SearchIndex(path, reader=True)
    assert path.exists()  # a reader changes nothing
    writer = SearchIndex(path)
    assert writer.db.execute("SELECT count(*) FROM records").fetchone()[0] == 0
    writer.close()
    with pytest.raises(SearchError, match="does not exist"):
        SearchIndex(tmp_path / "missing.sqlite", reader=True)


def test_search_can_go_newest_first_and_be_limited_by_time_and_agent(session, index, tmp_path):
    other = Session.create(sessions_dir(), provider="fake", model="m", agent="other")
    write_turn(session, "banana one")
    write_turn(other, "banana two")
    index.catch_up([source(session), LogSource(other.id, other.dir / "messages.jsonl", "other")])
    assert [hit.session for hit in search(index, "banana", limit=5, newest_first=True).hits] == [other.id, session.id]
    assert [hit.session for hit in search(index, "banana", limit=5, agent="other").hits] == [other.id]
    assert search(index, "banana", limit=5, since=2**40).hits == []
    found_ = search(index, "banana", limit=1)
    assert len(found_.hits) == 1 and found_.more
    other.close()


def test_a_crowded_query_is_ranked_among_its_latest_matches_unless_the_filters_leave_too_few(
        session, index, monkeypatch):
    monkeypatch.setattr(search_module, "CANDIDATES", 3)
    for n in range(6):
        write_turn(session, f"kiwi number {n}", reply="")
    index.catch_up([source(session)])
    crowded = search(index, "kiwi", limit=2)
    assert crowded.crowded and crowded.more
    assert {hit.position for hit in crowded.hits} <= {7, 9, 11}  # among the 3 latest matches (2 lines a turn)
    # the latest three are undone: ranking only them would find nothing; every match is ranked instead
    session.rewind(next(o for o, text in session.rewind_points() if text == "kiwi number 3"), "x")
    index.catch_up([source(session)])
    found_ = search(index, "kiwi", limit=5)
    assert [hit.position for hit in sorted(found_.hits, key=lambda h: h.position)] == [1, 3, 5]
    assert not found_.crowded


def test_no_record_with_every_word_falls_back_to_any_of_them(session, index):
    write_turn(session, "only kiwi here")
    index.catch_up([source(session)])
    result = search(index, "kiwi mango", limit=5)
    assert result.any_word and [hit.position for hit in result.hits] == [1]


@pytest.mark.parametrize("query", ['"', 'a" OR "b', "NEAR(a b)", "col:kiwi", "kiwi*", ")(", "^kiwi", "kiwi AND -x",
                                   "records_text MATCH 1; DROP TABLE records", "'", "\\", "kiwi\x00"])
def test_a_query_is_only_ever_words_whatever_it_holds(session, index, query):
    # The model and the person type queries; FTS5 syntax in them must neither fail nor change meaning.
    write_turn(session, "kiwi and more kiwi")
    index.catch_up([source(session)])
    result = search(index, query, limit=5)
    assert all(hit.kind == "user" for hit in result.hits)
    assert index.db.execute("SELECT count(*) FROM records").fetchone()[0] == 2


def test_match_expression_quotes_every_term():
    assert match_expression('fix "flaky test" now') == '"fix" "flaky test" "now"'
    assert match_expression("a b", any_word=True) == '"a" OR "b"'
    assert match_expression("  ?! ") is None
    assert match_expression('say "x" OR y') == '"say" "x" "OR" "y"'


def test_the_index_keeps_no_text_of_its_own(session, index):
    # The log is the source of truth: the index says where to look (its FTS table is contentless),
    # and a snippet is cut from the log.
    write_turn(session, "a very particular sentence")
    index.catch_up([source(session)])
    assert set(index.db.execute("SELECT text FROM record_words").fetchall()) == {(None,)}
    assert "**particular**" in search(index, "particular", limit=1).hits[0].snippet
