"""Every test runs with HOME pointed at its own tmp dir and no real API keys, so no test can
touch the real home directory or reach a real model."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def fake_home(tmp_path_factory):
    """The test's own HOME. Set with a MonkeyPatch of its own, not the test's `monkeypatch`: a test
    that calls `monkeypatch.undo()` to put its own patches back must not put the real HOME back
    with them (one did, and its next bot start wrote ~/.iota in the real home directory)."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "IOTA_SHELL", "HERDR_ENV", "HERDR_PANE_ID",
                    "HERDR_SOCKET_PATH", "CMUX_SURFACE_ID", "TMUX", "NO_COLOR"):
            patch.delenv(var, raising=False)
        yield home



def pytest_addoption(parser):
    # The soak test (tests/e2e/test_soak.py): how many kill -9 points, and the seed to replay one.
    # IOTA_SOAK_KILLS sets the default (the figure: IOTA_SOAK_KILLS=200).
    kills = int(os.environ.get("IOTA_SOAK_KILLS") or 20)
    parser.addoption("--soak", type=int, default=kills, metavar="N",
                     help=f"kill -9 points of the soak test (default {kills}; IOTA_SOAK_KILLS sets it)")
    parser.addoption("--soak-seed", type=int, default=None, metavar="SEED", help="replay the soak test of this seed")
