"""A bot's work on the real lane against the fake model (actors.auto_continue, actors.bot_work):
auto-continue runs until a step is blocked, stops at its limit, yields to a typed message and to
Ctrl+C; the quiet messages reach the model and the log, marked hidden, and never the transcript;
the host pings once, when the work stops; a bot picks its task up after a restart.

Real HTTP to the fake server, so trio's real clock; `fail_after` bounds only catch a hang.
"""

from __future__ import annotations

import json
import math
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
import trio

from actors.bot_work import BotWork, open_bot_work
from actors.commands.registry import resume_opening
from actors.events import Choose, Notice, OpenTasks, Panel, TextDelta, TurnEnded, UserEcho
from actors.lane import Command, Lane, UserMessage
from actors.notifier import Ping, SetState, open_host_link
from iota import paths
from iota.bots.tasks import TaskBook
from iota.chat import prepare_chat
from iota.config import settings
from iota.hosts import PingKind, State
from iota.sessions.bundle import Session
from iota.sessions.conversation import Conversation
from tests.support.fake_model import Gate, fake_model, tool_call  # noqa: F401  (the fixture)

BOUND = 10


@dataclass
class Worker:
    lane: Lane
    book: TaskBook
    session: Session
    events: trio.MemoryReceiveChannel
    host: trio.MemoryReceiveChannel
    work: BotWork
    seen: list = field(default_factory=list)

    async def until(self, accepts) -> list:
        got = []
        with trio.fail_after(BOUND):
            async for event in self.events:
                self.seen.append(event)
                got.append(event)
                if accepts(event):
                    return got
        raise AssertionError(f"the events ended before a match; got {got}")

    async def settled(self) -> None:
        """Until the lane has nothing left to do."""
        with trio.fail_after(BOUND):
            while True:
                await self.lane.wait_idle()
                await trio.sleep(0.05)
                if not self.lane.busy and not self.lane.inbox:
                    break
        self.drain()

    def drain(self) -> None:
        while True:
            try:
                self.seen.append(self.events.receive_nowait())
            except trio.WouldBlock:
                return

    def notices(self) -> list[str]:
        return [event.text for event in self.seen if isinstance(event, Notice)]

    def host_messages(self) -> list:
        got = []
        while True:
            try:
                got.append(self.host.receive_nowait())
            except trio.WouldBlock:
                return got

    async def answer(self, choice: int | None) -> Choose:
        """Answer the next question the lane asks."""
        choose = (await self.until(lambda e: isinstance(e, Choose)))[-1]
        await choose.reply.send(choice)
        return choose


@pytest.fixture
def open_worker(tmp_path, fake_home, fake_model):  # noqa: F811
    """A lane with a bot's work wired in as the chat wires it (tools, hooks, the scheduler)."""

    @asynccontextmanager
    async def open_(auto_continue: int = 10, session: Session | None = None):
        (fake_home / ".iota.yaml").write_text(
            f"providers:\n  fake: {{type: openai, url: '{fake_model.openai_url}', key: test-key}}\n"
            "models:\n  m: {provider: fake, id: fake-model, context_window: 200k}\n"
            f"agents:\n  worker: {{model: m, mode: bot, auto_continue: {auto_continue}, timezone: Europe/Berlin}}\n")
        project = tmp_path / "project"
        project.mkdir(exist_ok=True)
        loaded = settings.load(project)
        setup = prepare_chat(loaded, settings.find_agent(loaded, "worker"), project)
        work = open_bot_work(setup, tmp_path / "bot")
        setup.extra_tools.extend(work.tools)
        session = session or Session.new(paths.sessions_dir(), provider="fake", model="fake-model")
        send, receive = trio.open_memory_channel(math.inf)
        link, host = open_host_link()
        try:
            async with setup.open_tools() as toolbox:
                lane = Lane(setup, Conversation.from_session(session) if session.on_disk else
                            Conversation(session=session), toolbox, send, link)
                lane.before_send, lane.after_turn = work.before_send, work.after_turn
                async with trio.open_nursery() as nursery:
                    await nursery.start(lane.run)
                    for start in work.on_start:
                        start(lane)
                    for actor in work.actors:
                        await nursery.start(actor, lane)
                    yield Worker(lane, TaskBook(tmp_path / "bot"), session, receive, host, work)
                    nursery.cancel_scope.cancel()
        finally:
            session.close()
            if setup._provider is not None:
                await setup._provider.aclose()

    return open_


