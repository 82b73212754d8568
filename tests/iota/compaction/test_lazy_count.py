"""The meter counts only when a threshold needs it: far below, the texts' byte bound answers; near,
the exact count does, so every answer is the one counting everything exactly would give."""

from __future__ import annotations

import random

import pytest

from iota import tokens
from iota.compaction.meter import Meter, TokenCount, message_tokens
from iota.messages import ASSISTANT, USER, Message, ToolCall, Usage

# Pieces whose tokens per byte differ widely, so that bytes/4 errs both ways: English words (about
# 5 bytes a token), digits (3 a token), CJK (3 bytes, often 1 token each), emoji, code, a special
# token's text, and a lone surrogate (counted as replacement characters).
PIECES = ["word ", "the meter ", "1234567890", "你好世界", "🙂", "def f(x):\n    return x\n", "<|endoftext|>",
          "a\udc80", "  ", "Ünïcödé ", "{\"k\": [1, 2]}"]


def random_text(rng: random.Random, pieces: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(pieces))


def random_message(rng: random.Random) -> Message:
    size = rng.choice([0, 1, 5, 50, 400, 3000])
    if rng.random() < 0.2:
        call = ToolCall("c1", "read_file", {"path": random_text(rng, 3), "limit": rng.randint(1, 5000)})
        return Message(ASSISTANT, random_text(rng, size), reasoning=random_text(rng, 5), tool_calls=[call])
    return Message(rng.choice([USER, ASSISTANT]), random_text(rng, size))


def counted_exactly(messages: list[Message]) -> int:
    """What the meter's local count is, made here with the encoding and nothing else: each text
    counted, plus 4 of framing per message."""
    texts = []
    for message in messages:
        texts += [message.content, message.reasoning]
        for call in message.tool_calls:
            texts.append(call.name)
            for key, value in call.arguments.items():
                texts += [key, value if isinstance(value, str) else str(value)]
    return 4 * len(messages) + sum(tokens.count_each(texts))


@pytest.mark.parametrize("seed", range(60))
def test_reaches_answers_as_counting_everything_exactly_would(seed):
    rng = random.Random(seed)
    meter, exact = Meter(200_000), 0
    for _ in range(rng.randint(1, 8)):
        step = rng.choice(["settle", "settle without usage", "add", "add", "reseed"])
        if step == "settle":
            used = rng.randint(1, 150_000)
            meter.settle(Usage(input=used))
            exact = used
        elif step == "settle without usage":
            meter.settle(None)  # the local count stays what it was, now the settled figure
        elif step == "add":
            added = [random_message(rng) for _ in range(rng.randint(1, 3))]
            meter.add(added)
            exact += counted_exactly(added)
        else:  # after a compaction: a local count of the view plus the system prompt and tools
            view = [random_message(rng) for _ in range(rng.randint(0, 4))]
            overhead = [random_text(rng, 200), random_text(rng, 40)]
            meter.reseed(view, overhead=TokenCount(texts=overhead))
            exact = counted_exactly(view) + sum(tokens.count_each(overhead))
        adding = [random_message(rng)]
        with_adding = exact + counted_exactly(adding)
        # At the exact figure and next to it (where an estimate errs), and far on either side.
        for threshold in sorted({with_adding - 1, with_adding, with_adding + 1, with_adding * 3 + 10,
                                 max(1, with_adding // 3)}, key=lambda _: rng.random()):
            assert meter.reaches(threshold, adding) == (with_adding >= threshold), (step, threshold, with_adding)
        assert meter.used == exact  # asking added nothing


@pytest.fixture
def no_encoding(monkeypatch):
    """Any count that needs the encoding fails the test."""
    def refuse():
        raise AssertionError("the encoding was loaded")

    monkeypatch.setattr(tokens, "_counter", refuse)


def test_far_below_a_threshold_nothing_is_counted(no_encoding):
    meter = Meter(200_000)
    meter.reseed([], overhead=TokenCount(texts=["You are iota. " * 500, '{"name": "shell"} ' * 200]))
    meter.settle(None)
    meter.add([Message(USER, "hello " * 2_000), Message(ASSISTANT, "hi " * 3_000)])
    assert not meter.reaches(184_000, adding=[Message(USER, "and now? " * 1_000)])
    assert meter.status().startswith("≈")  # shown from bytes/4
    meter.settle(Usage(input=150_000))
    meter.add([Message(USER, "x" * 20_000)])
    assert not meter.reaches(184_000, adding=[Message(USER, "y" * 10_000)])
    assert meter.status() == "≈155k / 200k (77%)"  # 150,000 + 4 + 20,000 bytes / 4: nothing counted
    with pytest.raises(AssertionError, match="the encoding was loaded"):
        meter.reaches(184_000, adding=[Message(USER, "z" * 15_000)])  # the bound reaches it: a count


def test_the_figure_shown_is_bytes_over_4_until_counted_and_the_count_after():
    meter = Meter(128_000)
    meter.settle(Usage(input=90_000))
    meter.add([Message(USER, " ".join(["word"] * 8_000))])  # 8,000 tokens in 39,999 bytes
    assert meter.shown == 90_000 + 4 + 10_000
    assert meter.reaches(98_004)  # the bound (130,003) is past it: counted, and the count says yes
    assert meter.shown == 90_000 + 4 + 8_000 == meter.used


def test_a_count_is_made_once():
    count = message_tokens([Message(USER, "one two three")])
    assert (count.bound, count.estimate) == (4 + 13, 4 + 4)
    assert count.exact() == 4 + 3 and (count.bound, count.estimate, count.texts) == (7, 7, [])
