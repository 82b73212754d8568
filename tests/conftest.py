"""Every test runs with HOME pointed at its own tmp dir and no real API keys, so no test can
touch the real home directory or reach a real model."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def fake_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "IOTA_SHELL", "HERDR_ENV", "HERDR_PANE_ID",
                "HERDR_SOCKET_PATH", "CMUX_SURFACE_ID", "TMUX", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    return home


def pytest_addoption(parser):
    # The soak test (tests/e2e/test_soak.py): how many kill -9 points, and the seed to replay one.
    parser.addoption("--soak", type=int, default=20, metavar="N", help="kill -9 points of the soak test (default 20)")
    parser.addoption("--soak-seed", type=int, default=None, metavar="SEED", help="replay the soak test of this seed")
