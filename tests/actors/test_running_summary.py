"""A bot's running summary (iota.bots.summary, actors.upkeep), in the whole chat against the fake
model (its request log): refreshed every `summary_every` typed turns by one tool-less call over the
exchange since the last refresh and the summary on disk (a person's edit included); cancelled at
once by a typed message and run again after it; carried by the first request after a compaction
and given to the compaction prompt."""

from __future__ import annotations

import trio

from actors.events import Status, Submit, TurnEnded
from iota import paths
from iota.bots.summary import HEADINGS, SUMMARY_MARK, SUMMARY_REQUEST
from tests.actors.test_upkeep import Face, configure, exchange, run_bot  # noqa: F401  (the fixture)
from tests.support.fake_model import Gate, fake_model  # noqa: F401  (the fixture)

QUIET = "  coder:\n    mode: bot\n    model: m\n    upkeep_every: 50\n"   # no extraction in the way: only the summary calls the upkeep model
ANSWER = ("## Goals\n- Ship the parser by Friday\n## Preferences\n- Short replies\n## Decisions\n- Use lark\n"
          "## Open questions\n- Which Python?\n## Next steps\n- Write the grammar\n")


def summaries(fake_model) -> list:  # noqa: F811
    return [r for r in fake_model.upkeep_requests if r.body["messages"][-1]["content"].startswith(SUMMARY_REQUEST)]


def summary_file():
    return paths.bots_dir() / "coder" / "summary.md"


async def test_it_is_refreshed_every_n_typed_turns_with_the_persons_edit_and_no_tools(configure, fake_model):  # noqa: F811
    configure(QUIET + "    summary_every: 2\n")
    counts = []

    async def person(face: Face) -> None:
        for turn in range(1, 6):
            fake_model.reply(f"Answer {turn}.")
            if turn == 2:
                fake_model.upkeep(ANSWER)
            if turn == 4:
                fake_model.upkeep(ANSWER.replace("Write the grammar", "Test the grammar"))
            await face.say(f"step {turn} of the parser")
            counts.append(len(summaries(fake_model)))
            if turn == 3:   # the person edits the summary between refreshes
                summary_file().write_text(summary_file().read_text().replace("Short replies", "Terse replies"))

    await run_bot(person)
    assert counts == [0, 1, 1, 2, 2]
    first, second = summaries(fake_model)
    assert "tools" not in first.body and "tools" not in second.body
    assert "step 1 of the parser" in exchange(first) and "step 2 of the parser" in exchange(first)
    assert "step 2" not in exchange(second) and "step 3" in exchange(second) and "step 4" in exchange(second)
    assert "(none yet)" in first.body["messages"][-1]["content"]
    assert "- Terse replies" in second.body["messages"][-1]["content"]   # the edit reached the refresh
    text = summary_file().read_text()
    assert [line[3:] for line in text.splitlines() if line.startswith("## ")] == list(HEADINGS)
    assert "Test the grammar" in text and len(text.encode()) <= 1536
    assert "Terse replies" in (summary_file().parent / "summary.md.prev").read_text()


async def test_summary_every_0_never_refreshes(configure, fake_model):  # noqa: F811
    configure(QUIET + "    summary_every: 0\n")

    async def person(face: Face) -> None:
        for turn in range(7):
            fake_model.reply("Ok.")
            await face.say(f"point {turn}")

    await run_bot(person)
    assert summaries(fake_model) == [] and not summary_file().exists()


async def test_a_typed_message_cancels_a_refresh_at_once_and_it_runs_again_after(configure, fake_model):  # noqa: F811
    configure(QUIET + "    summary_every: 1\n")
    held = Gate()

    async def person(face: Face) -> None:
        fake_model.reply("Noted.")
        fake_model.upkeep("## Goals\n- never", gate=held)   # never released: only a cancel ends it
        await face.inputs.send(Submit("the parser is the goal"))
        await face.until(lambda e: isinstance(e, Status) and e.running == "wrapping up…")
        await trio.to_thread.run_sync(fake_model.wait_for_upkeep_request)
        fake_model.reply("On it.")
        fake_model.upkeep(ANSWER)
        started = trio.current_time()
        await face.inputs.send(Submit("what is next?"))
        await face.until(TurnEnded)
        assert trio.current_time() - started < 3
        await face.idle()

    await run_bot(person)
    assert [r.body["messages"][-1]["content"] for r in fake_model.requests] == \
        ["the parser is the goal", "what is next?"]
    cancelled, again = summaries(fake_model)
    assert cancelled.disconnected
    assert "the parser is the goal" in exchange(again) and "what is next?" in exchange(again)
    assert "Ship the parser by Friday" in summary_file().read_text()


async def test_it_is_carried_after_a_compaction_and_given_to_the_compaction_prompt(configure, fake_model):  # noqa: F811
    configure(QUIET + "    summary_every: 0\n")
    summary_file().parent.mkdir(parents=True, exist_ok=True)
    summary_file().write_text(ANSWER)

    async def person(face: Face) -> None:
        for turn in range(3):
            fake_model.reply(f"Answer {turn}.")
            await face.say(f"turn {turn}")
        fake_model.reply("Condensed: three turns about the parser.")   # the compaction's summary
        await face.inputs.send(Submit("/compact"))
        await face.idle()
        fake_model.reply("Back.")
        await face.say("where were we?")
        fake_model.reply("Still here.")
        await face.say("and then?")

    await run_bot(person)
    compaction = next(r for r in fake_model.requests if "--- RUNNING SUMMARY" in str(r.body["messages"]))
    assert "Ship the parser by Friday" in str(compaction.body["messages"])
    before, after, later = fake_model.requests[2], fake_model.requests[-2], fake_model.requests[-1]
    carried = [m["content"] for m in after.body["messages"] if SUMMARY_MARK in str(m.get("content"))]
    assert len(carried) == 1 and "Ship the parser by Friday" in carried[0]
    assert SUMMARY_MARK not in str(before.body["messages"])
    # It rides on that message, in the log: later requests carry the same one, not another.
    assert sum(SUMMARY_MARK in str(m.get("content")) for m in later.body["messages"]) == 1


async def test_upkeep_false_refreshes_no_summary_either(configure, fake_model):  # noqa: F811
    configure(QUIET + "    upkeep: false\n    summary_every: 1\n")

    async def person(face: Face) -> None:
        for turn in range(3):
            fake_model.reply("Ok.")
            await face.say(f"point {turn}")

    await run_bot(person)
    assert summaries(fake_model) == [] and not summary_file().exists()
