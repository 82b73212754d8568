"""`memory: false` on a bot, in the whole chat against the fake model (its request log): no journal,
no recall, no remember, no upkeep, no candidates or durables; its memory files still go out with
every request, and its conversation still resumes."""

from __future__ import annotations

import json

from iota import paths
from iota.bots.candidates import DURABLE, CandidateBook, Entry
from tests.actors.test_upkeep import BOT, Face, configure, run_bot  # noqa: F401  (the fixture)
from tests.support.fake_model import fake_model  # noqa: F401  (the fixture)


def tool_names(request) -> list[str]:
    return [tool["function"]["name"] for tool in request.body.get("tools") or []]


async def test_memory_false_keeps_no_journal_offers_no_memory_tools_and_still_sends_the_files(configure, fake_model):  # noqa: F811
    configure(BOT + "    memory: false\n")
    bot_dir = paths.bots_dir() / "coder"
    (bot_dir / "memory").mkdir(parents=True)
    (bot_dir / "MEMORY.md").write_text("---\nbot: coder\n---\n# coder memory\n## User\n- Likes green tea\n")
    (bot_dir / "memory" / "BRIEF.md").write_text("# Brief\n## Goals\n- Ship the parser\n")
    CandidateBook(bot_dir).save([Entry("d1", "Answers in British English", DURABLE, pinned=True)])

    async def person(face: Face) -> None:
        for turn in range(6):
            fake_model.reply(f"Ok {turn}.")
            await face.say(f"remember point {turn}, from now on")

    await run_bot(person)
    assert fake_model.upkeep_requests == []
    for request in fake_model.requests:
        assert not {"remember", "recall"} & set(tool_names(request))
        system = request.body["messages"][0]["content"]
        assert "Likes green tea" in system and "Ship the parser" in system
        assert "British English" not in json.dumps(request.body)
    assert not (bot_dir / "journal.sqlite").exists()
    assert not (bot_dir / "candidates.jsonl").exists()

    # The conversation resumes: the next run's request carries the first run's messages.
    async def again(face: Face) -> None:
        fake_model.reply("Still here.")
        await face.say("are you there?")

    await run_bot(again)
    said = json.dumps(fake_model.requests[-1].body["messages"])
    assert "remember point 0, from now on" in said and "are you there?" in said
    assert not (bot_dir / "journal.sqlite").exists()