def log_records(session: Session) -> list[dict]:
    return [json.loads(line) for line in (session.dir / "messages.jsonl").read_text().splitlines()]


def last_user(request) -> str:
    return [m for m in request.body["messages"] if m["role"] == "user"][-1]["content"]


def step_done(task_id: str, step: int, status: str = "succeeded", note: str = ""):
    return tool_call("tasks", {"action": "update_step", "task": task_id, "step": step, "status": status,
                               "note": note})


# -- until a step is blocked -----------------------------------------------------------------------


async def test_it_works_through_the_steps_until_one_is_blocked_and_says_so(open_worker, fake_model, tmp_path):
    async with open_worker() as worker:
        # Made once the bot runs (a bot started with a runnable task picks it up: see the last test).
        worker.book.create("Deploy", ["build", "get the key", "ship"])
        [task] = worker.book.load()
        fake_model.reply(tool_calls=[step_done(task.id, 1)])
        fake_model.reply("Built.")
        fake_model.reply(tool_calls=[step_done(task.id, 2, "blocked", "needs the API key")])
        fake_model.reply("I need the API key.")
        worker.lane.submit(UserMessage("deploy it"))
        await worker.settled()
        host = worker.host_messages()
    assert len(fake_model.requests) == 4
    nudge = last_user(fake_model.requests[2])
    assert nudge.startswith('Continue with task "Deploy"') and "step 2 of 3" in nudge
    assert 'Task "Deploy" waits for you: step 2 "get the key" is blocked (needs the API key)' in worker.notices()
    # The person saw their message and both replies, never the nudge or the open tasks.
    echoes = [e.text for e in worker.seen if isinstance(e, UserEcho)]
    assert echoes == ["deploy it"]
    assert "".join(e.text for e in worker.seen if isinstance(e, TextDelta)) == "Built.I need the API key."
    assert [e.rows for e in worker.seen if isinstance(e, OpenTasks)][-1] == (
        "Deploy · step 2/3 blocked · get the key",)
    # The model got the open tasks with every message, the nudge, and the log has both, hidden.
    for request in fake_model.requests[0], fake_model.requests[2]:
        assert any(m["role"] == "user" and m["content"].startswith("[Open tasks") for m in request.body["messages"])
    hidden = [r for r in log_records(worker.session) if r.get("hidden")]
    assert [r["content"][:20] for r in hidden] == ["[Open tasks: kept by", "[Open tasks: kept by",
                                                   'Continue with task "']
    assert all(r["role"] == "user" for r in hidden) and list(hidden[2]).index("hidden") == len(hidden[2]) - 1
    # The host showed the bot working from the first turn to the last, and called once, when the
    # work stopped, not after every turn.
    states = [m.state for m in host if isinstance(m, SetState)]
    assert states[0] is State.IDLE and states[-1] is State.IDLE and State.IDLE not in states[1:-1]
    assert [(p.kind, p.text) for p in host if isinstance(p, Ping)] == [(PingKind.TURN_ENDED,
                                                                        "iota: I need the API key.")]


