"""What the actor tests share: a config pointing at the fake model server, and a session."""

from __future__ import annotations

from pathlib import Path

import pytest

from iota import paths
from iota.sessions.bundle import Session
from tests.support.fake_model import fake_model  # noqa: F401  (the fixture)


@pytest.fixture
def project(tmp_path, fake_home, fake_model) -> Path:  # noqa: F811
    """A project directory, with a config in the tmp HOME: a chat agent and a `code` agent."""
    (fake_home / ".iota.yaml").write_text(
        f"providers:\n  fake: {{type: openai, url: '{fake_model.openai_url}', key: test-key}}\n"
        "models:\n  m: {provider: fake, id: fake-model, context_window: 200k}\n"
        "agents:\n"
        "  chat:\n    model: m\n"
        "  coder:\n    model: m\n    tools:\n      code:\n")
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def session():
    """A saving session in the flat sessions dir, written by its first append."""
    session = Session.new(paths.sessions_dir(), provider="fake", model="fake-model")
    yield session
    session.close()
