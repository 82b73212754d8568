"""Writing session logs turn by turn, as the lane writes them, for the tests of the search index,
the journal and `recall` (the lane itself is exercised in tests/actors/test_journal.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any

from iota.messages import ASSISTANT, TOOL, TOOL_STARTED, TURN_END, USER, Message, ToolCall, Usage
from iota.sessions.bundle import Session

_ids = count(1)


@dataclass
class Call:
    name: str
    arguments: dict[str, Any]
    result: str = "ok"
    failed: bool = False


@dataclass
class Written:
    turn: str
    records: list[Message] = field(default_factory=list)


def write_turn(session: Session, text: str, *, calls: list[Call] = (), reply: str = "Done.", outcome: str = "",
               ended: bool = True, notice: bool = False) -> Written:
    """One turn: the opening message, one assistant record per call with its result, the reply,
    and `turn_end` (with `outcome`, unless not `ended`)."""
    turn = f"t{next(_ids):07d}"
    records = [Message(USER, text, notice=notice, turn=turn)]
    for call in calls:
        call_id = f"c{next(_ids)}"
        records += [Message(ASSISTANT, tool_calls=[ToolCall(call_id, call.name, call.arguments)], usage=Usage(10, 2),
                            turn=turn),
                    Message(TOOL_STARTED, tool_call_id=call_id, tool_call_name=call.name, turn=turn),
                    Message(TOOL, call.result, tool_call_id=call_id, tool_call_name=call.name, is_error=call.failed,
                            turn=turn)]
    if reply:
        records.append(Message(ASSISTANT, reply, usage=Usage(20, 5), turn=turn))
    if ended:
        records.append(Message(TURN_END, turn=turn, outcome=outcome))
    session.append(records)
    return Written(turn, records)
