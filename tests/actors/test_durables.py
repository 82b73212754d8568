"""A bot's durables on its messages, in the whole chat against the fake model (its request log): the
ones a message is about and the pinned ones ride on it as a hidden notice, within the caps, out of
a store of hundreds; the system prompt is byte-identical from one message to the next; a durable
already carried in the view is not sent again."""

from __future__ import annotations

import json

from iota import paths
from iota.bots.candidates import DURABLE, CandidateBook, Entry
from iota.bots.durables import DURABLES_MARK, SENT_BYTES
from tests.actors.test_upkeep import Face, configure, run_bot  # noqa: F401  (the fixture)
from tests.support.fake_model import fake_model  # noqa: F401  (the fixture)


def seed_store() -> None:
    entries = [Entry(f"d{n}", f"Topic {n} uses the orchid{n} layout", DURABLE, keywords=[f"orchid{n}"], created=n)
               for n in range(500)]
    entries += [Entry("pin", "Answers in British English", DURABLE, pinned=True),
                Entry("deploy", "Deploys go to staging first", DURABLE, keywords=["deploy", "staging"])]
    bot_dir = paths.bots_dir() / "coder"
    bot_dir.mkdir(parents=True, exist_ok=True)
    CandidateBook(bot_dir).save(entries)


def blocks(request) -> list[str]:
    return [m["content"] for m in request.body["messages"]
            if m["role"] == "user" and isinstance(m["content"], str) and DURABLES_MARK in m["content"]]


async def test_relevant_and_pinned_durables_ride_on_the_message_and_the_system_prompt_holds(configure, fake_model):  # noqa: F811
    seed_store()

    async def person(face: Face) -> None:
        fake_model.reply("Hello.")
        await face.say("good morning")
        fake_model.reply("Done.")
        await face.say("please deploy the fix to staging")
        fake_model.reply("Sure.")
        await face.say("and what about orchid7?")

    await run_bot(person)
    first, second, third = fake_model.requests
    assert first.body["messages"][0] == second.body["messages"][0] == third.body["messages"][0]
    system = json.dumps(first.body["messages"][0])
    assert "British English" not in system and "staging" not in system

    [pinned] = blocks(first)
    assert "- Answers in British English" in pinned and "staging first" not in pinned
    assert len(pinned.encode()) <= SENT_BYTES
    # The second message is about deploying to staging: that durable comes with it, the pin is
    # already in the view (the first block rides on) and is not repeated.
    assert blocks(second)[0] == pinned
    [deploy] = blocks(second)[1:]
    assert "- Deploys go to staging first" in deploy and "British English" not in deploy
    assert "orchid" not in deploy
    assert "- Topic 7 uses the orchid7 layout" in blocks(third)[-1]
    assert len(blocks(third)) == 3
