"""The real sandbox for the tests that run commands in it.

Where bwrap is not installed (a fresh machine before `scripts/install-test-tools` installs it) those tests skip;
where it is installed it must work: a bwrap that cannot sandbox is a failure, not a skip, so a
broken sandbox never passes unnoticed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iota.sandbox.bwrap import Sandbox, probe_sandbox


async def real_sandbox(root: Path, **options) -> Sandbox:
    found = await probe_sandbox(root, **options)
    if isinstance(found, Sandbox):
        return found
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed (Debian: apt-get install bubblewrap)")
    raise AssertionError(f"bwrap is installed but cannot sandbox here: {found.reason}")
