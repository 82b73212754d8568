"""`/skills <name> [instructions]`: the skill's body, then the instructions, go as the message."""

from __future__ import annotations

from actors.events import Notice, TurnEnded, UserEcho
from iota.skills import read_skill
from tests.actors.test_lane import open_lane  # noqa: F401  (the fixture)


def make_skill(root, name: str, body: str):
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(f"---\nname: {name}\ndescription: does {name}\n---\n{body}")
    return read_skill(directory)


async def test_a_skill_runs_with_the_instructions_after_its_body(open_lane, fake_model, tmp_path):
    fake_model.reply("Released.")
    async with open_lane() as chat:
        chat.lane.setup.skills = [make_skill(tmp_path, "release", "Tag the version.\nPush the tag.\n")]
        chat.command("skills", "release  for v2.1 only")
        shown = await chat.until(TurnEnded)
    assert UserEcho("Tag the version.\nPush the tag.\n\nfor v2.1 only") in shown
    assert fake_model.requests[0].body["messages"][-1] == {
        "role": "user", "content": "Tag the version.\nPush the tag.\n\nfor v2.1 only"}


async def test_an_unknown_skill_says_which_there_are(open_lane, tmp_path):
    async with open_lane() as chat:
        chat.lane.setup.skills = [make_skill(tmp_path, "release", "x")]
        chat.command("skills", "deploy now")
        notice = (await chat.until(Notice))[-1]
    assert notice == Notice('no skill named "deploy" (available: release)', warning=True)
