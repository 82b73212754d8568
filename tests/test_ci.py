"""CI runs exactly the test command README.md gives, and that command lints with ruff, then runs pytest."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_test_command() -> str:
    """The command in the fenced block after "Install what the tests need and run them"."""
    readme = (REPO / "README.md").read_text()
    found = re.search(r"Install what the tests need and run them:\n\n```sh\n(.+)\n```", readme)
    assert found, "README.md gives no test command"
    return found.group(1)


def test_ci_runs_the_readme_test_command_verbatim():
    lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines[-1] == readme_test_command()


def test_the_readme_test_command_installs_the_tools_lints_and_runs_pytest():
    command = readme_test_command()
    assert command.startswith("scripts/install-test-tools && ")
    assert command.endswith(" && .venv/bin/ruff check && .venv/bin/python -m pytest")
    assert (REPO / "scripts" / "install-test-tools").stat().st_mode & 0o111
