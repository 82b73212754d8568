"""The local token count: how many tokens a text is, counted on this machine.

iota counts with o200k_base, the encoding of OpenAI's current models (GPT-4o, GPT-4.1, GPT-5,
the o-series), as the Rust iota does. For those models the count is the provider's own; for
Claude and Gemini it is an estimate (their tokenizers do not ship with any package), which the
meter replaces with the provider's own figure after every response.

The encoding comes from toktok-rs, which compiles it into its extension module: nothing is
downloaded, ever (tiktoken itself fetches its encodings from the network on first use). Its
counts are tiktoken's, token for token; the tests check them against reference counts made with
tiktoken once (tests/iota/make_token_references.py).

Loading the encoding costs some 60 MB for as long as the process lives, and about a third of a
second with the GIL held (a worker thread would not keep the event loop running meanwhile). So
importing this module loads nothing, and neither does `byte_bound`: only the first `count` does.
An ordinary chat never needs one: every o200k token stands for at least one byte of UTF-8 (it is
a byte-level BPE), so a text's UTF-8 length bounds its count from above, and the meter counts
only when that bound could reach a threshold (iota.compaction.meter). A lock makes threads that
count at once share one load. A bot that will need a count right after a compaction loads it
early (`load`), while the compaction waits for the model (actors.compactor).
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

ENCODING = "o200k_base"

_load_lock = threading.Lock()
_count_batch: Callable[[list[str]], list[int]] | None = None


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
        return counter([_encodable(text) for text in batch])


def load() -> None:
    """Load the encoding now unless it is loaded (blocking, with the GIL held for as long)."""
    _counter()


def loaded() -> bool:
    return _count_batch is not None


def byte_bound(text: str) -> int:
    """An upper bound on `count(text)`, without the encoding: the UTF-8 length of what is counted
    (every token stands for at least one byte)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return len(_encodable(text).encode("utf-8"))


def _encodable(text: str) -> str:
    """`text` as the encoding can take it. A lone surrogate (from a tool's undecodable output)
    cannot cross into the extension: it counts as the replacement characters a UTF-8 decoder
    would make of it."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


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
