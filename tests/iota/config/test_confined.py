"""What a confined iota (started by a sandboxed iota's command) reads of a project's config: only
the file its parent ran under, unchanged, and never as trusted (iota.config.confined)."""

from __future__ import annotations

import pytest

from iota.config import settings, trust
from iota.config.confined import PROJECT_CONFIG_VARIABLE, ROOT_VARIABLE, ProjectPin
from iota.errors import ConfigError

USER = "providers:\n  oa: {type: openai, key: k}\nmodels:\n  gpt: oa:x\nagents:\n  coder: {model: gpt}\n"
PROJECT = ("agents:\n  reviewer: {model: gpt, system: From the project.}\n"
           "  coder: {model: gpt, tools: {shell: {sandbox: off, auto_run: true}}}\n")


@pytest.fixture
def project(tmp_path, fake_home):
    (fake_home / ".iota.yaml").write_text(USER)
    directory = tmp_path / "project"
    (directory / "sub").mkdir(parents=True)
    (directory / ".iota.yaml").write_text(PROJECT)
    return directory


def confine(monkeypatch, project, pin: ProjectPin) -> None:
    monkeypatch.setenv(ROOT_VARIABLE, str(project))
    monkeypatch.setenv(PROJECT_CONFIG_VARIABLE, pin.value())


def test_the_parents_file_is_read_as_untrusted_whatever_the_person_decided(project, monkeypatch):
    parent = settings.load(project)
    trust.record(parent.project_review, trust.TRUST)
    assert settings.load(project).agents["coder"].tools.shell.sandbox == "off"   # the person trusted it
    (project / "sub" / ".iota.yaml").write_text("agents:\n  planted: {model: gpt}\n")
    confine(monkeypatch, project, ProjectPin(project / ".iota.yaml", parent.project_sha256))

    child = settings.load(project / "sub")   # from sub/, whose own file is not read

    assert child.project_file == project / ".iota.yaml" and "planted" not in child.agents
    assert child.agents["reviewer"].system == "From the project."
    assert child.agents["coder"].tools.shell is None                             # the person's coder
    assert child.project_review.decision is None and child.project_review.left_out == ["agents.coder"]


def test_a_changed_file_is_not_read(project, monkeypatch):
    digest = settings.load(project).project_sha256
    (project / ".iota.yaml").write_text(PROJECT + "  more: {model: gpt}\n")
    confine(monkeypatch, project, ProjectPin(project / ".iota.yaml", digest))

    child = settings.load(project)

    assert child.project_file is None and "reviewer" not in child.agents
    assert child.warnings == [f"project config {project / '.iota.yaml'}: not read (it changed since the iota that "
                              "started this one read it)"]


def test_a_parent_without_a_project_file_hands_down_none(project, monkeypatch):
    confine(monkeypatch, project, ProjectPin())
    assert settings.load(project).project_file is None
    monkeypatch.delenv(PROJECT_CONFIG_VARIABLE)          # confined, and nothing said: none either
    assert settings.load(project).project_file is None


@pytest.mark.parametrize("value", ["{", '{"path": "relative", "sha256": "' + "0" * 64 + '"}', '{"path": "/x"}'])
def test_a_malformed_pin_stops_the_start(project, monkeypatch, value):
    monkeypatch.setenv(ROOT_VARIABLE, str(project))
    monkeypatch.setenv(PROJECT_CONFIG_VARIABLE, value)
    with pytest.raises(ConfigError, match=f"^{PROJECT_CONFIG_VARIABLE} is malformed"):
        settings.load(project)
