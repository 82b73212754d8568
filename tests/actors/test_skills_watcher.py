"""Hot reload of skills (actors.skills_watcher) in a running agent chat: a skill edited, added or
removed on disk between two messages reaches the next request's catalog and `load_skill`, with a
dim notice; a chat that started with no skill gets `load_skill` when one appears."""

from __future__ import annotations

import shutil
from pathlib import Path

from actors.events import Notice
from tests.actors.test_upkeep import Face, configure, run_bot  # noqa: F401  (the fixture)
from tests.support.fake_model import fake_model, tool_call  # noqa: F401  (the fixture)

# Not saved: a saved session gets a title pass in the background, which these tests do not want.
AGENT = "  coder:\n    mode: agent\n    model: m\n    no_save: true\n"


def skill(name: str, description: str, body: str = "Steps.") -> None:
    folder = Path.cwd() / ".agents" / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")


def system(request) -> str:
    first = request.body["messages"][0]
    return first["content"] if first["role"] == "system" else ""


def tools(request) -> list[str]:
    return [tool["function"]["name"] for tool in request.body.get("tools", [])]


async def test_a_skill_edited_added_or_removed_on_disk_reaches_the_next_request(configure, fake_model):  # noqa: F811
    configure(AGENT)
    skill("release", "Cut a release")

    async def person(face: Face) -> None:
        fake_model.reply("One.")
        await face.say("first")
        skill("release", "Cut a release, signed this time", "1. Sign the tag.")
        fake_model.reply("Two.")
        await face.say("second")
        skill("deploy", "Deploy to staging")
        fake_model.reply("Three.")
        await face.say("third")
        shutil.rmtree(Path.cwd() / ".agents" / "skills" / "release")
        fake_model.reply(tool_calls=[tool_call("load_skill", {"skill": "release"})])
        fake_model.reply("It is gone.")
        await face.say("fourth")
        assert [text for text in face.notices() if text.startswith("skill ")] == \
            ["skill release changed", "skill deploy added", "skill release removed"]

    await run_bot(person)
    first, second, third, fourth, after_call = fake_model.requests
    assert "Cut a release</description>" in system(first) and "signed this time" not in system(first)
    assert "Cut a release, signed this time" in system(second)
    assert "<name>deploy</name>" in system(third) and "<name>release</name>" in system(third)
    assert "<name>release</name>" not in system(fourth)
    result = after_call.body["messages"][-1]
    assert result["role"] == "tool" and 'no skill named "release"' in result["content"]


async def test_load_skill_joins_a_chat_that_started_without_skills(configure, fake_model):  # noqa: F811
    configure(AGENT)

    async def person(face: Face) -> None:
        fake_model.reply("One.")
        await face.say("first")
        skill("deploy", "Deploy to staging", "1. Run make deploy.")
        fake_model.reply(tool_calls=[tool_call("load_skill", {"skill": "deploy"})])
        fake_model.reply("Read it.")
        await face.say("second")

    await run_bot(person)
    first, second, after_call = fake_model.requests
    assert "load_skill" not in tools(first) and "load_skill" in tools(second)
    assert after_call.body["messages"][-1]["content"].strip() == "1. Run make deploy."


async def test_nothing_changes_while_nothing_changed_on_disk(configure, fake_model):  # noqa: F811
    configure(AGENT)
    skill("release", "Cut a release")

    async def person(face: Face) -> None:
        for n in range(3):
            fake_model.reply("Ok.")
            await face.say(f"message {n}")
        assert not [event for event in face.seen if isinstance(event, Notice) and event.text.startswith("skill ")]

    await run_bot(person)
    assert len({system(request) for request in fake_model.requests}) == 1