async def test_a_resumed_chat_does_not_echo_what_iota_wrote_for_the_model(open_worker, fake_model, tmp_path):
    book = TaskBook(tmp_path / "bot")
    async with open_worker() as worker:
        book.create("Write", ["draft", "polish"])
        [task] = book.load()
        fake_model.reply(tool_calls=[step_done(task.id, 1)])
        fake_model.reply("Drafted.")
        fake_model.reply(tool_calls=[step_done(task.id, 2)])
        fake_model.reply("Polished.")
        worker.lane.submit(UserMessage("write it"))
        await worker.settled()
        session_dir = worker.session.dir
    assert book.load()[0].status == "done"
    assert len(fake_model.requests) == 4  # done: nothing more to continue
    with Session.open(session_dir) as reopened:
        opening, _ = resume_opening(reopened, Conversation.from_session(reopened))
    shown = [*opening[0].events, *opening[1:]]  # the newest page of the history, then the notices
    assert [e.text for e in shown if isinstance(e, UserEcho)] == ["write it"]
    assert not any("Open tasks" in e.text or "Continue with task" in e.text for e in shown if isinstance(e, Notice))
    assert "".join(e.text for e in shown if isinstance(e, TextDelta)) == "Drafted.Polished."


# -- the limit, a typed message, Ctrl+C ----------------------------------------------------------


async def test_it_stops_after_auto_continue_turns_in_a_row_and_says_so(open_worker, fake_model, tmp_path):
    async with open_worker(auto_continue=2) as worker:
        worker.book.create("Long job", [f"step {n}" for n in range(1, 9)])
        [task] = worker.book.load()
        fake_model.reply("Still working.")
        for step in (1, 2):  # each continuation moves the task on: only the backstop stops it
            fake_model.reply(tool_calls=[step_done(task.id, step)])
            fake_model.reply(f"Step {step} done.")
        worker.lane.submit(UserMessage("go"))
        await worker.settled()
    assert len(fake_model.requests) == 5  # the typed turn and two more of two requests each
    assert 'turn 2 of at most 2 in a row' in last_user(fake_model.requests[3])
    assert worker.notices()[-1] == ('Paused after 2 turns in a row on task "Long job" (auto_continue: 2): '
                                    "type anything to go on")


async def test_two_continuations_without_progress_pause_the_task_in_its_file(open_worker, fake_model, tmp_path):
    for _ in range(3):
        fake_model.reply("Still working.")
    async with open_worker(auto_continue=10) as worker:
        worker.book.create("Long job", ["a", "b"])
        worker.lane.submit(UserMessage("go"))
        await worker.settled()
        [task] = worker.book.load()
    assert len(fake_model.requests) == 3  # the typed turn and two that changed nothing
    assert worker.notices()[-1] == ('Task "Long job" paused: 2 turns by itself made no progress on step 1 of 2, '
                                    '"a". Type anything (or /tasks → resume) to go on')
    assert task.paused and not task.runnable


async def test_auto_continue_zero_never_continues(open_worker, fake_model, tmp_path):
    fake_model.reply("ok")
    async with open_worker(auto_continue=0) as worker:
        worker.book.create("Job", ["a", "b"])
        worker.lane.submit(UserMessage("go"))
        await worker.settled()
    assert len(fake_model.requests) == 1


async def test_a_typed_message_goes_before_the_next_step_and_the_count_starts_again(open_worker, fake_model,
                                                                                     tmp_path):
    gate = Gate()
    fake_model.reply("Typed turn.")
    fake_model.reply("Working on a.", gate=gate)
    fake_model.reply("It is noon.")
    fake_model.reply("Back to a.")
    async with open_worker(auto_continue=1) as worker:
        worker.book.create("Long job", ["a", "b", "c"])
        worker.lane.submit(UserMessage("go"))
        await worker.until(lambda e: isinstance(e, TurnEnded))
        await trio.to_thread.run_sync(fake_model.wait_for_request, 2)  # the continuation's, held at the gate
        worker.lane.submit(UserMessage("what time is it?"))  # typed while the bot works on its own
        gate.open()
        await worker.settled()
    assert [last_user(r)[:24] for r in fake_model.requests] == [
        "go", 'Continue with task "Long', "what time is it?", 'Continue with task "Long']
    assert "turn 1 of at most 1" in last_user(fake_model.requests[3])  # counted from the typed message
    assert worker.notices()[-1].startswith('Paused after 1 turns in a row on task "Long job"')


