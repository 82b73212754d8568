"""Delegated work (the `delegate` toolset) in a real chat lane against the fake model server:
helpers' requests carry their own prompts and tools, two in one reply run at the same time, their
questions come to the caller's person labelled with their name, Ctrl+C cancels them all, and each
helper's conversation is a child session of the caller's.

The fake model answers by who asks (the system prompt names the agent), since helpers running side
by side reach it in no fixed order.
"""

from __future__ import annotations

import json
import math
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from actors.events import Choose, Status, ToolEnded, ToolProgress, TurnEnded
from actors.lane import Lane
from actors.notifier import open_host_link
from iota import paths
from iota.chat import prepare_chat
from iota.config import settings
from iota.messages import TURN_END
from iota.sessions.bundle import Session
from iota.sessions.conversation import Conversation
from tests.actors.test_lane import Chat
from tests.support.fake_model import fake_model, tool_call  # noqa: F401  (the fixture)

BOUND = 10  # seconds: a bound on a hang, never a measurement

CONFIG = """\
providers:
  fake: {{type: openai, url: '{url}', key: test-key}}
models:
  m: {{provider: fake, id: fake-model, context_window: 200k}}
  small: {{provider: fake, id: small-model}}
agents:
  lead:
    model: m
    system: You are the lead.
    tools:
      code: {{auto_write: true}}
      delegate: {{agents: [reviewer, tester], max_parallel: {parallel}}}
  reviewer:
    model: small
    description: Reviews code
    system: You are the reviewer.
    tools:
      code: {{read_only: true}}
  tester:
    model: small
    system: You are the tester.
    tools:
      code: {{auto_write: true}}
      shell: {{sandbox: off, auto_run: true, network: true}}
"""


def who(body: dict) -> str:
    return body["messages"][0]["content"].split("You are the ", 1)[1].split(".", 1)[0]


def results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def delegating(*calls: tuple[str, str], helper_reply=None, done: str = "All done."):
    """A responder: the lead hands out `calls` (agent, task), then says `done`; each helper answers
    with `helper_reply(name, body)` (by default its name, slowly)."""
    def respond(body: dict) -> dict:
        name = who(body)
        if name == "lead":
            if results(body):
                return {"text": done}
            return {"tool_calls": [tool_call("delegate", {"agent": agent, "task": task}, id=f"d-{agent}")
                                   for agent, task in calls]}
        if helper_reply is not None:
            return helper_reply(name, body)
        return {"text": f"{name} reporting: fine.", "pieces": 4, "drip": 0.05}
    return respond


@pytest.fixture
def configure(fake_home, fake_model):  # noqa: F811
    def write(parallel: int = 4) -> None:
        (fake_home / ".iota.yaml").write_text(CONFIG.format(url=fake_model.openai_url, parallel=parallel))
    write()
    return write


@pytest.fixture
def project(tmp_path, configure):
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "a.py").write_text("print('a')\n")
    return project


@pytest.fixture
def open_chat(project):
    @asynccontextmanager
    async def open_(*, saving: bool = True):
        loaded = settings.load(project)
        setup = prepare_chat(loaded, settings.find_agent(loaded, "lead"), project)
        session = setup.new_session() if saving else None
        conversation = Conversation.from_session(session) if session else Conversation(instructions=setup.instructions)
        send, receive = trio.open_memory_channel(math.inf)
        link, _ = open_host_link()
        try:
            async with setup.open_tools() as toolbox:
                lane = Lane(setup, conversation, toolbox, send, link)
                async with trio.open_nursery() as nursery:
                    await nursery.start(lane.run)
                    yield Chat(lane, setup, conversation, receive)
                    nursery.cancel_scope.cancel()
        finally:
            if setup._provider is not None:
                await setup._provider.aclose()
            if session is not None:
                session.close()

    return open_


def helper_requests(model, name: str):
    return [request for request in model.requests if who(request.body) == name]


def children_of(parent: str) -> list[dict]:
    found = []
    for meta in sorted(paths.sessions_dir().rglob("meta.json")):
        data = json.loads(meta.read_text())
        if data.get("parent") == parent:
            found.append(data)
    return found


def log_of(session_id: str) -> list[dict]:
    log = next(paths.sessions_dir().rglob(f"{session_id}/messages.jsonl"))
    return [json.loads(line) for line in log.read_text().splitlines()]


# ---- what a helper is sent ------------------------------------------------------------------------


