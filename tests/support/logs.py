"""Reading a session log in tests as the conversation it holds."""

from __future__ import annotations

from iota.messages import PARTIAL, TOOL_STARTED, TURN_END

BOOKKEEPING = (PARTIAL, TOOL_STARTED, TURN_END)


def conversation_records(records: list[dict]) -> list[dict]:
    """`records` without the turn bookkeeping: no `partial`, `tool_started` or `turn_end`
    records, and no `turn` key (what a reader that ignores turns, such as the Rust iota, sees)."""
    return [{key: value for key, value in record.items() if key != "turn"}
            for record in records if record.get("role") not in BOOKKEEPING]
