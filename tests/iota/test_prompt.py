from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from iota import prompt
from iota.prompt import PromptContext, compose
from iota.tools.base import Toolbox
from iota.errors import ToolError
from iota.tools.skills import LoadSkill
from iota.skills import catalog, discover, read_skill

TODAY = datetime.date(2026, 11, 29)


def context(root: Path, **overrides) -> PromptContext:
    values = dict(project_root=root, cwd=root, mode="chat", today=TODAY,
                  config_lines=["user config: (absent)", "project config: (absent)"])
    values.update(overrides)
    return PromptContext(**values)


def test_a_chat_without_tools_sends_only_the_instructions_bare(tmp_path):
    assert compose(context(tmp_path, instructions="Be brief.")) == "Be brief."
    assert compose(context(tmp_path)) == ""


def test_the_harness_comes_with_any_toolset(tmp_path):
    text = compose(context(tmp_path, instructions="Be brief.", toolsets=("code",)))
    parts = text.split("\n\n")
    assert parts[0] == prompt.PREAMBLE.split("\n\n")[0]
    assert "<environment>\n" f"project root: {tmp_path}\n" in text
    assert "date: 2026-11-29\n" in text and "shell: " in text and "platform: " in text
    assert "user config: (absent)\nproject config: (absent)\n</environment>" in text
    assert text.endswith("<instructions>\nBe brief.\n</instructions>")
    assert "<iota_cli>" not in text  # only with the shell set


def test_iota_cli_block_with_the_shell_set_and_host_lines_last(tmp_path):
    text = compose(context(tmp_path, toolsets=("shell",), host_lines=["host: herdr", "herdr pane: p1"]))
    assert "<iota_cli>" in text
    assert "host: herdr\nherdr pane: p1\n</environment>" in text


def test_the_harness_fits_its_cap(tmp_path):
    harness = "\n\n".join([prompt.PREAMBLE, prompt.environment_block(context(Path("/work/p"))), prompt.IOTA_CLI])
    assert len(harness.encode()) <= 1536


def test_a_bot_always_gets_the_harness_and_its_memory_last(tmp_path):
    text = compose(context(tmp_path, mode="bot", memory_block="<memory bot=\"b\">\n</memory>"))
    assert text.startswith(prompt.PREAMBLE)
    assert text.endswith("<memory bot=\"b\">\n</memory>")


def test_a_bot_with_a_journal_is_told_to_look_up_earlier_work_before_its_memory(tmp_path):
    memory = "<memory bot=\"b\">\n</memory>"
    text = compose(context(tmp_path, mode="bot", memory_block=memory, journal=True))
    assert text.endswith(prompt.JOURNAL_GUIDANCE + "\n\n" + memory)
    assert "check those entries and search your past with the recall tool before answering" in text
    assert "Never claim not to remember" in text
    assert prompt.JOURNAL_GUIDANCE not in compose(context(tmp_path, mode="bot", memory_block=memory))


def test_agents_chain_from_root_down_to_cwd(tmp_path):
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    (tmp_path / "AGENTS.md").write_text("root rules\n\n\n")
    (tmp_path / "a" / "AGENTS.md").write_text("a rules\n")
    (sub / "AGENTS.md").write_text("b rules")
    text = compose(context(tmp_path, cwd=sub, mode="agent"))
    assert text == "root rules\n\na rules\n\nb rules"
    assert compose(context(tmp_path, cwd=sub, mode="chat")) == ""


def test_agents_chain_is_capped_with_the_marker(tmp_path):
    (tmp_path / "AGENTS.md").write_text("x" * 40_000)
    chain = prompt.agents_chain(tmp_path, tmp_path)
    assert chain.endswith("\n\n<!-- AGENTS.md chain truncated at 32 KiB -->")
    assert chain.startswith("x" * 32 * 1024 + "\n\n")


def test_agents_chain_signature_changes_when_a_file_changes(tmp_path):
    path = tmp_path / "AGENTS.md"
    path.write_text("one")
    first = prompt.agents_signature(tmp_path, tmp_path)
    path.write_text("two, longer")
    second = prompt.agents_signature(tmp_path, tmp_path)
    assert first != second


def make_skill(root: Path, name: str, description: str = "Does things.", body: str = "Step one.",
               front: str | None = None) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    front = front if front is not None else f"name: {name}\ndescription: {description}\n"
    (directory / "SKILL.md").write_text(f"---\n{front}---\n{body}\n")
    return directory


def test_skills_discovery_order_validation_and_first_name_wins(tmp_path, fake_home):
    project_skills = tmp_path / ".agents" / "skills"
    make_skill(project_skills, "zeta")
    make_skill(project_skills, "alpha", description="A & <b>")
    make_skill(project_skills, "Bad_Name")
    make_skill(project_skills, "mismatch", front="name: other\ndescription: x\n")
    make_skill(project_skills, "nodesc", front="name: nodesc\n")
    make_skill(fake_home / ".iota" / "skills", "alpha")  # shadowed by the project's
    make_skill(fake_home / ".agents" / "skills", "home-skill")
    skills, warnings = discover(tmp_path)
    assert [s.name for s in skills] == ["alpha", "zeta", "home-skill"]
    assert skills[0].directory == project_skills / "alpha"
    assert len(warnings) == 4 and all(w.startswith("skill ") and "skipped" in w for w in warnings)
    text = catalog(skills)
    assert "<name>alpha</name>\n<description>A &amp; &lt;b&gt;</description>" in text
    assert text.endswith("</skill>\n</available_skills>") and "load_skill" in text.split("\n\n")[0]
    assert compose(context(tmp_path, mode="agent", skills=skills)) == text


def test_catalog_cap_notes_omitted_skills(tmp_path):
    skills = [read_skill(make_skill(tmp_path, f"s{i:03d}", "d" * 1000)) for i in range(40)]
    text = catalog(skills)
    assert len(text.encode()) <= 32 * 1024 + 200
    assert "more skill(s) omitted: catalog size cap reached</note>\n</available_skills>" in text




async def test_load_skill_reads_body_and_files_but_never_outside(tmp_path):
    directory = make_skill(tmp_path / "skills", "deploy", body="Run deploy.sh")
    (directory / "deploy.sh").write_text("echo hi\n")
    (tmp_path / "secret.txt").write_text("no")
    tool = LoadSkill([read_skill(directory)])
    assert (await tool.run({"skill": "deploy"})).content.strip() == "Run deploy.sh"
    assert (await tool.run({"skill": "deploy", "file": "deploy.sh"})).content == "echo hi\n"
    for args, message in [({"skill": "deploy", "file": "../../secret.txt"}, "outside the skill's directory"),
                          ({"skill": "nope"}, 'no skill named "nope"'),
                          ({"skill": "deploy", "file": "missing.md"}, "has no file missing.md")]:
        with pytest.raises(ToolError, match=message):
            await tool.run(args)
    result = await Toolbox([tool]).call("load_skill", {"skill": "deploy", "file": "../../secret.txt"})
    assert result.is_error
