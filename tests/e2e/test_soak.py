"""The soak test: a real bot, killed with SIGKILL at random moments, restarted, and checked.

    .venv/bin/python -m pytest tests/e2e/test_soak.py -s --soak 200 [--soak-seed SEED]
    IOTA_SOAK_KILLS=200 .venv/bin/python -m pytest tests/e2e/test_soak.py -s      (the same)

`iota run coder` (a bot with a 32k window, so a turn past 16k of context flushes its memory and
compacts) runs in tmux against the fake model server, which answers like a model that always
says the same to the same conversation (`respond`) and refuses what the real APIs refuse. Each
round starts the bot, sends one turn of a random kind —

    slow      a long reply streamed over about two seconds
    write     write_file of a new file, then a reply
    remember  a memory line, then a reply
    compact   a reply past the threshold: the memory flush (a remember) and the summary follow
    multi     write_file and remember in one reply

— and, in about half the rounds, types a second message while that turn runs (`soak N queued`: shown
queued, or sent at once if the turn is over), then kills the process with SIGKILL at a random
moment (or just after). A message counts as typed once the screen shows it accepted (queued
above the composer, or echoed in the transcript) with the composer empty again. The next
round's start checks what the kill may not have broken:

- every log line that was on disk before the kill is still there, in order (the log only grew);
- every message of the person's that the model was sent is in the log (it was fsynced first);
- every message typed is in the log once, or still waits in the session's queue.json (it is shown
  again, held, and the next message typed sends it first): none lost, none written twice;
- every file a tool wrote has its tool call in the log;
- MEMORY.md has every line it had before the kill, and every write the log calls done;
- the bot reaches its prompt, and its next request is accepted by the strict fake model.

The last start sends what is still held, and every message typed must then be in the log exactly
once. The default is a short run (20 kills) that fits in CI; `--soak N` or `IOTA_SOAK_KILLS=N`
runs more; the seed is printed, and `--soak-seed` replays a run.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import time
from collections import Counter
from itertools import count
from pathlib import Path

from iota import paths
from tests.e2e.conftest import IOTA
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)
from tests.iota.sessions.test_offsets import index_of, rebuilt

KINDS = ("slow", "write", "remember", "compact", "multi")
# The bot is at its prompt once the lane runs: it draws the status row (the card may have
# scrolled away behind a long resumed transcript).
AT_PROMPT = re.compile(r"^m · .*/ 32k \(\d+%\)", re.MULTILINE)
LONG_REPLY = " ".join(f"word{i}" for i in range(120))
KILL_WITHIN = 3.5   # seconds after the message is sent; the slowest turn (compact) takes about three
QUEUE_SHARE = 0.5   # the share of rounds that type a second message while the first one's turn runs
CONFIG = """\
providers:
  fake: {{type: openai, url: '{url}', key: test-key}}
models:
  m: {{provider: fake, id: fake-model, context_window: 32k}}
agents:
  coder:
    mode: bot
    model: m
    tools:
      code: {{auto_write: true}}
"""


class Model:
    """The fake model's answers, from what it is asked."""

    def __init__(self) -> None:
        self.flushes = count(1)

    def __call__(self, body) -> dict:
        last = body["messages"][-1]
        content = last.get("content") or ""
        if last["role"] == "tool":
            return {"text": f"Done: {content.splitlines()[0][:40] if content else 'nothing'}", "pieces": 4,
                    "drip": 0.05, "input_tokens": 1500}
        if content.startswith("You are compressing a conversation"):
            # Keep every identifier the person gave: the compaction checks the summary for them.
            identifiers = sorted(set(re.findall(r"\S*\d\S*", content)))[:400]
            return {"text": "The soak went on. " + " ".join(identifiers), "pieces": 6, "drip": 0.1}
        if content.startswith("The conversation is about to be compacted"):
            fact = f"flush fact {next(self.flushes)}"
            return {"tool_calls": [tool_call("remember", {"action": "add", "text": fact, "source": "inferred"})],
                    "drip": 0.05, "input_tokens": 1500}
        turn = re.match(r"soak (\d+) (\w+)", content)
        if turn is None or turn.group(2) not in KINDS:
            return {"text": "ok.", "input_tokens": 1500}
        n, kind = turn.groups()
        write = tool_call("write_file", {"path": f"soak_{n}.txt", "content": f"written by turn {n}\n"})
        remember = tool_call("remember", {"action": "add", "text": f"soak fact {n}", "source": "user"})
        return {
            "slow": {"text": LONG_REPLY, "pieces": 40, "drip": 0.05, "input_tokens": 1500},
            "write": {"text": "Writing it.", "tool_calls": [write], "pieces": 2, "drip": 0.1, "input_tokens": 1500},
            "remember": {"tool_calls": [remember], "drip": 0.1, "input_tokens": 1500},
            "compact": {"text": "That was a lot of context.", "pieces": 4, "drip": 0.1, "input_tokens": 17_000},
            "multi": {"text": "Both.", "tool_calls": [write, remember], "drip": 0.05, "input_tokens": 1500},
        }[kind]


