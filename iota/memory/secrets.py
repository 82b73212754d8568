"""Spotting a secret before the model files it in MEMORY.md.

The memory is plain text, sent with every request, and people keep it in git, so a key written
there leaks three ways at once. Models do write them: a user pastes a token to get something
working, and "remember this" follows. The check is deliberately narrow: the well-known shapes of
provider keys, which are unambiguous, and a long random-looking value right after a word like
`token` or `password`. An ordinary note that merely mentions tokens ("the token lives in
$GITHUB_TOKEN", "rotate the API key monthly") passes.
"""

from __future__ import annotations

import math
import re
from collections import Counter

_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY")),
    ("an API key", re.compile(r"(?<![A-Za-z0-9])sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}")),
    ("an API key", re.compile(r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("an API key", re.compile(r"(?<![A-Za-z0-9])AIza[A-Za-z0-9_-]{35}")),
    ("a GitHub token", re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("a Slack token", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    ("a JSON web token", re.compile(r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
    ("a password in a URL", re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]{3,}@")),
)

# A word that introduces a secret, then (optionally) `is`, `:` or `=`, then the value.
_NAMED = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(?:token|password|passwd|passphrase|secret|api[ _-]?key|access[ _-]?key|bearer)"
    r"(?![A-Za-z0-9_])[\"']?\s*(?:is\s+|[:=]\s*)?[\"'`]?(?P<value>[^\s\"'`,;()]{16,})")


def secret_kind(text: str) -> str | None:
    """What kind of secret `text` seems to hold (`an API key`), or None."""
    for kind, shape in _SHAPES:
        if shape.search(text):
            return kind
    for match in _NAMED.finditer(text):
        if _looks_random(match["value"]):
            return "a password or token"
    return None


def _looks_random(value: str) -> bool:
    """A value made to be unguessable rather than read: letters and digits mixed, with enough
    entropy per character. A `$VARIABLE` or `${…}` is where a secret lives, not the secret."""
    if value.startswith("$") or "/" in value:
        return False
    if not (any(char.isdigit() for char in value) and any(char.isalpha() for char in value)):
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= 3.5
