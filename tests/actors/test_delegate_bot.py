"""Delegated work in a bot (actors.journal with the real lane, the fake model server, a real bot
directory): each helper run is an entry of the bot's journal, read from the helper's child session,
and a rebuilt journal has it too."""

from __future__ import annotations

import math
from contextlib import ExitStack, asynccontextmanager

import pytest
import trio

import json
from datetime import datetime, timedelta, timezone

from actors.events import Choose, Notice, TurnEnded
from actors.helpers import OPEN_MARK, open_helpers_notice
from actors.supervisor import _forward_job_notes
from actors.lane import Lane
from actors.notifier import open_host_link
from iota.bots import defined_agents
from iota.bots.bot import open_bot
from iota.bots.journal import Journal, bot_sources
from iota.chat import prepare_chat
from iota.config import settings
from iota.sessions.conversation import Conversation
from tests.actors.test_delegate import delegating, helper_requests, results, who
from tests.actors.test_delegate_background import in_background, until_requests
from tests.actors.test_lane import Chat
from tests.support.fake_model import Gate, fake_model, tool_call  # noqa: F401  (the fixture)
from ui.chat_parts import _open_journal

BOUND = 10

CONFIG = """\
providers:
  fake: {{type: openai, url: '{url}', key: test-key}}
models:
  m: {{provider: fake, id: fake-model, context_window: 200k}}
agents:
  lead:
    mode: bot
    model: m
    system: You are the lead.
    tools:
      code: {{}}
      skills: false
      delegate: {{agents: [reviewer]}}
  reviewer:
    model: m
    system: You are the reviewer.
    tools:
      code: {{read_only: true}}
"""


@pytest.fixture
def open_bot_chat(tmp_path, fake_home, fake_model):  # noqa: F811
    (fake_home / ".iota.yaml").write_text(CONFIG.format(url=fake_model.openai_url))
    project = tmp_path / "project"
    project.mkdir()

    @asynccontextmanager
    async def open_():
        loaded = settings.load(project)
        setup = prepare_chat(loaded, settings.find_agent(loaded, "lead"), project)
        start = open_bot("lead", model=setup.model, project_root=setup.project_root)
        cleanup = ExitStack()
        keeper = _open_journal(setup, start, cleanup, [])   # the chat's own wiring of the journal
        conversation = Conversation.from_session(start.session)
        send, receive = trio.open_memory_channel(math.inf)
        notes_send, notes_receive = trio.open_memory_channel(math.inf)
        link, _ = open_host_link()
        try:
            with cleanup:
                async with setup.open_tools(notes_send) as toolbox:
                    lane = Lane(setup, conversation, toolbox, send, link)
                    lane.before_send = [keeper.before_send, open_helpers_notice]   # as ui.chat_parts orders them
                    async with trio.open_nursery() as nursery:
                        await nursery.start(lane.run)
                        nursery.start_soon(_forward_job_notes, notes_receive, lane)
                        await nursery.start(keeper.run, lane)
                        chat = Chat(lane, setup, conversation, receive)
                        chat.keeper, chat.start = keeper, start
                        yield chat
                        nursery.cancel_scope.cancel()
        finally:
            if setup._provider is not None:
                await setup._provider.aclose()
            start.close()

    return open_


async def settled(chat: Chat) -> list[tuple[str, str, str]]:
    """(session, asked, outcome) of each journal entry, once it has caught up."""
    with trio.fail_after(BOUND):
        await chat.lane.wait_idle()
        await chat.keeper.catch_up(chat.lane)
    return [(s.session, s.entry.asked, s.entry.outcome) for s in chat.keeper.journal.entries(order="e.id")]


async def test_each_helper_run_of_a_bot_is_an_entry_of_its_journal(open_bot_chat, fake_model):
    fake_model.respond_with(delegating(("reviewer", "Review a.py and say if it prints.")))
    async with open_bot_chat() as chat:
        chat.submit("get a.py reviewed")
        await chat.until(TurnEnded)
        entries = await settled(chat)
        bot_session = chat.start.session.id
        helper = [session for session, _, _ in entries if session != bot_session]
        assert len(helper) == 1
        assert (helper[0], "Review a.py and say if it prints.", "finished") in entries
        assert (bot_session, "get a.py reviewed", "finished") in entries
        # The block the model reads names the helper's session, as for any other session's entry.
        rendered = [s.render(bot_session) for s in chat.keeper.journal.entries()]
        assert any(f"[session {helper[0]} record" in line for line in rendered)
    # A journal made again from the logs (iota bots reindex) finds the helper's session too.
    again = Journal.open(chat.start.dir, bot_sources(chat.start.dir))
    try:
        again.catch_up()
        assert {s.session for s in again.entries()} == {bot_session, helper[0]}
    finally:
        again.close()


def opened_with(body: dict) -> list[str]:
    """The texts of the user-role messages of a request."""
    return [m["content"] for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], str)]


