"""The person's whole history, searched: `iota search` over every saved session, bots' and not.

    found = search_history("flaky seed", limit=20, since=epoch, agent="coder")

Each session is indexed once, by its one writer. A bot's sessions are in the bot's journal
(`~/.iota/bots/<name>/journal.sqlite`), which the bot's own process keeps up to date and which
is only read here. Every other session — chats, agents, and a bot that keeps no journal — is in
`~/.iota/search.sqlite`, whose writer is `iota search` itself: each search first reads what the
logs gained since the last one (a session deleted since is dropped). Matches come newest first.

A bot's journal can lag behind its log only when the bot stopped without indexing its last
turns (a crash); it catches up when the bot next starts, and the search says so meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from iota.bots.journal import JOURNAL_NAME, open_reader
from iota.errors import SearchError
from iota.paths import app_home, bots_dir
from iota.sessions.listing import all_bundles
from iota.sessions.index import SearchIndex, log_source
from iota.sessions.search import Found, Hit, search

INDEX_NAME = "search.sqlite"


@dataclass
class HistoryHit:
    hit: Hit
    bot: bool   # the session is a bot's: resumed with `iota run <bot>`

    @property
    def resume(self) -> str:
        return f"iota run {self.hit.agent}" if self.bot else f"iota resume {self.hit.session}"


@dataclass
class History:
    hits: list[HistoryHit] = field(default_factory=list)
    more: bool = False
    any_word: bool = False
    notes: list[str] = field(default_factory=list)   # bots whose journal could not be searched whole


def search_history(query: str, *, limit: int, since: int | None = None, agent: str | None = None,
                   marks: tuple[str, str] = ("**", "**")) -> History:
    history = History()
    covered: set[str] = set()
    found: list[tuple[Found, bool]] = []
    for journal_path in sorted(bots_dir().glob(f"*/{JOURNAL_NAME}")):
        name = journal_path.parent.name
        if agent is not None and agent != name:
            continue
        try:
            reader = open_reader(journal_path)
        except SearchError as error:
            history.notes.append(f"bot {name}'s journal cannot be read ({error}): run iota bots reindex {name}")
            continue
        try:
            covered |= _sessions_in(reader, history.notes, name)
            found.append((search(reader, query, limit=limit, newest_first=True, since=since, marks=marks), True))
        finally:
            reader.close()
    sources = [source for source in (log_source(bundle) for bundle in all_bundles()) if source.session not in covered]
    index = SearchIndex(app_home() / INDEX_NAME)
    try:
        index.forget_others({source.session for source in sources})
        index.catch_up(sources)
        found.append((search(index, query, limit=limit, newest_first=True, since=since, agent=agent, marks=marks),
                      False))
    finally:
        index.close()
    # Where any source has records with every word, the others' records with only some of them
    # are left out: "no session has every word" is said only when none has.
    every_word = [(each, bot) for each, bot in found if each.hits and not each.any_word]
    found = every_word or found
    hits = [HistoryHit(hit, bot) for each, bot in found for hit in each.hits]
    hits.sort(key=lambda h: (h.hit.at or 0, h.hit.position), reverse=True)
    history.hits = hits[:limit]
    history.more = len(hits) > limit or any(each.more for each, _ in found)
    history.any_word = not every_word and any(each.any_word for each, _ in found)
    return history


def _sessions_in(reader: SearchIndex, notes: list[str], bot: str) -> set[str]:
    """The sessions a bot's journal holds; a note for each it has not read to the end."""
    rows = reader.query(lambda db: db.execute("SELECT session, path, offset FROM logs").fetchall())
    for session, path, offset in rows:
        if offset < _size(Path(path)):
            notes.append(f"bot {bot}'s journal is behind session {session} (it catches up when the bot next "
                         f"starts; iota bots reindex {bot} rebuilds it now)")
    return {session for session, _, _ in rows}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
