"""`iota search`'s flags (ui.commands.search); the search itself is in tests/e2e/test_journal.py."""

from __future__ import annotations

from datetime import datetime

import pytest

from iota.errors import IotaError
from ui.commands.search import parse_since

NOW = 1_800_000_000.0


@pytest.mark.parametrize("text, ago", [("30m", 1800), ("12h", 43200), ("7d", 604800), ("2w", 1209600), (" 1d ", 86400)])
def test_since_takes_a_span(text, ago):
    assert parse_since(text, NOW) == NOW - ago


def test_since_takes_a_date_at_its_local_start():
    assert parse_since("2026-10-01", NOW) == int(datetime(2026, 10, 1).astimezone().timestamp())


@pytest.mark.parametrize("text", ["yesterday", "7", "d7", "-1d", "7 days"])
def test_anything_else_is_a_one_line_error(text):
    with pytest.raises(IotaError, match=rf'^--since wants a time like 30m, 12h, 7d or 2w, or a date \(2026-10-01\), got "{text}"$'):
        parse_since(text, NOW)
