"""Resume shows the conversation, end to end in tmux: all of it, older pages loaded as the person
scrolls up, tool calls with what they did, and a compaction as one dim line."""

from __future__ import annotations

import re

from iota import paths
from iota.messages import Message, ToolCall
from iota.sessions.bundle import Session
from tests.e2e.conftest import IOTA
from tests.e2e.test_chat import chat  # noqa: F401  (the fixture)
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)


def make_session(rounds: int, *, compact_after: int | None = None) -> str:
    """A saved chat session of `rounds` rounds of four records: a question, a read_file call, its
    result, an answer; with a compaction after round `compact_after`."""
    with Session.create(paths.sessions_dir(), provider="fake", model="fake-model", agent="chat") as session:
        for n in range(rounds):
            call = ToolCall(f"call_{n}", "read_file", {"path": f"src/module_{n}.py"})
            session.append([Message("user", f"question number {n}"),
                            Message("assistant", "", tool_calls=[call]),
                            Message("tool", f"def module_{n}():\n    return {n}\n", tool_call_id=call.id,
                                    tool_call_name="read_file"),
                            Message("assistant", f"answer number {n}")])
            if compact_after is not None and n == compact_after:
                session.append([Message("compaction", f"SUMMARY: the person asked {n + 1} questions.",
                                        compacted_through=4 * (n + 1))])
        return session.id


def resume(iota, chat, session_id: str, rows: int = 32):
    """`iota resume <id>`, until its history is up (the card may be above it, out of view)."""
    screen = chat.terminals.start([IOTA, "resume", session_id], cols=110, rows=rows, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(f"Resumed session {session_id}")
    return screen


def test_resume_of_a_200_record_session_scrolls_back_to_its_first_message(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    session_id = make_session(50)  # 200 records
    screen = resume(iota, chat, session_id)
    shown = screen.wait_for(f"Resumed session {session_id} (200 messages)")
    assert "answer number 49" in shown and "question number 0" not in shown
    # Older pages arrive as the view nears them, so each PgUp is followed by a look, until the
    # first message and the card above it (the top of it all) are on the screen together.
    for _ in range(200):
        screen.send_keys("PPage")
        shown = screen.capture()
        if "❯ question number 0" in shown and "╭" in shown:
            break
    assert "❯ question number 0" in shown and "╭" in shown, shown


def test_resumed_tool_calls_show_what_they_did(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    session_id = make_session(2)
    screen = resume(iota, chat, session_id)
    shown = screen.capture()
    assert "• read_file src/module_1.py\n  ⎿ def module_1():\n        return 1" in shown
    assert "❯ question number 1" in shown and "answer number 1" in shown


def test_a_compaction_is_one_dim_line_and_its_summary_is_behind_ctrl_o(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    session_id = make_session(3, compact_after=1)
    screen = resume(iota, chat, session_id, rows=60)
    shown = screen.capture()
    assert "── compacted: 8 messages summarised ── (ctrl+o to expand)" in shown
    assert "SUMMARY" not in shown and "Earlier conversation summary" not in shown
    assert re.search(r"answer number 1\n\n── compacted.*\n\n❯ question number 2", shown)  # where it happened
    screen.send_keys("C-o")
    screen.wait_for("── compacted: 8 messages summarised ──\nSUMMARY: the person asked 2 questions.")
