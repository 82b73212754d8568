"""Turning the records of a session log into a view both providers accept, whatever the log holds.

A log can hold things no request may carry: a turn that never ended (iota was killed while it
ran), a tool call whose result is missing (its line was damaged, or the process died between
the two), a result whose call is gone, a notice written between a call and its results. The
view is built from the records in two steps, and every change is said out loud, so the person
knows what the model is shown:

1. **Turns** (`assemble`). Every record written during a turn carries the turn's id (`turn`),
   and a finished turn ends with a `turn_end` record. The log's bookkeeping records are read
   here and never reach the view:

       partial       streamed reply text, appended about once a second while a reply streams;
                     the pieces of one reply join in order, and the turn's next assistant record
                     (the whole reply) supersedes them, so the view never holds the text twice
       tool_started  a tool call is about to run: if iota dies before its result, the call may
                     have run (without the mark, it certainly did not)
       turn_end      the turn is over (done, interrupted or failed)

   A turn without its `turn_end` was cut short. It is *closed*: the streamed text not yet
   superseded becomes the assistant record, marked interrupted; each tool call of its last
   assistant record without a result is answered as interrupted by a crash, saying whether it
   had started; a notice tells the person and the model what happened; and `turn_end` follows.
   When the unfinished turn is the end of the log, those records are handed back to be appended
   (`Assembled.closing`), so the repair happens once. (An unfinished turn followed by later
   records can only be left by a closing append that itself failed; it is closed in the view.)

   A log written before turns had ids has none of this: a trailing assistant record whose tool
   calls have no results is answered as interrupted, as the Rust iota does (`repair_tail`).

2. **Pairing** (`mend`). After an assistant record with tool calls come exactly its results, in
   call order: a result written later in the same round (before the next assistant record) is
   moved up, a call without one gets a synthetic "result lost" result, and a result that answers
   no call, or answers one a second time, is dropped. Anything else written between the call
   and its results (a notice) follows the results.

What the view does not need mending for: two user messages in a row (notices are user records;
the Anthropic wire merges neighbours of one role, the OpenAI API takes them as they are) and
empty content (both wires leave empty text out). The mended view keeps one message per record
so that compaction's count of retained records stays true; the records the repairs add or drop
exist only in the view when they sit in the middle of the log, so a damaged line inside the last
turn can make the next compaction keep a record more or less than it meant to (still a valid
view).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from iota.messages import ASSISTANT, INTERRUPTED, PARTIAL, TOOL, TOOL_STARTED, TURN_END, USER, Message, ToolCall

LOG_NAME = "messages.jsonl"
INTERRUPTED_RESULT = "interrupted: no result was recorded"
CRASH_STARTED_RESULT = ("interrupted: iota stopped (killed or crashed) while this call ran, so it may have run "
                        "in full or in part — check before repeating it")
CRASH_NOT_STARTED_RESULT = "interrupted: iota stopped (killed or crashed) before this call started; it did not run"
LOST_RESULT = ("result lost: this call's result could not be read back from the session log; the call may have "
               "run — check before repeating it")
BOOKKEEPING_ROLES = frozenset({PARTIAL, TOOL_STARTED, TURN_END})


def count(n: int, thing: str) -> str:
    """`1 tool call`, `2 tool calls`."""
    return f"{n} {thing}{'' if n == 1 else 's'}"


# -- closing a turn -------------------------------------------------------------------------------


def repair_tail(messages: Sequence[Message], content: Callable[[ToolCall], str] = lambda call: INTERRUPTED_RESULT,
                turn: str = "") -> list[Message]:
    """Error results for the tool calls at the end of `messages` that never got one.

    A turn stopped between the model asking for tools and their results being written leaves
    calls no provider accepts without results. `content(call)` is what each result says.
    """
    answered: set[str] = set()
    for message in reversed(messages):
        if message.role == TOOL:
            answered.add(message.tool_call_id)
            continue
        if message.role != ASSISTANT:
            return []
        return [Message(TOOL, content(call), tool_call_id=call.id, tool_call_name=call.name, is_error=True, turn=turn)
                for call in message.tool_calls if call.id not in answered]
    return []


def close_turn(turn_messages: Sequence[Message], partial: str, started: set[str], turn: str) -> list[Message]:
    """The records that close a turn iota did not live to finish: results for its unanswered
    calls, its streamed text kept as an interrupted reply, a notice saying so, and `turn_end`."""
    results = repair_tail(turn_messages, turn=turn, content=lambda call: (
        CRASH_STARTED_RESULT if call.id in started else CRASH_NOT_STARTED_RESULT))
    closing = list(results)
    done = []
    if partial:
        closing.append(Message(ASSISTANT, content=partial, interrupted=True, turn=turn))
        done.append("its partial reply was kept, marked interrupted")
    if results:
        ran = sum(call.tool_call_id in started for call in results)
        done.append(f"{count(len(results), 'tool call')} without a result "
                    f"{'was' if len(results) == 1 else 'were'} answered as interrupted"
                    + (f" ({ran} had started and may have run)" if ran else ""))
    if not any(m.role == ASSISTANT for m in turn_messages) and not partial:
        done.append("no reply had arrived")
    if not done:
        done.append("everything it did was already on disk")
    text = "iota stopped during the last turn (killed or crashed); it was closed when the session was opened again: "
    closing.append(Message(USER, content=text + "; ".join(done), notice=True, turn=turn))
    closing.append(Message(TURN_END, turn=turn, outcome=INTERRUPTED))
    return closing


@dataclass
class Assembled:
    messages: list[Message] = field(default_factory=list)
    # Records to append to close a turn the log ends in (the last is its `turn_end`); their
    # messages are already in `messages`.
    closing: list[Message] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def assemble(records: Sequence[dict[str, Any]]) -> Assembled:
    """The view's messages from log records in order (conversation and bookkeeping records),
    every turn closed and every tool call paired with its result."""
    assembled = Assembled()
    out = assembled.messages
    turn = ""                   # the turn being read, until its turn_end
    turn_start = 0              # where its messages begin in `out`
    partial: list[str] = []     # its streamed text not yet superseded
    started: set[str] = set()   # its tool calls that had started
    cut_short = 0               # unfinished turns in the middle of the log

    def close_in_view() -> list[Message]:
        closing = close_turn(out[turn_start:], "".join(partial), started, turn)
        out.extend(m for m in closing if m.role != TURN_END)
        return closing

    for record in records:
        role = record["role"]
        record_turn = record.get("turn") if isinstance(record.get("turn"), str) else ""
        if record_turn and record_turn != turn:
            if turn:
                close_in_view()
                cut_short += 1
            turn, turn_start, partial, started = record_turn, len(out), [], set()
        if role == PARTIAL:
            if isinstance(record.get("content"), str):
                partial.append(record["content"])
        elif role == TOOL_STARTED:
            started.add(str(record.get("tool_call_id", "")))
        elif role == TURN_END:
            if record_turn == turn:
                turn, partial = "", []
        else:
            message = Message.from_record(record)
            if role == ASSISTANT and record_turn:
                partial = []
            out.append(message)
    if turn:
        assembled.closing = close_in_view()
    elif out and not out[-1].turn:
        # A log from before turns had ids: answer a trailing unanswered call as the Rust iota does.
        assembled.closing = repair_tail(out)
        out.extend(assembled.closing)
        if assembled.closing:
            assembled.warnings.append(f"{count(len(assembled.closing), 'tool call')} left unanswered by the last run "
                                      f"{'was' if len(assembled.closing) == 1 else 'were'} answered as interrupted")
    if cut_short:
        assembled.warnings.append(f"{LOG_NAME}: closed {count(cut_short, 'unfinished turn')} in the middle of the log")
    assembled.messages, notes = mend(out)
    assembled.warnings += notes
    return assembled


# -- pairing calls and results --------------------------------------------------------------------


def mend(messages: Sequence[Message]) -> tuple[list[Message], list[str]]:
    """`messages` with every tool call followed by its result and no result without its call;
    and what was changed, one warning a kind."""
    out: list[Message] = []
    lost = dropped = 0
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == TOOL:  # not right after the assistant record that called it
            dropped += 1
            continue
        out.append(message)
        if message.role != ASSISTANT or not message.tool_calls:
            continue
        end = index
        while end < len(messages) and messages[end].role != ASSISTANT:
            end += 1
        wanted = {call.id for call in message.tool_calls}
        results: dict[str, Message] = {}
        others = []
        for record in messages[index:end]:
            if record.role == TOOL and record.tool_call_id in wanted and record.tool_call_id not in results:
                results[record.tool_call_id] = record
            elif record.role == TOOL:
                dropped += 1
            else:
                others.append(record)
        for call in message.tool_calls:
            if call.id not in results:
                lost += 1
                results[call.id] = Message(TOOL, LOST_RESULT, tool_call_id=call.id, tool_call_name=call.name,
                                           is_error=True, turn=message.turn)
            out.append(results[call.id])
        out.extend(others)
        index = end
    notes = []
    if lost:
        notes.append(f"{LOG_NAME}: {count(lost, 'tool call')} had no result in the log; "
                     f"{'it was' if lost == 1 else 'each was'} answered as lost")
    if dropped:
        notes.append(f"{LOG_NAME}: dropped {count(dropped, 'tool result')} that answered no call")
    return out, notes
