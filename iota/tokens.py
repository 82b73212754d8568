"""The local token count: how many tokens a text is, counted on this machine.

iota counts with o200k_base, the encoding of OpenAI's current models (GPT-4o, GPT-4.1, GPT-5,
the o-series), as the Rust iota does. For those models the count is the provider's own; for
Claude and Gemini it is an estimate (their tokenizers do not ship with any package), which the
meter replaces with the provider's own figure after every response.

The encoding comes from toktok-rs, which compiles it into its extension module: nothing is
downloaded, ever (tiktoken itself fetches its encodings from the network on first use). Its
counts are tiktoken's, token for token; the tests check them against reference counts made with
tiktoken once (tests/iota/make_token_references.py).

Loading the encoding takes about a third of a second and some 60 MB, so importing this module
loads nothing: the first count does, or `preload`, which the chat runs in a worker thread behind
its first screen. A lock makes the two share one load.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

ENCODING = "o200k_base"

_load_lock = threading.Lock()
_count_batch: Callable[[list[str]], list[int]] | None = None


def preload() -> None:
    """Load the encoding now (blocks for the load: meant for `trio.to_thread.run_sync`)."""
    _counter()


def count(text: str) -> int:
    """The tokens in `text`."""
    return count_each([text])[0]


def count_each(texts: Sequence[str]) -> list[int]:
    """The tokens in each of `texts`, counted in one batch (a call per text costs far more)."""
    if not any(texts):  # nothing to count: no reason to load the encoding
        return [0] * len(texts)
    batch = list(texts)
    counter = _counter()
    try:
        return counter(batch)
    except UnicodeEncodeError:
        # A lone surrogate (from a tool's undecodable output) cannot cross into the extension:
        # count each one as the replacement characters a UTF-8 decoder would make of it.
        return counter([text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for text in batch])


def _counter() -> Callable[[list[str]], list[int]]:
    global _count_batch
    if _count_batch is None:
        with _load_lock:
            if _count_batch is None:
                import toktok

                def count_batch(texts: list[str]) -> list[int]:
                    # One thread: the batches here are small, and the machine's cores are the
                    # chat's and its tools'. Special tokens (`<|endoftext|>`) count as the text
                    # they are, as a provider counts text a user or a tool wrote.
                    return toktok.batch_count(texts, ENCODING, threads=1)

                count_batch([""])  # the load itself
                _count_batch = count_batch
    return _count_batch
