"""The title pass (actors.titler) beside a real lane, against the fake model: the fallback on
disk first, the model's title after, standing aside for every job, and the naming commands."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
import trio

from actors.events import Notice, TurnEnded
from actors.titler import ATTEMPTS, Titler
from iota.sessions.bundle import read_meta
from iota.sessions.conversation import Conversation
from tests.actors.test_lane import BOUND, open_lane  # noqa: F401  (the fixture)
from tests.support.fake_model import Gate

FIRST = "help me plan my vegetable garden for spring"
FALLBACK = "help me plan my vegetable garden for…"


@pytest.fixture
def titled_lane(open_lane):  # noqa: F811
    @asynccontextmanager
    async def open_(conversation: Conversation | None = None):
        async with open_lane(conversation) as chat:
            async with trio.open_nursery() as nursery:
                await nursery.start(Titler(chat.setup).run, chat.lane)
                yield chat
                nursery.cancel_scope.cancel()

    return open_


async def until(condition) -> None:
    with trio.fail_after(BOUND):
        while not condition():
            await trio.sleep(0.01)


async def title_requests(model, n: int) -> None:
    await until(lambda: len(model.title_requests) >= n)


async def test_the_fallback_is_on_disk_before_the_model_answers_and_the_answer_replaces_it(
        titled_lane, fake_model, session):
    gate = Gate()
    fake_model.reply("Start with the soil.")
    fake_model.title("Spring garden", gate=gate)
    async with titled_lane(Conversation(session=session)) as chat:
        chat.submit(FIRST)
        await chat.until(TurnEnded)
        await title_requests(fake_model, 1)
        await until(lambda: read_meta(session.dir).get("title") == FALLBACK)
        gate.open()
        await until(lambda: read_meta(session.dir).get("title") == "Spring garden")
        assert session.meta["title"] == "Spring garden"


async def test_every_job_makes_the_pass_stand_aside_and_it_is_tried_again_a_few_times(
        titled_lane, fake_model, session):
    for _ in range(ATTEMPTS):
        fake_model.title(gate=Gate())  # held until the next job cancels it
    for n in range(ATTEMPTS + 1):
        fake_model.reply(f"answer {n}")
    async with titled_lane(Conversation(session=session)) as chat:
        chat.submit(FIRST)
        await chat.until(TurnEnded)
        for n in range(1, ATTEMPTS + 1):
            await title_requests(fake_model, n)
            chat.submit(f"next {n}")  # the person goes on: the pass gives way at once
            await chat.until(TurnEnded)
            await trio.to_thread.run_sync(fake_model.title_requests[n - 1].wait_done)
            assert fake_model.title_requests[n - 1].disconnected
        await trio.sleep(0.2)
        assert len(fake_model.title_requests) == ATTEMPTS  # no more than that
    assert read_meta(session.dir)["title"] == FALLBACK


async def test_a_rename_wins_over_the_pass(titled_lane, fake_model, session):
    fake_model.reply("ok")
    fake_model.title(gate=Gate())
    async with titled_lane(Conversation(session=session)) as chat:
        chat.submit(FIRST)
        await chat.until(TurnEnded)
        await title_requests(fake_model, 1)
        chat.command("rename", "My own name")
        await chat.until(lambda event: isinstance(event, Notice) and "Renamed" in event.text)
        await trio.sleep(0.2)
        assert len(fake_model.title_requests) == 1  # a title the person chose is never replaced
    assert read_meta(session.dir)["title"] == "My own name"


async def test_save_names_a_chat_that_was_not_saving(titled_lane, fake_model):
    fake_model.reply("ok")
    fake_model.title("Saved and named")
    async with titled_lane() as chat:
        chat.submit(FIRST)
        await chat.until(TurnEnded)
        await trio.sleep(0.1)
        assert fake_model.title_requests == []  # nothing is saved, nothing is named
        chat.command("save")
        await chat.until(Notice)
        session = chat.conversation.session
        await until(lambda: read_meta(session.dir).get("title") == "Saved and named")
        session.close()


@pytest.mark.parametrize("command, argument, said", [
    ("rename", "x", "This chat is not saved (--no-save); /save keeps it: /save x saves it under that title"),
    ("fork", "", "This chat is not saved (--no-save); /save keeps it, then /fork branches it"),
    ("session", "archive", "This chat is not saved (--no-save); /save keeps it; there is nothing to archive"),
    ("session", "parent k7", "This chat is not saved (--no-save); /save keeps it; it has no place in the tree yet"),
    ("session", "sideways", "usage: /session [archive [id] | unarchive [id] | parent <id> | unparent]"),
])
async def test_the_naming_commands_say_what_they_need(open_lane, command, argument, said):  # noqa: F811
    async with open_lane() as chat:
        chat.command(command, argument)
        assert (await chat.until(Notice))[-1] == Notice(said, warning=True)
