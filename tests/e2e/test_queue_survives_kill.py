"""A queued message survives `kill -9`, end to end in tmux: what the person typed while a reply
streamed is on disk (the session's queue.json) as soon as it is shown queued; after a restart it
is queued again, held until Enter, and sent once. Taking it back, dropping it and sending it each
change the file before a crash could matter."""

from __future__ import annotations

import json
import os
import re
import signal
import time

from iota import paths
from tests.e2e.test_chat import chat, iota_pid  # noqa: F401  (the fixture)
from tests.support.fake_model import Gate
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)

BOT = "  coder:\n    mode: bot\n    model: m\n"
HELD = "stopped · Enter sends 1 queued"
RESTORED = "1 message you typed before iota stopped was not sent: queued again, held"
# The lane runs (and has put back what was queued) once the status row is drawn.
AT_PROMPT = re.compile(r"^m · .*/ 200k", re.MULTILINE)


def bundle():
    pointer = json.loads((paths.bots_dir() / "coder" / "bot.json").read_text())
    return paths.sessions_dir() / pointer["session"]


def queued_on_disk() -> list[str]:
    path = bundle() / "queue.json"
    return [entry["text"] for entry in json.loads(path.read_text())["messages"]] if path.exists() else []


def user_records() -> list[str]:
    lines = (bundle() / "messages.jsonl").read_text().splitlines()
    return [r.get("content") for r in map(json.loads, lines) if r["role"] == "user" and not r.get("notice")]


def asked_with(iota, text: str) -> int:
    """How many requests the model was sent with `text` as their last message."""
    return sum(request.body["messages"][-1].get("content") == text for request in iota.model.requests
               if "messages" in request.body)


def until_queued_on_disk(texts: list[str], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while queued_on_disk() != texts:
        assert time.monotonic() < deadline, f"queue.json holds {queued_on_disk()}, not {texts}"
        time.sleep(0.02)


def kill_9(screen) -> None:
    os.kill(iota_pid(screen), signal.SIGKILL)
    assert screen.wait_for_exit() == 128 + signal.SIGKILL
    screen.kill()


def send(screen, text: str) -> None:
    """Type `text` and press Enter once it shows in the composer (keys that arrive together with
    a line break are a paste: wait, as a person would)."""
    screen.type(text)
    screen.wait_for(f"❯ {text}")
    screen.send_keys("Enter")


def streaming_bot(iota, chat, gate: Gate):
    """The bot, its first reply held mid-stream."""
    iota.write_config(BOT)
    iota.model.reply("Streaming reply held", pieces=3, gate=gate)
    screen = chat("run", "coder")
    send(screen, "first")
    gate.release(1)
    screen.wait_for("Stream")  # the first piece
    return screen


def queue(screen, text: str) -> str:
    send(screen, text)
    return screen.wait_for(f"↳ {text}")


def test_a_message_queued_before_kill_9_comes_back_held_and_is_sent_once(iota, chat):
    gate = Gate()
    screen = streaming_bot(iota, chat, gate)
    assert "sent when the reply ends" in queue(screen, "second")
    kill_9(screen)  # at once: shown queued means on disk
    gate.open()
    assert queued_on_disk() == ["second"]
    assert "second" not in user_records()

    screen = chat("run", "coder")
    shown = screen.wait_for(HELD)
    assert "↳ second" in shown and RESTORED in shown
    assert asked_with(iota, "second") == 0
    iota.model.reply("got the second")
    screen.send_keys("Enter")  # on the empty composer: sends the held queue
    screen.wait_for("got the second")
    assert asked_with(iota, "second") == 1
    assert user_records().count("second") == 1
    assert queued_on_disk() == []

    kill_9(screen)  # after it was sent: it is not queued again
    screen = chat("run", "coder")
    shown = screen.wait_for(AT_PROMPT)
    assert "↳ second" not in shown and RESTORED not in shown
    assert asked_with(iota, "second") == 1 and user_records().count("second") == 1


def test_taken_back_and_dropped_messages_stay_gone_after_kill_9(iota, chat):
    gate = Gate()
    screen = streaming_bot(iota, chat, gate)
    queue(screen, "alpha")
    queue(screen, "beta")
    screen.send_keys("Up")  # beta back to the composer: a draft again
    screen.wait_for("❯ beta")
    # Shown in the composer first, then gone from the file: a kill between the two shows it
    # queued again after the restart (the composer's draft dies with the process), never lost.
    until_queued_on_disk(["alpha"])
    kill_9(screen)
    gate.open()

    screen = chat("run", "coder")
    shown = screen.wait_for(HELD)
    assert "↳ alpha" in shown and "↳ beta" not in shown
    screen.send_keys("C-c")  # drops the held queue
    screen.wait_for("Dropped 1 queued message")
    kill_9(screen)
    assert queued_on_disk() == []

    screen = chat("run", "coder")
    shown = screen.wait_for(AT_PROMPT)
    assert "↳ alpha" not in shown and "queued" not in shown
    iota.model.reply("A new answer.")
    send(screen, "fresh start")
    screen.wait_for("A new answer.")
    assert asked_with(iota, "fresh start") == 1
    assert not any(message.get("content") in ("alpha", "beta") for request in iota.model.requests
                   for message in request.body.get("messages", []))
