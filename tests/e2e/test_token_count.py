"""The token encoding (some 60 MB once loaded) is loaded only when a conversation nears a compaction
threshold: an ordinary chat never maps it into its memory, while one nearing the threshold does,
and is offered the compaction exactly where counting every token puts it — not where bytes/4
would."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_chat import chat, iota_pid  # noqa: F401  (the fixture)
from tests.support.terminal import say, terminal  # noqa: F401  (the fixture under `chat`)

OFFER = "— compact before sending?"


def encoding_loaded(screen) -> bool:
    """Whether the `iota` in the pane has loaded toktok's extension (it loads it to count, and only then)."""
    return "_toktok" in Path(f"/proc/{iota_pid(screen)}/maps").read_text()


def test_an_ordinary_chat_never_loads_the_encoding(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n      shell:\n")
    for n in range(3):
        iota.model.reply(f"Answer number {n}.", input_tokens=20_000 + 1_000 * n, output_tokens=10)
    screen = chat("run", "coder")
    # The system prompt and the tools are weighed from the first screen all the same (bytes/4).
    screen.wait_for(re.compile(r"^m · ≈[1-9][\d.]*k / 200k", re.MULTILINE))
    for n in range(3):
        say(screen, f"question {n}: " + "tell me more " * 40, f"Answer number {n}.")
    screen.wait_for(re.compile(r"^m · 22k / 200k", re.MULTILINE))
    assert not encoding_loaded(screen)


def test_nearing_the_threshold_loads_it_and_the_offer_comes_where_the_exact_count_puts_it(iota, chat):
    iota.write_config("  chat: {model: m}\n")  # a 200k window: the offer comes at 184,000
    words = " ".join(["word"] * 200)  # 200 tokens, 999 bytes: bytes/4 would say 250
    iota.model.reply("One.", input_tokens=184_000 - 230 - 6, output_tokens=6)
    iota.model.reply("Two.", input_tokens=184_000 - 150 - 6, output_tokens=6)
    iota.model.reply("Summary of it all.")
    iota.model.reply("Three.")
    screen = chat("run", "chat")
    say(screen, "hello", "One.")
    assert not encoding_loaded(screen)
    # 183,770 + 200 + 4 of framing = 183,974: below. Its byte bound is not, so it is counted.
    say(screen, words, "Two.")
    assert OFFER not in screen.capture() and len(iota.model.requests) == 2
    assert encoding_loaded(screen)
    # 183,850 + 204 = 184,054: the offer.
    screen.type(words)
    screen.send_keys("Enter")
    screen.wait_for(OFFER)
    screen.send_keys("Enter")  # Compact now
    screen.wait_for("Three.")
    screen.wait_for("Context compacted → ")
