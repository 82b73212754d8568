"""Writes token_references.json beside this file: fixed texts and their o200k_base token counts as
OpenAI's own tiktoken makes them. tests/iota/test_tokens.py checks iota's count against it.

It was run once, offline, and its output committed; run it again only to add a text:

    pip install tiktoken
    mkdir -p /tmp/tiktoken-cache
    cp o200k_base.tiktoken /tmp/tiktoken-cache/fb374d419588a4632f3f557e76b4b70aebbca790
    TIKTOKEN_CACHE_DIR=/tmp/tiktoken-cache python tests/iota/make_token_references.py

tiktoken reads the encoding from its cache (the file name is the SHA-1 of the encoding's URL)
instead of downloading it, and checks the file's SHA-256 (446a9538…1a2d) first, so a copy of
o200k_base.tiktoken from anywhere serves — the committed counts came from the copy in the
bpe-openai wheel on PyPI (bpe_openai/data/o200k_base.tiktoken.gz, unzipped).
"""

from __future__ import annotations

import json
from pathlib import Path

PROSE = (
    "The meter keeps two figures and never confuses them. What the next request will carry is known "
    "exactly only once it has been sent: the provider's usage then says how many tokens the conversation "
    "filled. Between two responses the conversation grows — the user's message, tool results, a notice — "
    "and none of that has been measured yet, so a local count stands in until the next reply arrives. "
    "It isn't billed; it's only compared against thresholds, and shown behind a tilde."
)
CODE = '''def retry_delay(headers: httpx.Headers | None, retries_taken: int) -> float:
    """How long to wait before retry number `retries_taken + 1`."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(headers.get(name, "")) * scale if headers is not None else 0.0
        except ValueError:
            continue
        if 0 < seconds <= MAX_RETRY_AFTER:
            return seconds
    return min(FIRST_BACKOFF * 2**retries_taken, MAX_BACKOFF) * (1 - 0.25 * random.random())
'''
RUST = '''impl Meter {
    pub fn used(&self) -> u64 {
        self.settled.saturating_add(self.pending)
    }
}
'''
JSON = json.dumps({"path": "src/main.py", "old_string": "if x == 1:\n    return", "new_string": "if x in (1, 2):\n    return",
                   "lines": [1, 40], "replace_all": False})
SHELL = """$ pytest -q tests/iota/providers
........................................................................ [ 73%]
.....................................................                    [100%]
197 passed in 16.90s
$ git log --oneline | head -3
1fa5059 Sandbox: commands get a cache of their own
8810ea0 Merge the sandbox: .git bound onto itself, private /tmp and /dev
"""
MARKDOWN = """## Config

| key | does |
|---|---|
| `context_window` | `200k`, `1m`, `1.5m` (k/m/b = ×10^3/6/9); the default is 128k |
| `effort` | `minimal`, `low`, `medium` or `high` |

- Booleans take YAML 1.1 spellings (`true/yes/on/false/no/off`).
"""
OTHER_SCRIPTS = "東京は日本の首都です。Привет, как дела? مرحبا بالعالم. Ελληνικά κείμενα. 안녕하세요 세계"
SYMBOLS = "🧠👍🏽 e\u0301 ﬁ <|endoftext|> \t\t  \n\n\n 3.14159265358979 0xDEADBEEF ~~~ →→ «»"

TEXTS = {"prose": PROSE, "python": CODE, "rust": RUST, "json": JSON, "shell": SHELL, "markdown": MARKDOWN,
         "other scripts": OTHER_SCRIPTS, "symbols": SYMBOLS, "empty": "", "long": PROSE * 40}


def main() -> None:
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    # encode_ordinary: special tokens' text counts as text, as iota counts it.
    references = [{"name": name, "text": text, "tokens": len(encoding.encode_ordinary(text))} for name, text in TEXTS.items()]
    out = Path(__file__).with_name("token_references.json")
    out.write_text(json.dumps({"encoding": "o200k_base", "made_with": f"tiktoken {tiktoken.__version__}",
                               "references": references}, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
