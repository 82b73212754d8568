"""No test reaches the real home directory: HOME is the test's own, whatever the test patches."""

from __future__ import annotations

import os
from pathlib import Path


def test_home_is_the_tests_own(fake_home):
    assert Path(os.environ["HOME"]) == fake_home and Path.home() == fake_home


def test_undo_of_a_tests_own_patches_keeps_the_fake_home(fake_home, monkeypatch):
    monkeypatch.setenv("IOTA_PROBE", "1")
    monkeypatch.undo()
    assert os.environ["HOME"] == str(fake_home)