async def test_a_message_typed_while_the_next_step_waits_goes_first(open_worker, fake_model, tmp_path):
    fake_model.reply("Typed turn.")
    fake_model.reply("It is noon.")
    fake_model.reply("Back to a.")
    holding, release = trio.Event(), trio.Event()

    async def hold(lane, argument):  # the lane is busy (a compaction, say) when the step comes due
        holding.set()
        await release.wait()

    async with open_worker(auto_continue=1) as worker:
        worker.book.create("Long job", ["a", "b", "c"])
        worker.lane.submit(UserMessage("go"))
        worker.lane.submit(Command("hold", "", hold))
        with trio.fail_after(BOUND):
            await holding.wait()
        worker.lane.submit(UserMessage("what time is it?"))
        assert [type(job).__name__ for job in worker.lane.inbox] == ["QuietTurn", "UserMessage"]
        release.set()
        await worker.settled()
    assert [last_user(r)[:24] for r in fake_model.requests] == ["go", "what time is it?", 'Continue with task "Long']


async def test_ctrl_c_stops_the_work_until_the_person_types(open_worker, fake_model, tmp_path):
    gate = Gate()
    fake_model.reply("Typed turn.")
    fake_model.reply("partialXreply1", pieces=2, gate=gate)  # pieces "partial", "Xreply1"
    gate.release(1)
    async with open_worker() as worker:
        worker.book.create("Long job", ["a", "b", "c"])
        worker.lane.submit(UserMessage("go"))
        await worker.until(lambda e: isinstance(e, TextDelta) and e.text == "partial")
        assert worker.lane.interrupt() is True
        await worker.until(lambda e: isinstance(e, TurnEnded))
        await worker.settled()
    assert len(fake_model.requests) == 2
    assert worker.notices()[-1] == 'Task "Long job" paused: type anything to go on'


async def test_ctrl_c_between_a_turn_and_its_continuation_cancels_the_continuation(open_worker, fake_model,
                                                                                    tmp_path):
    fake_model.reply("Typed turn.")
    holding = trio.Event()

    async def hold(lane, argument):  # something the lane does between the turn and its continuation
        holding.set()
        await trio.sleep_forever()

    async with open_worker() as worker:
        worker.book.create("Long job", ["a", "b"])
        worker.lane.submit(UserMessage("go"))
        worker.lane.submit(Command("hold", "", hold))
        with trio.fail_after(BOUND):
            await holding.wait()
        assert [job.name for job in worker.lane.inbox] == ["continue"]
        assert worker.lane.interrupt() is True
        await worker.settled()
    assert len(fake_model.requests) == 1


# -- after a restart ---------------------------------------------------------------------------------


async def test_a_bot_started_with_a_task_in_progress_picks_it_up(open_worker, fake_model, tmp_path):
    book = TaskBook(tmp_path / "bot")
    book.create("Migrate", ["inventory", "update", "verify"])
    [task] = book.load()
    book.update_step(task.id, 1, "succeeded")
    book.update_step(task.id, 2, "in_progress")  # where a kill -9 left it
    fake_model.reply(tool_calls=[step_done(task.id, 2), step_done(task.id, 3)])
    fake_model.reply("Migrated.")
    async with open_worker() as worker:
        await worker.settled()
    assert 'Picking up task "Migrate" where it left off: step 2 of 3, "update", is in progress' in worker.notices()
    assert "step 2 of 3" in last_user(fake_model.requests[0])
    assert book.load()[0].status == "done"


# -- schedules through the lane ----------------------------------------------------------------