async def test_a_helper_is_sent_its_own_prompt_model_and_narrowed_tools_and_the_task_alone(open_chat, fake_model):
    fake_model.respond_with(delegating(("reviewer", "Review a.py and say if it prints.")))
    async with open_chat() as chat:
        chat.submit("get a.py reviewed")
        await chat.until(TurnEnded)
    lead = helper_requests(fake_model, "lead")
    assert [tool["function"]["name"] for tool in lead[0].body["tools"]].count("delegate") == 1
    (review,) = helper_requests(fake_model, "reviewer")
    assert review.body["model"] == "small-model"
    assert [m for m in review.body["messages"] if m["role"] == "user"] == [
        {"role": "user", "content": "Review a.py and say if it prints."}]
    tools = {tool["function"]["name"] for tool in review.body["tools"]}
    assert "read_file" in tools and "write_file" not in tools and "delegate" not in tools   # read_only, depth 1
    reply = results(lead[1].body)[0]
    assert reply.startswith("reviewer reporting: fine.")
    assert reply.splitlines()[-1].startswith("[reviewer: 1 turn · ")


async def test_a_helper_gets_no_more_than_its_caller(open_chat, fake_model):
    """The tester's entry turns the shell on, outside the sandbox, with the network; the lead has
    no shell: the tester is sent no shell tool."""
    fake_model.respond_with(delegating(("tester", "Run the tests.")))
    async with open_chat() as chat:
        chat.submit("test it")
        await chat.until(TurnEnded)
    (test,) = helper_requests(fake_model, "tester")
    tools = {tool["function"]["name"] for tool in test.body["tools"]}
    assert "shell" not in tools and "write_file" in tools


# ---- side by side ---------------------------------------------------------------------------------


async def test_two_helpers_of_one_reply_run_at_the_same_time(open_chat, fake_model):
    fake_model.respond_with(delegating(("reviewer", "Review a.py."), ("tester", "Test a.py.")))
    async with open_chat() as chat:
        chat.submit("review and test")
        await chat.until(TurnEnded)
    (review,) = helper_requests(fake_model, "reviewer")
    (test,) = helper_requests(fake_model, "tester")
    # Each helper's stream was still being answered when the other's request came in.
    assert review.received < test.finished and test.received < review.finished
    lead = helper_requests(fake_model, "lead")
    assert [r.splitlines()[0] for r in results(lead[1].body)] == ["reviewer reporting: fine.", "tester reporting: fine."]


async def test_max_parallel_one_runs_them_one_after_the_other(open_chat, fake_model, configure):
    configure(parallel=1)
    fake_model.respond_with(delegating(("reviewer", "Review a.py."), ("tester", "Test a.py.")))
    async with open_chat() as chat:
        chat.submit("review and test")
        await chat.until(TurnEnded)
    first, second = sorted([*helper_requests(fake_model, "reviewer"), *helper_requests(fake_model, "tester")],
                           key=lambda request: request.received)
    assert first.finished <= second.received


# ---- the live line, approvals, Ctrl+C -------------------------------------------------------------


async def test_a_helpers_tools_show_as_a_live_line_under_its_call(open_chat, fake_model):
    def helper(name, body):
        if results(body):
            return {"text": "a.py prints a."}
        return {"tool_calls": [tool_call("read_file", {"path": "a.py"})]}
    fake_model.respond_with(delegating(("reviewer", "Read a.py."), helper_reply=helper))
    async with open_chat() as chat:
        chat.submit("review")
        events = await chat.until(TurnEnded)
    lines = [e.text for e in events if isinstance(e, ToolProgress)]
    assert all(e.call_id == "d-reviewer" for e in events if isinstance(e, ToolProgress))
    assert any(line.startswith("reviewer · read_file a.py · ") for line in lines), lines
    progress_at = next(i for i, e in enumerate(events) if isinstance(e, ToolProgress) and "read_file" in e.text)
    ended_at = next(i for i, e in enumerate(events) if isinstance(e, ToolEnded) and e.call_id == "d-reviewer")
    assert progress_at < ended_at
    ended = events[ended_at]
    assert "read_file (a.py)" in ended.output.splitlines()[-1]



