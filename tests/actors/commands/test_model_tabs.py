"""`/model`'s Top P and System tabs, and the meta.json every `/model` change leaves behind."""

from __future__ import annotations

import json
from pathlib import Path

from actors.events import Choose, Notice, Panel, RunInTerminal, TurnEnded
from iota.sessions.conversation import Conversation
from tests.actors.test_lane import open_lane  # noqa: F401  (the fixture)

TOP_P, SYSTEM = 4, 5


async def answer(chat, index: int) -> Choose:
    choose = (await chat.until(Choose))[-1]
    choose.reply.send_nowait(index)
    return choose


async def test_top_p_is_set_for_this_process_sent_and_recorded_as_the_persons_own(open_lane, fake_model, session):
    fake_model.reply("ok")
    async with open_lane(Conversation(session=session)) as chat:
        chat.command("model")
        aspects = await answer(chat, TOP_P)
        assert aspects.options[TOP_P:] == ("Top P (default)", "System prompt")
        values = await answer(chat, 3)
        assert values.options == ("default", "0.1", "0.5", "0.9", "0.95", "1.0")
        notice = (await chat.until(Notice))[-1]
        assert notice == Notice("Model: m (200k window, top_p 0.9) — for this process")
        chat.submit("hi")
        await chat.until(TurnEnded)
    assert fake_model.requests[0].body["top_p"] == 0.9
    meta = json.loads((session.dir / "meta.json").read_text())
    assert meta["top_p"] == 0.9 and meta["param_sources"]["top_p"] == "user"
    assert meta["param_sources"]["context_window"] == "config"
    session.close()


async def test_the_system_tab_shows_the_prompt_as_sent_and_edits_the_instructions(open_lane, fake_model, project):
    fake_model.reply("ok")
    async with open_lane() as chat:
        chat.lane.setup.instructions = "Be terse."
        chat.command("model")
        await answer(chat, SYSTEM)
        panel = (await chat.until(Panel))[-1]
        assert panel.title == "System prompt"
        assert panel.text == chat.lane.setup.system_prompt() and "Be terse." in panel.text
        await answer(chat, 0)  # edit
        run = (await chat.until(RunInTerminal))[-1]
        draft = Path(run.argv[-1])
        assert draft.read_text() == "Be terse."
        draft.write_text("Answer in French.\n")  # what the editor does
        run.reply.send_nowait(0)
        notice = (await chat.until(Notice))[-1]
        assert notice.text == "Instructions changed for this process (the config and the session are not changed)"
        assert not draft.exists()  # the draft does not stay on disk
        chat.submit("hi")
        await chat.until(TurnEnded)
    system = fake_model.requests[0].body["messages"][0]
    assert system["role"] == "system" and "Answer in French." in system["content"]
    assert "Be terse." not in system["content"]
