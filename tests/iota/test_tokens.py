"""The local token estimate: a token per 4 bytes of UTF-8, and how far that is from OpenAI's own
count of the reference texts (made once with tiktoken and its o200k_base file, see
make_token_references.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from iota import tokens

REFERENCES = json.loads(Path(__file__).with_name("token_references.json").read_text())["references"]


def test_each_text_is_a_token_per_4_bytes_rounded_up():
    assert tokens.estimate([]) == tokens.estimate([""]) == 0
    assert tokens.estimate(["abcd"]) == 1
    assert tokens.estimate(["abcde", "a"]) == 2 + 1  # each text rounded up on its own
    assert tokens.estimate(["你好世界"]) == 3  # 12 bytes of UTF-8


def test_a_lone_surrogate_is_estimated_not_raised():
    # A tool's undecodable output can carry one: it counts as the 3 bytes it would take.
    assert tokens.estimate(["a\udc80b"]) == 2


@pytest.mark.parametrize("reference", [r for r in REFERENCES if r["tokens"]], ids=lambda r: r["name"])
def test_the_estimate_is_within_the_band_the_module_states(reference):
    # iota.tokens says 0.6× to 1.3× of OpenAI's count: a change of the estimate that leaves that
    # band must say so there.
    ratio = tokens.estimate([reference["text"]]) / reference["tokens"]
    assert 0.55 <= ratio <= 1.35, ratio


def test_no_tokenizer_is_loaded():
    code = "import sys, iota.compaction.meter, iota.tokens; iota.tokens.estimate(['x']); print(sorted(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60).stdout
    assert "toktok" not in loaded and "tiktoken" not in loaded