def log_path() -> Path | None:
    pointer = paths.bots_dir() / "coder" / "bot.json"
    if not pointer.exists():
        return None
    return paths.sessions_dir() / json.loads(pointer.read_text())["session"] / "messages.jsonl"


def complete_lines(path: Path | None) -> list[bytes]:
    if path is None or not path.exists():
        return []
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1].splitlines()


def memory_lines() -> set[str]:
    memory = paths.bots_dir() / "coder" / "MEMORY.md"
    lines = memory.read_text().splitlines() if memory.exists() else []
    return {line for line in lines if not line.startswith("updated: ")}


def records(path: Path | None) -> list[dict]:
    return [json.loads(line) for line in complete_lines(path)]


def typed_in_log(saved: list[dict]) -> Counter:
    return Counter(r.get("content") for r in saved if r["role"] == "user" and not r.get("notice"))


def waiting_in_queue(path: Path | None) -> list[str]:
    """The messages the session's queue.json keeps (typed, not yet in the log)."""
    queue = path.with_name("queue.json") if path is not None else None
    if queue is None or not queue.exists():
        return []
    return [entry["text"] for entry in json.loads(queue.read_text())["messages"]]


def accepted(screen, text: str, timeout: float = 10.0) -> None:
    """Wait until the chat shows `text` accepted: queued (`↳ text`) or echoed (`❯ text`) while the
    composer below is empty again (before Enter is read, the composer itself shows `❯ text`)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = screen.capture().splitlines()
        composer = max((i for i, line in enumerate(lines) if line.startswith("❯")), default=None)
        if composer is not None and lines[composer] == "❯" and (
                f"↳ {text}" in lines or f"❯ {text}" in lines[:composer]):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} was not shown accepted within {timeout}s; the screen:\n"
                                 + "\n".join(lines))
        time.sleep(0.02)


class Soak:
    def __init__(self, iota, terminal, seed: int):
        self.iota, self.terminal, self.seed = iota, terminal, seed
        self.random = random.Random(seed)
        self.stats = {kind: 0 for kind in KINDS} | {"queued": 0, "typed": 0, "held after a kill": 0,
                                                    "closed turns": 0, "compactions": 0}
        self.typed: list[str] = []  # every message the chat showed accepted

    def fail(self, what: str) -> AssertionError:
        return AssertionError(f"soak seed {self.seed}: {what}")

    def start(self):
        screen = self.terminal.start([IOTA, "run", "coder"], cols=120, rows=36, env=self.iota.env(),
                                     cwd=self.iota.cwd)
        try:
            screen.wait_for(AT_PROMPT, timeout=30)
        except AssertionError as error:
            raise self.fail(f"the bot did not reach its prompt after a kill: {error}") from None
        return screen

    def check(self, before: list[bytes], memory_before: set[str]) -> None:
        """What a kill may not have broken, read after the next start."""
        log = log_path()
        after = complete_lines(log)
        if after[: len(before)] != before:
            lost = next(i for i, (a, b) in enumerate(zip(before, after + [b""] * len(before))) if a != b)
            raise self.fail(f"line {lost} of the log changed or went missing after a kill: {before[lost][:200]!r}")
        saved = records(log)
        said = {r.get("content") for r in saved if r["role"] == "user"}
        for request in self.iota.model.requests:
            for message in request.body["messages"]:
                text = message.get("content") or ""
                if message["role"] == "user" and text.startswith("soak ") and text not in said:
                    raise self.fail(f"the model was sent {text!r}, which is not in the log")
        called = {call["arguments"].get("path") for r in saved for call in r.get("tool_calls", [])
                  if call["name"] == "write_file"}
        for written in self.iota.cwd.glob("soak_*.txt"):
            if written.name not in called:
                raise self.fail(f"{written.name} was written by a tool call that is not in the log")
        memory = memory_lines()
        if not memory_before <= memory:
            raise self.fail(f"MEMORY.md lost lines: {sorted(memory_before - memory)}")
        calls = {call["id"]: call["arguments"] for r in saved for call in r.get("tool_calls", [])
                 if call["name"] == "remember"}
        for result in saved:
            if result["role"] == "tool" and result.get("tool_call_id") in calls and not result.get("is_error"):
                fact = calls[result["tool_call_id"]]["text"]
                if not any(fact in line for line in memory):
                    raise self.fail(f"the log says {fact!r} was saved to MEMORY.md, which does not have it")
        if self.iota.model.rejected:
            raise self.fail(f"a request the real API would reject: {self.iota.model.rejected[0][1]}")
        in_log, waiting = typed_in_log(saved), waiting_in_queue(log)
        for text in self.typed:
            if in_log[text] > 1:
                raise self.fail(f"{text!r} was typed once and is in the log {in_log[text]} times")
            if not in_log[text] and text not in waiting:
                raise self.fail(f"{text!r} was shown accepted and is neither in the log nor in queue.json")
        self.stats["held after a kill"] += sum(1 for text in waiting if not in_log[text])

    def type(self, screen, text: str) -> None:
        screen.type(text)
        screen.send_keys("Enter")
        accepted(screen, text)
        self.typed.append(text)

    def round(self, n: int) -> None:
        """Start the bot (checking what the last kill left), send turn `n`, and kill the bot."""
        screen = self.start()
        if n > 1:
            self.check(*self.pending)
        log = log_path()
        pid = int((paths.bots_dir() / "coder" / "lock").read_text())
        kind = self.random.choice(KINDS)
        self.stats[kind] += 1
        sent = time.monotonic()
        self.type(screen, f"soak {n} {kind}")
        if self.random.random() < QUEUE_SHARE:
            time.sleep(self.random.uniform(0, KILL_WITHIN))
            self.type(screen, f"soak {n} queued")
            self.stats["queued"] += 1
        time.sleep(self.random.uniform(0, max(0.0, KILL_WITHIN - (time.monotonic() - sent))))
        before, memory_before = complete_lines(log), memory_lines()
        os.kill(pid, signal.SIGKILL)
        if screen.wait_for_exit(timeout=30) != 128 + signal.SIGKILL:
            raise self.fail("the bot was not killed")
        screen.kill()
        self.pending = (before, memory_before)

    def run(self, kills: int) -> None:
        print(f"\nsoak: {kills} kills, seed {self.seed} (replay with --soak-seed {self.seed})")
        started = time.monotonic()
        for n in range(1, kills + 1):
            self.round(n)
        # The conversation goes on: one more turn (what is still held is sent first), answered and accepted.
        screen = self.start()
        self.check(*self.pending)
        self.type(screen, "soak 0 done")
        deadline = time.monotonic() + 60
        while not self.answered("soak 0 done"):
            if time.monotonic() > deadline:
                raise self.fail("the last message was not answered")
            time.sleep(0.05)
        screen.send_keys("C-d")
        assert screen.wait_for_exit(timeout=30) == 0
        self.check([], set())
        saved = records(log_path())
        in_log = typed_in_log(saved)
        if waiting_in_queue(log_path()) or any(in_log[text] != 1 for text in self.typed):
            raise self.fail(f"after the last turn, not every message typed is in the log once: "
                            f"{[text for text in self.typed if in_log[text] != 1]}")
        # The offset index beside the log came through every kill true to the log (or was rebuilt).
        if index_of(log_path().parent) != rebuilt(log_path().parent):
            raise self.fail("messages.idx does not match the log after the kills")
        self.stats["typed"] = len(self.typed)
        self.stats["closed turns"] = sum(r.get("notice", False) and r["content"].startswith("iota stopped during")
                                         for r in saved)
        self.stats["compactions"] = sum(r["role"] == "compaction" for r in saved)
        print(f"soak: {kills} kills in {time.monotonic() - started:.0f} s, 0 lost records, "
              f"0 of {len(self.typed)} typed messages lost or doubled; "
              + ", ".join(f"{name} {number}" for name, number in self.stats.items()))


    def answered(self, text: str) -> bool:
        """The log holds `text` and a reply after it."""
        saved = records(log_path())
        at = next((i for i, r in enumerate(saved) if r["role"] == "user" and r.get("content") == text), None)
        return at is not None and any(r["role"] == "assistant" for r in saved[at:])


def test_kill_9_at_random_moments_loses_nothing_acknowledged(iota, terminal, request):
    (iota.home / ".iota.yaml").write_text(CONFIG.format(url=iota.model.openai_url))
    iota.model.respond_with(Model())
    seed = request.config.getoption("--soak-seed")
    seed = seed if seed is not None else random.randrange(1_000_000)
    Soak(iota, terminal, seed).run(request.config.getoption("--soak"))
