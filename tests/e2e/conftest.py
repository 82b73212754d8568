"""End-to-end tests run the real `iota` command in a subprocess, with HOME at a tmp dir and the
fake model server on 127.0.0.1."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fake_model import FakeModel, fake_model  # noqa: F401  (the fixture)

IOTA = str(Path(sys.executable).with_name("iota"))
# The chat is ready when its card shows the mode row (`coder · agent · session …`, the agent's
# name first unless it is its mode's): the first screen is drawn before the config and the
# session are loaded, with a card that does not have one yet.
READY = re.compile(r"│ ([^│ ]+ · )?(chat|agent|bot) · ")


@dataclass
class Iota:
    """Runs `iota` as a person would, in `cwd`, with a HOME of its own."""

    home: Path
    cwd: Path
    model: FakeModel

    def env(self, **extra: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items()
               if key not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TMUX", "HERDR_ENV", "CMUX_SURFACE_ID")}
        env.update(HOME=str(self.home), **extra)
        return env

    def __call__(self, *args: str, input: str | None = None, timeout: float = 30, **env: str):
        return subprocess.run([IOTA, *args], cwd=self.cwd, env=self.env(**env), input=input,
                              capture_output=True, text=True, timeout=timeout)

    def popen(self, *args: str, **env: str) -> subprocess.Popen:
        return subprocess.Popen([IOTA, *args], cwd=self.cwd, env=self.env(**env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def write_config(self, agents: str, *, dialect: str = "openai") -> Path:
        url = self.model.openai_url if dialect == "openai" else self.model.url
        path = self.home / ".iota.yaml"
        path.write_text(
            f"providers:\n  fake: {{type: {dialect}, url: '{url}', key: test-key}}\n"
            f"models:\n  m: {{provider: fake, id: fake-model, context_window: 200k}}\n"
            f"agents:\n{agents}")
        return path


@pytest.fixture
def iota(tmp_path, fake_model, fake_home):
    """The test process and the `iota` it runs share the tmp HOME, so a test can prepare or
    inspect ~/.iota with the library itself."""
    home = fake_home
    project = tmp_path / "project"
    project.mkdir()
    return Iota(home, project, fake_model)