async def test_creating_or_deleting_a_schedule_asks_every_time_with_its_next_runs(open_worker, fake_model):
    create = {"action": "create", "title": "CI summary", "prompt": "check the CI", "timetable": "weekdays 09:00"}
    fake_model.reply(tool_calls=[tool_call("schedule", create)])
    fake_model.reply("Scheduled.")
    fake_model.reply(tool_calls=[tool_call("schedule", {**create, "title": "Another"})])
    fake_model.reply("Not scheduled.")
    async with open_worker() as worker:
        worker.lane.submit(UserMessage("every weekday at 9 check the CI"))
        asked = await worker.answer(0)
        assert asked.title == 'schedule wants to create "CI summary" (weekdays 09:00) — allow?'
        assert asked.options == ("Allow once", "Deny", "Deny and say why")  # never "for this session"
        assert "timetable: weekdays 09:00 — At 09:00 on Monday through Friday (Europe/Berlin)" in asked.detail
        assert len(asked.detail.split("next runs: ")[1].splitlines()[0].split(", ")) == 3
        await worker.until(lambda e: isinstance(e, TurnEnded))
        worker.lane.submit(UserMessage("and another"))
        assert (await worker.answer(1)).title.startswith('schedule wants to create "Another"')  # asked again
        await worker.settled()
        [schedule] = worker.work.scheduler.book.load()
        assert schedule.title == "CI summary"
        fake_model.reply(tool_calls=[tool_call("schedule", {"action": "pause", "schedule": schedule.id[:8]}),
                                     tool_call("schedule", {"action": "list"})])
        fake_model.reply("Paused.")
        fake_model.reply(tool_calls=[tool_call("schedule", {"action": "delete", "schedule": schedule.id})])
        fake_model.reply("Deleted.")
        worker.lane.submit(UserMessage("pause it"))
        await worker.until(lambda e: isinstance(e, TurnEnded))  # pause and list ask nothing
        assert not any(isinstance(e, Choose) for e in worker.seen[-20:])
        worker.lane.submit(UserMessage("delete it"))
        assert (await worker.answer(0)).title == 'schedule wants to delete "CI summary" (weekdays 09:00) — allow?'
        await worker.settled()
        assert worker.work.scheduler.book.load() == []
    results = [m["content"] for m in fake_model.requests[3].body["messages"] if m["role"] == "tool"]
    assert results[-1] == "The user declined this call."


async def test_a_due_schedule_runs_a_turn_whose_trigger_is_hidden_and_whose_reply_is_shown(open_worker, fake_model,
                                                                                            tmp_path, fake_home):
    from iota.bots.schedules import ScheduleBook
    from zoneinfo import ZoneInfo

    book = ScheduleBook(tmp_path / "bot", ZoneInfo("Europe/Berlin"))
    book.create(book.plan("Stretch", "remind me to stretch", "once in 1 second"))
    fake_model.reply("Time to stretch!")
    async with open_worker() as worker:
        await worker.until(lambda e: isinstance(e, TurnEnded))
        await worker.settled()
        host = worker.host_messages()
    [request] = fake_model.requests
    assert last_user(request).startswith("Scheduled: Stretch (once ")
    assert last_user(request).endswith("\n\nremind me to stretch")
    assert not any(isinstance(e, UserEcho) for e in worker.seen)
    assert "".join(e.text for e in worker.seen if isinstance(e, TextDelta)) == "Time to stretch!"
    trigger = next(r for r in log_records(worker.session) if r.get("content", "").startswith("Scheduled: "))
    assert trigger["hidden"] is True and trigger["role"] == "user"
    pings = [m for m in host if isinstance(m, Ping)]
    assert [(p.kind, p.text) for p in pings] == [(PingKind.TURN_ENDED, "iota: Time to stretch!")]
    [schedule] = book.load()
    assert schedule.status == "done" and schedule.last_run is not None


async def test_a_run_due_during_an_approval_waits_its_turn(open_worker, fake_model, tmp_path):
    from iota.bots.schedules import ScheduleBook
    from zoneinfo import ZoneInfo

    book = ScheduleBook(tmp_path / "bot", ZoneInfo("Europe/Berlin"))
    book.create(book.plan("Stretch", "remind me to stretch", "once in 1 second"))
    fake_model.reply(tool_calls=[tool_call("schedule", {"action": "delete", "schedule": "nope"}),
                                 tool_call("schedule", {"action": "create", "title": "CI", "prompt": "check",
                                                        "timetable": "daily 09:00"})])
    fake_model.reply("Scheduled the CI check.")
    fake_model.reply("Time to stretch!")
    async with open_worker() as worker:
        worker.lane.submit(UserMessage("check the CI daily"))
        choose = (await worker.until(lambda e: isinstance(e, Choose)))[-1]
        await trio.sleep(1.5)  # the stretch comes due while the question waits
        assert len(fake_model.requests) == 1 and [job.name for job in worker.lane.inbox] == [
            f"schedule {book.load()[0].id}"]
        await choose.reply.send(0)
        await worker.settled()
    assert [last_user(r)[:18] for r in fake_model.requests] == ["check the CI daily", "check the CI daily",
                                                                "Scheduled: Stretch"]