async def test_a_bot_sees_its_open_background_helpers_and_reads_the_result_in_a_quiet_turn(open_bot_chat, fake_model):
    gate = Gate()
    fake_model.respond_with(in_background("Review a.py.", gate))
    async with open_bot_chat() as chat:
        chat.submit("review a.py in the background")
        await chat.until(TurnEnded)
        await until_requests(fake_model, "reviewer", 1)
        chat.submit("anything yet?")                     # the helper still runs: listed with this message
        await chat.until(TurnEnded)
        listed = [text for text in opened_with(helper_requests(fake_model, "lead")[-1].body) if OPEN_MARK in text]
        assert len(listed) == 1 and "- h1 reviewer · " in listed[0] and "Review a.py." in listed[0]
        asked = len(helper_requests(fake_model, "lead"))
        gate.open()                                      # it ends: the bot reads its result unasked
        await chat.until(lambda e: isinstance(e, Notice) and "[background helper h1" in e.text)
        await chat.until(TurnEnded)
        quiet = helper_requests(fake_model, "lead")[asked]
        assert any(text.startswith("[background helper h1 (reviewer) ended] reviewer reporting")
                   for text in opened_with(quiet.body))
        chat.submit("thanks")                            # read: no longer listed
        await chat.until(TurnEnded)
        last = helper_requests(fake_model, "lead")[-1]
        assert [text for text in opened_with(last.body) if OPEN_MARK in text] == listed   # only the earlier one
        entries = await settled(chat)
        assert ("Review a.py.", "finished") in [(asked, outcome) for _, asked, outcome in entries]


# ---- agents a bot defines -------------------------------------------------------------------------

CHECKER = {"action": "define", "name": "checker", "system": "You are the checker.", "description": "Checks files",
           "tools": {"code": {"read_only": True}, "skills": False}}


def defining(definition: dict, then_task: str | None = None):
    """The lead defines `definition`, then (if `then_task`) hands the new agent that task."""
    def respond(body: dict) -> dict:
        name = who(body)
        if name != "lead":
            return {"text": f"{name} reporting: fine."}
        done = results(body)
        if not done:
            return {"tool_calls": [tool_call("delegate", definition, id="def")]}
        if len(done) == 1 and then_task and not done[0].startswith("delegate define") and "Error" not in done[0]:
            return {"tool_calls": [tool_call("delegate", {"agent": definition["name"], "task": then_task}, id="run")]}
        return {"text": "Done."}
    return respond


def tools_of(request) -> dict:
    return {tool["function"]["name"]: tool for tool in request.body.get("tools", [])}


async def test_a_bot_defines_a_narrower_agent_once_the_person_has_read_the_whole_entry(open_bot_chat, fake_model):
    fake_model.respond_with(defining(CHECKER, then_task="Check a.py."))
    async with open_bot_chat() as chat:
        chat.submit("make a checker and use it")
        choose = (await chat.until(Choose))[-1]
        # Asked whatever auto_* says, with no "for this session", the whole entry shown.
        assert choose.title == "delegate define checker wants to define the agent checker — allow?"
        assert not any("session" in option.lower() for option in choose.options)
        for line in ("creator: lead", "system: You are the checker.", "read_only: true", "description: Checks files"):
            assert line in choose.detail
        await choose.reply.send(0)   # Allow once
        await chat.until(TurnEnded)
        path = chat.start.dir / "agents" / "checker.yaml"
        assert path.read_text() == choose.detail          # stored as the person read it
        (checker,) = helper_requests(fake_model, "checker")
        assert "You are the checker." in checker.body["messages"][0]["content"]
        assert "read_file" in tools_of(checker) and "write_file" not in tools_of(checker)
        lead = helper_requests(fake_model, "lead")
        assert results(lead[-1].body)[-1].startswith("checker reporting: fine.")
        chat.command("agents")
        listed = (await chat.until(lambda e: isinstance(e, Notice) and "checker" in e.text))[-1]
        assert "checker — by lead" in listed.text and "Checks files" in listed.text
        chat.command("agents", "remove checker")
        await chat.until(lambda e: isinstance(e, Notice) and e.text.startswith("Removed the agent checker"))
        assert not path.exists()
        assert "checker" not in json.dumps(chat.lane.toolbox.get("delegate").parameters["properties"]["agent"])


class TickingClock(datetime):
    """A clock a minute later at each reading: the person takes time to read what they approve."""

    ticks = 0

    @classmethod
    def now(cls, tz=None):
        cls.ticks += 1
        return datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc) + timedelta(minutes=cls.ticks)


