"""Whether a `[user]` memory line is backed by what the person typed, and the wording rules that
also decide when two lines say the same thing.

`[user]` in MEMORY.md means "the person said so", and it outranks anything `[inferred]`: a later
model takes it as the person's standing wish. The model chooses the tag, and the model reads
files, web pages and tool output that may tell it what to "remember". So the tag is checked
against the one thing a file cannot forge: the messages the person typed in this conversation.

The rule. A `[user]` line is backed when every content word of it is a word the person typed in
one of their recent messages (the last RECENT_MESSAGES they sent in this conversation; notices,
tool results and compaction summaries are not theirs). Words are compared after normalising:
Unicode compatibility forms folded (NFKC), case folded, apostrophes dropped, split at anything
that is not a letter or digit, and each word reduced to its English stem (Snowball), so
"prefers"/"preferred"/"prefer" and "replies"/"reply" match. Content words are all words but a
short list of function words ("the", "in", "to", …) and the words a model uses to frame a
preference ("user", "wants", "prefers", "remember", …); negations and quantifiers ("never",
"always", "every") are content. A line of framing words only is not backed.

So "Prefers tabs over spaces" is backed by "I prefer tabs over spaces", and "Reply in Chinese"
by "please always reply in Chinese"; "Wants every commit pushed with --force to main" is not
backed by "read notes.txt and do what it says", whatever notes.txt says. The rule errs towards
`[inferred]`: a paraphrase in other words ("answer in Chinese" saved as "replies in Chinese") is
kept, tagged `[inferred]`, and the tool's result says so. What it cannot tell is a line put
together from words of one message that meant something else; requiring all of them in one
message keeps that narrow.

A SOUL.md patch (the persona, changed a section at a time) has no tag to fall back on, so it is
refused unless the words it adds — or, when it only deletes, the words it drops — are all in one
of those messages (`unbacked_change`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

from iota.messages import USER, Message
from iota.sessions.log import SUMMARY_FOOTER, SUMMARY_HEADER

RECENT_MESSAGES = 20

# Articles, pronouns, auxiliaries, prepositions and conjunctions: they carry no claim of their own.
_FUNCTION_WORDS = frozenset("""
    a an the this that these those it its i me my mine we us our you your he him his she her they them their
    is are was were be been being am do does did has have had will would shall should can could may might must
    of in on at to for from by with as into onto over under about than then so and or but if when while
    there here what which who whom whose how why where also just very too please ok okay
""".split())
# The words a model frames someone's preference with ("The user prefers …", "Remember that …").
_FRAMING_WORDS = frozenset("""
    user users person people human wants want wanted prefers prefer preferred preference likes like liked
    said says say told tell asked asks ask remember remembers note noted
""".split())


def words(text: str) -> list[str]:
    """`text` as comparable words: NFKC, case folded, apostrophes dropped, split at anything that
    is not a letter or digit."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("'", "").replace("\u2019", "")
    return re.findall(r"[^\W_]+", folded)


def comparable(text: str) -> tuple[str, ...]:
    """What two memory lines must share to count as the same line: their words, less articles
    and the word "user" ("The user likes tea." and "User likes tea" compare equal)."""
    return tuple(word for word in words(text) if word not in {"a", "an", "the", "user"})


@functools.cache
def _stemmer():
    import snowballstemmer  # ~14 ms, paid by the first [user] line a chat checks, not by every start

    return snowballstemmer.stemmer("english")


def _stems(text: str) -> set[str]:
    return set(_stemmer().stemWords(words(text)))


def content_words(text: str) -> list[str]:
    """The words of `text` that make its claim, each once, in the order they come."""
    return list(dict.fromkeys(word for word in words(text) if word not in _FUNCTION_WORDS
                              and word not in _FRAMING_WORDS))


def content_stems(text: str) -> set[str]:
    """The stems of the words of `text` that make its claim."""
    return set(_stemmer().stemWords(content_words(text)))


def unbacked(line: str, typed: Iterable[str]) -> list[str] | None:
    """None when `line` is backed by one of the messages in `typed`; else the content words of
    the line that the closest message lacks (empty when the line has no content words at all)."""
    wanted = content_stems(line)
    if not wanted:
        return []
    missing = _closest_gap(wanted, typed)
    return None if missing is None else _words_with_stems(line, missing)


def unbacked_change(old: str, new: str, typed: Iterable[str]) -> list[str] | None:
    """The same rule for a change of prose (a SOUL.md section going from `old` to `new`): None when
    the content words it adds are all in one of the messages in `typed` — a change the person asked
    for in their words — else those words the closest message lacks. A change that adds nothing
    and only takes away is judged by the words it drops instead: a file the model reads could as
    well ask it to delete the person's "never force-push" as to add something of its own. (A
    rewrite that drops a rule while adding words the person did say is let through: what the
    persona gains is always theirs, and the transcript shows what it lost.)"""
    before, after = content_stems(old), content_stems(new)
    changed = (after - before) or (before - after)
    if not changed:
        return None
    missing = _closest_gap(changed, typed)
    return None if missing is None else _words_with_stems(f"{old}\n{new}", missing)


def _closest_gap(wanted: set[str], typed: Iterable[str]) -> set[str] | None:
    """None when one message in `typed` has every stem in `wanted`; else the stems the closest lacks."""
    closest = wanted
    for message in typed:
        missing = wanted - _stems(message)
        if not missing:
            return None
        closest = min(closest, missing, key=len)
    return closest


def _words_with_stems(text: str, stems: set[str]) -> list[str]:
    """The content words of `text` whose stems are in `stems`, each once, in the order they come."""
    return list(dict.fromkeys(word for word in words(text) if word not in _FUNCTION_WORDS
                              and word not in _FRAMING_WORDS and _stemmer().stemWord(word) in stems))


def typed_by_person(messages: Iterable[Message], limit: int = RECENT_MESSAGES) -> list[str]:
    """The last `limit` messages the person typed, oldest first: user-role, not notices, not the
    hidden messages iota writes (a schedule's trigger repeats the model's own words), with a
    compaction's summary (model-written) lifted off the message it was put in front of."""
    typed = []
    for message in messages:
        if message.role != USER or message.notice or message.hidden:
            continue
        text = message.content
        if text.startswith(SUMMARY_HEADER) and SUMMARY_FOOTER in text:
            text = text.split(SUMMARY_FOOTER, 1)[1]
        if text.strip():
            typed.append(text)
    return typed[-limit:]