async def test_the_notes_catalog_is_in_the_system_prompt_and_the_body_is_not(open_worker, fake_model):
    fake_model.reply("ok")
    async with open_worker() as worker:
        worker.work.tools[2].library.create("Design brief", "What CI must do", "BODY-ONLY-ON-DEMAND")
        worker.lane.submit(UserMessage("hi"))
        await worker.settled()
    system = fake_model.requests[0].body["messages"][0]["content"]
    assert "- design-brief: Design brief — What CI must do (updated " in system
    assert "BODY-ONLY-ON-DEMAND" not in system


# -- the slash commands ------------------------------------------------------------------------------


async def test_slash_tasks_shows_three_columns_and_stops_or_deletes(open_worker, fake_model):
    async with open_worker() as worker:
        book = worker.book
        book.create("Someday", ["think"], status="backlog")
        book.create("Migrate", ["a", "b"])
        book.create("Old", ["x"])
        old = book.load()[2]
        book.update(old.id, status="done")
        body = worker.work.commands["tasks"][1]
        worker.lane.submit(Command("tasks", "", body))
        panel = next(e for e in await worker.until(lambda e: isinstance(e, Panel)) if isinstance(e, Panel))
        assert panel.text.splitlines() == [
            "Backlog (1)", "  Someday — 0 of 1 steps finished · step 1/1 think",
            "In progress (1)", "  Migrate — 0 of 2 steps finished · step 1/2 a",
            "Finished (1)", "  Old — 1 of 1 steps finished"]
        asked = await worker.answer(1)
        assert asked.options == ("Delete a backlog task", "Stop a running task")
        assert (await worker.answer(0)).options == ("Migrate (in progress)",)
        await worker.settled()
        assert 'Stopped task "Migrate": it is in the backlog, its steps kept.' in worker.notices()
        assert [e.rows for e in worker.seen if isinstance(e, OpenTasks)][-1] == ()
        worker.lane.submit(Command("tasks", "", body))
        await worker.answer(0)
        assert (await worker.answer(1)).options == ("Someday (backlog)", "Migrate (backlog)")
        await worker.settled()
        assert [task.title for task in book.load()] == ["Someday", "Old"]


async def test_slash_schedules_pauses_one_and_slash_notes_lists_them(open_worker, fake_model):
    async with open_worker() as worker:
        book = worker.work.scheduler.book
        book.create(book.plan("CI summary", "check the CI", "weekdays 09:00"))
        worker.lane.submit(Command("schedules", "", worker.work.commands["schedules"][1]))
        panel = next(e for e in await worker.until(lambda e: isinstance(e, Panel)) if isinstance(e, Panel))
        assert "CI summary\" — weekdays 09:00 (Europe/Berlin), active" in panel.text and "next run:" in panel.text
        assert (await worker.answer(0)).options == ("Pause a schedule", "Delete a schedule")
        await worker.answer(0)
        await worker.settled()
        assert book.load()[0].status == "paused"
        assert 'Paused schedule "CI summary".' in worker.notices()
        worker.work.tools[2].library.create("Design brief", "What CI must do", "body")
        worker.lane.submit(Command("notes", "", worker.work.commands["notes"][1]))
        panel = next(e for e in await worker.until(lambda e: isinstance(e, Panel)) if isinstance(e, Panel))
        assert panel.text.startswith("design-brief  Design brief — What CI must do · ")
