"""The local token estimate: how many tokens some text will be, guessed on this machine.

A provider counts a request with its own tokenizer and says how many tokens it was in each
response's usage; between two responses the meter (iota.compaction.meter) needs a figure for
what was added since, and before the first response one for the system prompt and the tools'
definitions. iota estimates it as the Rust iota does when it has no tokenizer: a token per 4
bytes of UTF-8, each text rounded up. The meter shows such a figure behind `≈`, and the next
response's usage replaces it.

Against OpenAI's own o200k_base counts of the reference texts (tests/iota/token_references.json,
made with tiktoken) the estimate is 0.6× to 1.3× the count: English prose 1.26×, code about
0.9×, JSON and Markdown tables about 0.6×. An exact o200k_base count (toktok-rs) was tried and
dropped: its tables took 63 MB of every chat's memory and a third of a second in which no other
thread ran, for a figure that is the provider's own only for OpenAI's models, and an estimate
too for every other provider.
"""

from __future__ import annotations

from collections.abc import Iterable

BYTES_PER_TOKEN = 4


def estimate(texts: Iterable[str]) -> int:
    """The tokens in `texts` together, at a token per 4 bytes of UTF-8 each (rounded up). A lone
    surrogate (from a tool's undecodable output) counts as the 3 bytes it would take."""
    return sum(-(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN) for text in texts)