async def test_the_file_written_is_byte_for_byte_the_entry_the_person_approved(open_bot_chat, fake_model, monkeypatch):
    monkeypatch.setattr(TickingClock, "ticks", 0)
    monkeypatch.setattr(defined_agents, "datetime", TickingClock)
    fake_model.respond_with(defining(CHECKER))
    async with open_bot_chat() as chat:
        chat.submit("make a checker")
        choose = (await chat.until(Choose))[-1]
        await choose.reply.send(0)   # Allow once, a minute (one tick) or more later
        await chat.until(TurnEnded)
        assert TickingClock.ticks >= 2                 # checked again after the yes, so a new stamp was made
        written = (chat.start.dir / "agents" / "checker.yaml").read_bytes()
        assert written == choose.detail.encode()       # yet the stamp written is the one shown


async def test_a_define_under_the_name_of_an_earlier_defined_agent_is_refused_not_overwritten(
        open_bot_chat, fake_model, fake_home):
    earlier = fake_home / ".iota" / "bots" / "lead" / "agents" / "checker.yaml"
    earlier.parent.mkdir(parents=True)
    approved = "creator: lead\nmodel: m\nsystem: You are the checker.\ntools: {code: {read_only: true}, skills: false}\n"
    earlier.write_text(approved)
    fake_model.respond_with(defining({**CHECKER, "system": "You are the checker. Also push to main."}))
    async with open_bot_chat() as chat:
        assert "checker" in chat.lane.toolbox.get("delegate").agents   # the earlier one is offered
        chat.submit("redefine the checker")
        events = await chat.until(TurnEnded)
        assert not any(isinstance(event, Choose) for event in events)   # refused before anyone is asked
        refusal = results(helper_requests(fake_model, "lead")[1].body)[0]
        assert "checker is already a defined agent of bot lead" in refusal and "/agents remove checker" in refusal
        assert earlier.read_text() == approved


@pytest.mark.parametrize("tools, wider", [
    ({"shell": {"sandbox": "off", "network": True}, "skills": False}, "tools.shell"),   # the bot has no shell
    ({"code": {"auto_write": True}, "skills": False}, "tools.code.auto_write"),         # the bot's code asks
    ({"code": {}}, "tools.skills"),                                                     # the bot's skills are off
])
async def test_a_defined_agent_wider_than_its_creator_is_refused(open_bot_chat, fake_model, tools, wider):
    fake_model.respond_with(defining({**CHECKER, "tools": tools}, then_task="Check a.py."))
    async with open_bot_chat() as chat:
        chat.submit("make a wider agent")
        events = await chat.until(TurnEnded)
        assert not any(isinstance(event, Choose) for event in events)   # refused before anyone is asked
        refusal = results(helper_requests(fake_model, "lead")[1].body)[0]
        assert "would be wider than its creator lead at" in refusal and wider in refusal
        assert not (chat.start.dir / "agents").exists()
        assert helper_requests(fake_model, "checker") == []


async def test_a_planted_definition_wider_than_the_bot_is_skipped_never_run(open_bot_chat, fake_model, fake_home):
    planted = fake_home / ".iota" / "bots" / "lead" / "agents" / "checker.yaml"
    planted.parent.mkdir(parents=True)
    planted.write_text("creator: lead\nmodel: m\nsystem: You are the checker.\ntools: {shell: {sandbox: 'off'}, skills: false}\n")
    fake_model.respond_with(delegating(("reviewer", "Review.")))
    async with open_bot_chat() as chat:
        assert any("checker.yaml" in warning and "wider than its creator" in warning for warning in chat.setup.warnings)
        assert "checker" not in chat.lane.toolbox.get("delegate").agents


async def test_a_bot_whose_background_helper_is_cancelled_is_told_with_the_next_message_not_woken(
        open_bot_chat, fake_model):
    fake_model.respond_with(in_background("Review a.py.", Gate()))   # held until cancelled
    async with open_bot_chat() as chat:
        chat.submit("review a.py in the background")
        await chat.until(TurnEnded)
        await until_requests(fake_model, "reviewer", 1)
        asked = len(helper_requests(fake_model, "lead"))
        chat.lane.interrupt()                            # Ctrl+C: the person stopped it
        await chat.until(lambda e: isinstance(e, Notice) and "[background helper h1 (reviewer) cancelled]" in e.text)
        chat.submit("ok")
        await chat.until(TurnEnded)
        lead = helper_requests(fake_model, "lead")
        assert len(lead) == asked + 1                    # no quiet turn of its own: only the message's
        assert any("[background helper h1 (reviewer) cancelled]" in text for text in opened_with(lead[-1].body))


async def test_in_plan_mode_a_define_is_refused_without_asking(open_bot_chat, fake_model):
    fake_model.respond_with(defining(CHECKER))
    async with open_bot_chat() as chat:
        chat.lane.approvals.mode = "plan"
        chat.submit("make a checker")
        events = await chat.until(TurnEnded)
        assert not any(isinstance(event, Choose) for event in events)
        assert "the chat is in plan mode" in results(helper_requests(fake_model, "lead")[1].body)[0]
        assert not (chat.start.dir / "agents").exists()
