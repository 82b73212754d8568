"""The local token count against OpenAI's own: reference counts made once with tiktoken and its
o200k_base file (see make_token_references.py), and what loading the encoding costs and needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from iota import tokens

REFERENCES = json.loads(Path(__file__).with_name("token_references.json").read_text())["references"]


@pytest.mark.parametrize("reference", REFERENCES, ids=[r["name"] for r in REFERENCES])
def test_each_text_counts_what_tiktoken_counted(reference):
    assert tokens.count(reference["text"]) == reference["tokens"]


def test_a_batch_counts_each_text_as_alone():
    assert tokens.count_each([r["text"] for r in REFERENCES]) == [r["tokens"] for r in REFERENCES]


def test_a_lone_surrogate_is_counted_not_raised():
    # A tool's undecodable output can carry one; the extension cannot take it as it is.
    assert tokens.count_each(["a\udc80b", "plain"]) == [tokens.count("a\ufffd\ufffd\ufffdb"), 1]


def run_python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60).stdout


def test_importing_loads_no_encoding_and_counting_needs_no_network():
    prose = next(r for r in REFERENCES if r["name"] == "prose")
    code = (
        "import socket, sys\n"
        "def refuse(*args, **kwargs):\n"
        "    raise OSError('no network in this test')\n"
        "socket.socket.connect = socket.socket.connect_ex = socket.create_connection = refuse\n"
        "import iota.compaction.meter, iota.tokens\n"
        "assert 'toktok' not in sys.modules, 'the encoding loaded on import'\n"
        "assert iota.tokens.count_each(['', '']) == [0, 0] and 'toktok' not in sys.modules\n"
        f"print(iota.tokens.count({prose['text']!r}))\n"
    )
    assert run_python(code) == f"{prose['tokens']}\n"


def test_threads_that_count_at_once_share_one_load():
    # Each thread would otherwise build its own ~60 MB table.
    code = (
        "import threading, time, toktok\n"
        "loads = []\n"
        "real = toktok.batch_count\n"
        "def slow_first(texts, *args, **kwargs):\n"
        "    if texts == ['']:\n"
        "        loads.append(1)\n"
        "        time.sleep(0.2)\n"
        "    return real(texts, *args, **kwargs)\n"
        "toktok.batch_count = slow_first\n"
        "from iota import tokens\n"
        "threads = [threading.Thread(target=tokens.count, args=('x',)) for _ in range(4)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "print(len(loads))\n"
    )
    assert run_python(code) == "1\n"


def test_a_texts_utf8_length_bounds_its_count_without_loading_the_encoding():
    # The meter answers "below the threshold" from this bound alone, so it must never be less than
    # the count: each o200k token stands for at least one byte. A lone surrogate is bounded as what
    # is counted in its place: three replacement characters, 9 bytes.
    texts = [r["text"] for r in REFERENCES] + [
        "", " ", "a\udc80b", "\udc80\udcff\ud800", "🙂" * 50, "你好世界" * 30, "1234567890" * 9, "<|endoftext|>",
        "\n" * 40, " " * 70, "".join(chr(c) for c in range(0x20, 0x3000, 7)),
    ]
    code = (
        "import sys\n"
        "from iota import tokens\n"
        f"bounds = [tokens.byte_bound(t) for t in {texts!r}]\n"
        "assert 'toktok' not in sys.modules, 'the bound loaded the encoding'\n"
        "print(bounds)\n"
    )
    bounds = json.loads(run_python(code))
    counts = tokens.count_each(texts)
    assert all(count <= bound for count, bound in zip(counts, bounds)), list(zip(texts, counts, bounds))
    assert bounds[len(REFERENCES) + 3] == 27  # the three lone surrogates
