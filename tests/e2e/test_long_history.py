"""A never-compacted conversation longer than any request: `iota resume` opens it from its tail
and offers to compact at once, end to end in tmux against the fake model."""

from __future__ import annotations

import json
import re

from iota import paths
from iota.messages import Message
from iota.sessions.bundle import Session
from iota.sessions.log import TAIL_BYTES
from tests.e2e.test_chat import chat  # noqa: F401  (the fixture)
from tests.e2e.test_chat_resume import resume
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)

ROUNDS = 260
PADDING = "lorem ipsum dolor sit amet " * 800  # ~21 KB a question: the log is past TAIL_BYTES


def long_session() -> str:
    with Session.create(paths.sessions_dir(), provider="fake", model="fake-model", agent="chat") as session:
        for n in range(ROUNDS):
            session.append([Message("user", f"question number {n} {PADDING}"), Message("assistant", f"answer {n}")])
        assert (session.dir / "messages.jsonl").stat().st_size > TAIL_BYTES
        return session.id


def test_a_conversation_too_long_to_send_opens_from_its_tail_and_offers_to_compact(iota, chat):
    iota.write_config("  chat: {model: m}\n")  # a 128k window
    session_id = long_session()
    # It names every question's number, so no identifier is missing and no second summary is asked.
    iota.model.reply("SUMMARY of the recent questions: " + " ".join(map(str, range(ROUNDS))))
    iota.model.reply("Next answer.")
    screen = resume(iota, chat, session_id)
    shown = " ".join(screen.wait_for("2. Not now").split())  # the question wraps
    assert "too long to send" in shown and "— compact now?" in shown, shown
    left_out = int(re.search(r"too long to send: ([\d,]+) earlier messages were not loaded", shown)[1].replace(",", ""))
    assert 0 < left_out < 2 * ROUNDS and left_out % 2 == 0  # a round is never split
    screen.send_keys("Enter")  # Compact now
    screen.wait_for("Context compacted → ")
    request = iota.model.requests[0].body["messages"][-1]["content"]
    # The request carries the newest of what fits in a 128k window, and says the rest is left out.
    assert len(request) < 128_000 * 2
    assert "of the conversation are left out here" in request
    assert f"question number {ROUNDS - 2} " in request and "question number 0 " not in request
    assert "were never summarised" in request  # the loader's note, carried as the previous summary
    screen.type("one more")
    screen.send_keys("Enter")
    screen.wait_for("Next answer.")
    sent = [m for m in iota.model.requests[1].body["messages"] if m["role"] != "system"]
    assert sent[0]["content"].startswith("[Earlier conversation summary]\nSUMMARY of the recent questions:")
    assert [m["content"] for m in sent[-2:]] == [f"answer {ROUNDS - 1}", "one more"]
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    log = paths.sessions_dir() / session_id / "messages.jsonl"
    markers = [json.loads(line) for line in log.read_bytes().splitlines() if b'"role":"compaction"' in line]
    # Everything but the last round is summarised, counted against the whole log.
    assert [m["compacted_through"] for m in markers] == [2 * ROUNDS - 2]



def test_a_headless_resume_of_a_conversation_too_long_to_send_sends_what_fits_and_says_so(iota):
    """`iota resume <id> -m` cannot ask to compact: it sends the newest rounds that fit the
    model's window (not the whole 4 MiB tail a chat opens with), the model is told how many
    earlier messages it is not shown, and stderr says so and how to compact."""
    iota.write_config("  chat: {model: m}\n")  # a 128k window
    session_id = long_session()
    iota.model.reply("Next answer.")
    result = iota("resume", session_id, "-m", "one more")
    assert result.returncode == 0, result.stderr
    sent = [m for m in iota.model.requests[0].body["messages"] if m["role"] != "system"]
    assert sum(len(m["content"]) for m in sent) < 128_000 * 4  # bytes/4 within the window
    note = re.match(r"\[Earlier conversation summary\]\n([\d,]+) earlier messages of this conversation are not "
                    r"shown", sent[0]["content"])
    assert note is not None, sent[0]["content"][:200]
    left_out = int(note[1].replace(",", ""))
    assert left_out + len(sent) - 1 == 2 * ROUNDS and left_out % 2 == 0  # whole rounds, every record counted
    assert sent[0]["content"].endswith(f"question number {left_out // 2} {PADDING}")
    assert [m["content"] for m in sent[-2:]] == [f"answer {ROUNDS - 1}", "one more"]
    assert f"{left_out:,} earlier messages were not sent" in result.stderr
    assert f"iota resume {session_id}" in result.stderr
    log = paths.sessions_dir() / session_id / "messages.jsonl"
    assert json.loads(log.read_bytes().splitlines()[-1])["content"] == "Next answer."
