"""One journal entry: what a bot's turn was, read from the turn's records, and how it reads.

    entry = build_entry(turn, at)      # turn: the records of one turn (iota.sessions.index.LoggedTurn)
    line = render_entry(entry)         # one line, for the journal given to the model and for recall

An entry says when the turn ended; what was asked (the start of the person's text, or of the
notice that opened it — the memory flush, later a scheduled or continued turn); what the bot
did — the tools it used with their targets, grouped in the order first used
(`edit_file ×2 (src/app.py, …)`, `shell (pytest -q)`), and how many calls failed; the result —
the beginning and the end of its final answer, so a conclusion is never cut off; the files it
wrote (the code tools' successful writes); and how the turn ended: finished, failed, cancelled
(the person stopped it) or interrupted (iota stopped: a quit, a signal, a crash).

Everything comes from the log, so the same turn always gives the same entry. The text is the
model's and the tools' own — quoted data, which is how the journal presents it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from iota.messages import (ASSISTANT, CANCELLED, CANCELLED_RESULT, FAILED, FAILED_NOTICE, FINISHED, INTERRUPTED,
                           TOOL, USER)
from iota.compaction.summary import FLUSH_NOTICE
from iota.sessions.index import LoggedTurn
from iota.sessions.search import format_time

ASKED_CHARS = 200
ANSWER_HEAD, ANSWER_TAIL = 300, 300
TARGET_CHARS = 60
TARGETS_CHARS = 90
# The arguments that name what a call acts on, in the order they are looked for.
TARGET_KEYS = ("path", "file_path", "command", "pattern", "skill", "query", "url", "action", "name")
WRITERS = ("edit_file", "write_file")
MEMORY_FLUSH = "memory flush before a compaction"
_FAILED_MARK = FAILED_NOTICE.split("{")[0]
_FLUSH_MARK = FLUSH_NOTICE[:40]


@dataclass(frozen=True)
class Entry:
    turn: str
    position: int          # the line of the turn's first record in its session's log
    offset: int
    at: int | None
    outcome: str
    asked: str
    did: str               # `edit_file ×2 (src/app.py, …), shell (pytest -q)`, "" when no tool ran
    calls: int
    failed: int
    answer: str            # the head and tail of the final answer
    files: tuple[str, ...]

    def words(self) -> str:
        """What the journal's full-text search reads of it."""
        return "\n".join((self.asked, self.did, self.answer, " ".join(self.files)))


def build_entry(turn: LoggedTurn, at: int | None) -> Entry | None:
    """The entry of `turn` (None for a turn with no records), dated `at`."""
    if not turn.records:
        return None
    records = [item.record for item in turn.records]
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for record in records:
        if record["role"] == ASSISTANT:
            for call in record.get("tool_calls") or []:
                if isinstance(call, dict):
                    arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
                    calls[str(call.get("id", ""))] = (str(call.get("name", "")), arguments)
    results = [record for record in records if record["role"] == TOOL]
    failed = sum(record.get("is_error") is True for record in results)
    files = []
    for record in results:
        name, arguments = calls.get(str(record.get("tool_call_id", "")), ("", {}))
        path = arguments.get("path")
        if name in WRITERS and record.get("is_error") is not True and isinstance(path, str) and path not in files:
            files.append(path)
    end = turn.end.record if turn.end is not None else None
    return Entry(turn=turn.id, position=turn.records[0].position, offset=turn.records[0].offset, at=at,
                 outcome=_outcome(records, end), asked=_asked(records), did=group_calls(list(calls.values())),
                 calls=len(calls), failed=failed, answer=_answer(records), files=tuple(files))


def _asked(records: list[dict[str, Any]]) -> str:
    opening = next((record for record in records if record["role"] == USER), None)
    text = opening.get("content") if opening is not None and isinstance(opening.get("content"), str) else ""
    if opening is not None and opening.get("notice") is True and text.startswith(_FLUSH_MARK):
        return MEMORY_FLUSH
    return clip(text, ASKED_CHARS)


def _answer(records: list[dict[str, Any]]) -> str:
    """The beginning and the end of the last reply with text."""
    for record in reversed(records):
        text = record.get("content") if record["role"] == ASSISTANT else None
        if isinstance(text, str) and text.strip():
            return head_and_tail(" ".join(text.split()), ANSWER_HEAD, ANSWER_TAIL)
    return ""


def _outcome(records: list[dict[str, Any]], end: dict[str, Any] | None) -> str:
    """The turn_end's outcome; for a log written before turns recorded one, what its records show."""
    if end is None:
        return INTERRUPTED  # cut short in the middle of the log
    if end.get("outcome") in (FAILED, CANCELLED, INTERRUPTED):
        return end["outcome"]
    if any(r["role"] == USER and r.get("notice") is True and str(r.get("content", "")).startswith(_FAILED_MARK)
           for r in records):
        return FAILED
    if any(r.get("interrupted") is True or (r["role"] == TOOL and r.get("content") == CANCELLED_RESULT)
           for r in records):
        return CANCELLED
    return FINISHED


def group_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """`edit_file ×2 (src/app.py, src/b.py), shell (pytest -q)`: each tool once, in the order first
    used, with how often and the distinct targets that fit."""
    groups: dict[str, list[str]] = {}
    for name, arguments in calls:
        groups.setdefault(name, []).append(call_target(arguments))
    parts = []
    for name, targets in groups.items():
        count = f" ×{len(targets)}" if len(targets) > 1 else ""
        distinct = list(dict.fromkeys(target for target in targets if target))
        shown: list[str] = []
        for target in distinct:
            if shown and len(", ".join([*shown, target])) > TARGETS_CHARS:
                shown.append("…")
                break
            shown.append(target)
        parts.append(f"{name}{count}" + (f" ({', '.join(shown)})" if shown else ""))
    return ", ".join(parts)


def call_target(arguments: dict[str, Any]) -> str:
    """What a call acts on, from its arguments alone (a tool of a past run may not exist now):
    its path, command, pattern… or its first text argument; one line, cut short."""
    value = next((arguments[key] for key in TARGET_KEYS if isinstance(arguments.get(key), str)), None)
    if value is None:
        value = next((v for v in arguments.values() if isinstance(v, str)), None)
    if value is None:
        value = json.dumps(arguments, ensure_ascii=False) if arguments else ""
    return clip(value, TARGET_CHARS)


def clip(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with `…`."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def head_and_tail(text: str, head: int, tail: int) -> str:
    """`text`, or its first `head` and last `tail` characters joined by ` … `."""
    if len(text) <= head + tail + 3:
        return text
    return f"{text[:head].rstrip()} … {text[-tail:].lstrip()}"


def render_entry(entry: Entry, *, session: str = "", answer_chars: int = 240) -> str:
    """The entry on one line: `- 2026-10-02 14:03 [record 812] finished — asked: … — did: … —
    answer: … — wrote: …`. `session` names a session other than the current one."""
    place = f"[session {session} record {entry.position}]" if session else f"[record {entry.position}]"
    parts = [f"- {format_time(entry.at)} {place} {entry.outcome}", f'asked: "{entry.asked}"']
    if entry.did:
        failed = f"; {entry.failed} of {entry.calls} failed" if entry.failed else ""
        parts.append(f"did: {entry.did}{failed}")
    if entry.answer:
        half = max(answer_chars // 2, 40)
        parts.append(f'answer: "{head_and_tail(entry.answer, half, half)}"')
    if entry.files:
        parts.append(f"wrote: {', '.join(clip(path, TARGET_CHARS) for path in entry.files)}")
    return " — ".join(parts)