async def test_ctrl_o_shows_the_helpers_whole_conversation_under_its_call(open_chat, fake_model, project):
    (project / "a.py").write_text("print('a')\n")

    def helper(name, body):
        if results(body):
            return {"text": "a.py prints a."}
        return {"text": "Reading it first.", "tool_calls": [tool_call("read_file", {"path": "a.py"})]}
    fake_model.respond_with(delegating(("reviewer", "Read a.py."), helper_reply=helper))
    async with open_chat() as chat:
        chat.submit("review")
        events = await chat.until(TurnEnded)
    ended = next(e for e in events if isinstance(e, ToolEnded) and e.call_id == "d-reviewer")
    assert "Reading it first." not in ended.output  # the caller's model reads the report alone
    assert ended.more.splitlines()[:4] == ["── reviewer's conversation ──", "❯ Read a.py.", "Reading it first.",
                                           "• read_file a.py"]
    assert "print('a')" in ended.more and ended.more.endswith("a.py prints a.")

async def test_a_helpers_approval_is_asked_in_the_callers_chat_labelled_with_its_name(open_chat, fake_model, project):
    """The tester's entry writes without asking, but the lead's asks (no auto_write): the
    narrowed tester asks, and the question comes to the lead's person, labelled."""
    config = Path.home() / ".iota.yaml"
    config.write_text(config.read_text().replace("code: {auto_write: true}\n      delegate", "code:\n      delegate"))

    def helper(name, body):
        if results(body):
            return {"text": f"wrote: {results(body)[0]}"}
        return {"tool_calls": [tool_call("write_file", {"path": "b.py", "content": "b\n"})]}
    fake_model.respond_with(delegating(("tester", "Write b.py."), helper_reply=helper))
    async with open_chat() as chat:
        chat.submit("write b")
        choose = (await chat.until(Choose))[-1]
        assert choose.title == "tester: write_file b.py wants to modify files — allow?"
        await choose.reply.send(2)   # Deny
        await chat.until(TurnEnded)
    assert not (project / "b.py").exists()
    (lead_after,) = helper_requests(fake_model, "lead")[1:]
    assert results(lead_after.body)[0].startswith("wrote: The user declined this call.")


async def test_ctrl_c_cancels_every_helper_and_leaves_their_records_closed(open_chat, fake_model):
    fake_model.respond_with(delegating(("reviewer", "Review."), ("tester", "Test."),
                                       helper_reply=lambda name, body: {"text": "slow", "stall_after": 1}))
    async with open_chat() as chat:
        await wait_all_tasks_blocked()
        idle = trio.lowlevel.current_statistics().tasks_living
        chat.submit("review and test")
        with trio.fail_after(BOUND):
            while len(helper_requests(fake_model, "reviewer") + helper_requests(fake_model, "tester")) < 2:
                await trio.sleep(0.01)
        assert trio.lowlevel.current_statistics().tasks_living > idle
        chat.lane.interrupt()
        await chat.until(TurnEnded)
        await wait_all_tasks_blocked()
        assert trio.lowlevel.current_statistics().tasks_living == idle   # no helper task is left
        session_id = chat.conversation.session.id
        with trio.fail_after(BOUND):
            await trio.to_thread.run_sync(lambda: [r.wait_done() for r in fake_model.requests])
    assert all(request.disconnected for request in fake_model.requests if who(request.body) != "lead")
    children = children_of(session_id)
    assert sorted(child["agent"] for child in children) == ["reviewer", "tester"]
    for child in children:
        log = log_of(child["id"])
        assert log[0]["role"] == "user" and log[-1]["role"] == TURN_END and log[-1]["outcome"] == "cancelled"
        reopened = Session.open(next(paths.sessions_dir().rglob(child["id"])))
        reopened.close()
        assert reopened.view.warnings == [] and not reopened.view.closing   # nothing half-written to repair


# ---- child sessions -------------------------------------------------------------------------------


async def test_each_helper_is_saved_as_a_child_session_of_the_callers(open_chat, fake_model):
    fake_model.respond_with(delegating(("reviewer", "Review a.py.")))
    async with open_chat() as chat:
        chat.submit("review")
        await chat.until(TurnEnded)
        parent = chat.conversation.session
    (child,) = children_of(parent.id)
    assert child["agent"] == "reviewer" and child["title"] == "reviewer: Review a.py."
    assert (parent.dir.parent / child["id"]).is_dir()   # beside its parent: the session tree shows it under it
    log = log_of(child["id"])
    assert [record["role"] for record in log] == ["user", "assistant", TURN_END]
    lead_after = helper_requests(fake_model, "lead")[1]
    assert f"session {child['id']}" in results(lead_after.body)[0]


async def test_no_save_keeps_no_child_session(open_chat, fake_model):
    fake_model.respond_with(delegating(("reviewer", "Review a.py.")))
    async with open_chat(saving=False) as chat:
        chat.submit("review")
        await chat.until(TurnEnded)
    assert list(paths.sessions_dir().rglob("meta.json")) == []
    assert "session " not in results(helper_requests(fake_model, "lead")[1].body)[0].splitlines()[-1]


async def test_the_status_row_shows_what_the_helper_runs(open_chat, fake_model):
    def helper(name, body):
        if results(body):
            return {"text": "ok"}
        return {"tool_calls": [tool_call("read_file", {"path": "a.py"})]}
    fake_model.respond_with(delegating(("reviewer", "Read."), helper_reply=helper))
    async with open_chat() as chat:
        chat.submit("review")
        events = await chat.until(TurnEnded)
    assert any(isinstance(e, Status) and e.running.startswith("reviewer · read_file a.py") for e in events)


async def test_ctrl_c_kills_the_commands_a_helper_started(open_chat, fake_model, project):
    config = Path.home() / ".iota.yaml"
    config.write_text(config.read_text().replace("      delegate: {agents",
                                                 "      shell: {sandbox: off, auto_run: true}\n      delegate: {agents"))
    pid_file = project / "pid"

    def helper(name, body):
        return {"tool_calls": [tool_call("shell", {"command": f"echo $$ > {pid_file}; exec sleep 60"})]}
    fake_model.respond_with(delegating(("tester", "Run it."), helper_reply=helper))
    async with open_chat() as chat:
        chat.submit("run")
        with trio.fail_after(BOUND):
            while not (pid_file.exists() and pid_file.read_text().strip()):
                await trio.sleep(0.01)
        pid = int(pid_file.read_text())
        chat.lane.interrupt()
        await chat.until(TurnEnded)
    with trio.fail_after(BOUND):
        while Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]:
            await trio.sleep(0.01)


async def test_a_model_naming_an_agent_off_the_list_is_refused_and_nothing_runs(open_chat, fake_model):
    """The lead itself (a helper of its own, unbounded) and any agent not on `agents:` are refused."""
    fake_model.respond_with(delegating(("lead", "Do everything.")))
    async with open_chat() as chat:
        chat.submit("go")
        await chat.until(TurnEnded)
    assert len(helper_requests(fake_model, "lead")) == 2   # no helper request came between
    assert results(helper_requests(fake_model, "lead")[1].body)[0] == \
        "unknown helper 'lead': use one of reviewer, tester"


async def test_in_plan_mode_a_helper_runs_but_its_writes_are_refused(open_chat, fake_model, project):
    def helper(name, body):
        if results(body):
            return {"text": f"tried: {results(body)[0]}"}
        return {"tool_calls": [tool_call("write_file", {"path": "b.py", "content": "b\n"})]}
    fake_model.respond_with(delegating(("tester", "Write b.py."), helper_reply=helper))
    async with open_chat() as chat:
        chat.lane.approvals.mode = "plan"
        chat.submit("write b")
        await chat.until(TurnEnded)
    assert not (project / "b.py").exists()
    assert "the chat is in plan mode" in results(helper_requests(fake_model, "lead")[1].body)[0]


async def test_a_headless_caller_refuses_a_helpers_approval_and_says_whose_it_was(project, fake_model):
    from iota.agent import Approvals, Turn, run_turn
    from iota.messages import USER, Message

    config = Path.home() / ".iota.yaml"
    config.write_text(config.read_text().replace("code: {auto_write: true}\n      delegate", "code:\n      delegate"))

    def helper(name, body):
        if results(body):
            return {"text": f"tried: {results(body)[0]}"}
        return {"tool_calls": [tool_call("write_file", {"path": "b.py", "content": "b\n"})]}
    fake_model.respond_with(delegating(("tester", "Write b.py."), helper_reply=helper))
    loaded = settings.load(project)
    setup = prepare_chat(loaded, settings.find_agent(loaded, "lead"), project, interactive=False)
    refused = []
    async with setup.open_tools() as toolbox:
        with trio.fail_after(BOUND):
            await run_turn(Turn(), setup.provider(), setup.request([Message(USER, "write b")], toolbox), toolbox,
                           Approvals(None, on_refused=refused.append))
    await setup.aclose()
    assert not (project / "b.py").exists()
    assert [request.question for request in refused] == ["tester: write_file b.py wants to modify files"]
    assert "was not executed: it requires interactive approval" in results(helper_requests(fake_model, "lead")[1].body)[0]
