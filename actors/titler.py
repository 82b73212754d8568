"""The title pass: a saved chat or agent session is named after its first exchange, in the
background, without ever delaying the chat.

When the lane comes to rest after a job and the session it writes has no title yet but has a
first exchange, the session gets the fallback title at once (the opening words of the person's
first message, iota.titles), and a background task asks the model — the chat's own, or
the agent's `title_model:` — for a better one, which replaces the fallback when it comes back.

Why a background task, and not a job on the lane. Every model call of the conversation is a
lane job, so that nothing races; but a job on the lane is waited for, and the person's next
message would queue behind the title request — a second or two on a slow provider, longer on a
local one — and that is exactly the delay a title must never cause. The title pass touches
nothing the lane owns (it reads the first exchange, which is settled, and writes one meta field
through the session's own lock-guarded `update_meta`), so it need not be serialised with the
lane; it only must not compete with it. So it runs beside the lane, in the supervisor's nursery,
on a provider of its own (the chat's keeps its cached wire history), and stands aside whenever
the lane starts a job — anything the person does: a message, a command, Ctrl+C's successor.
A local server that serves one request at a time then never makes the person's turn wait
behind a title. A pass that was stood aside is tried again when the lane next rests (at most
`ATTEMPTS` times); one that fails or times out leaves the fallback, for good. Whatever happens,
the session keeps a title: the fallback is on disk before the request is sent.

The pass lands only if nothing changed meanwhile: the chat still writes that session and its
title is still the fallback this pass set (a `/rename` wins). A bot never gets one: its session
keeps the bot's name (the chat parts leave the titler out of a bot).
"""

from __future__ import annotations

from functools import partial

import trio

from actors.lane import Lane
from iota.chat import ChatSetup
from iota.config import settings
from iota.errors import IotaError
from iota.providers.base import Provider
from iota.sessions.bundle import Session
from iota.titles import Opening, first_exchange, generate_title, opening_words

# How long a title pass may take, and how often one that was stood aside is tried again.
TITLE_SECONDS = 30.0
ATTEMPTS = 3


class Titler:
    def __init__(self, setup: ChatSetup):
        self.setup = setup
        self._nursery: trio.Nursery | None = None
        self._running: trio.CancelScope | None = None
        self._fallbacks: dict[str, str] = {}   # session id → the fallback title this chat set
        self._attempts: dict[str, int] = {}

    async def run(self, lane: Lane, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve title passes for `lane` until the chat ends (a task in the supervisor's nursery)."""
        lane.on_job_start.append(self.stand_aside)
        lane.on_rest.append(self.consider)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def stand_aside(self) -> None:
        """The lane starts a job: a pass in flight gives way (and is tried again later)."""
        if self._running is not None:
            self._running.cancel()

    def consider(self, lane: Lane) -> None:
        """The lane rests: start a pass if the session it writes is still to be named."""
        session = lane.conversation.session
        if self._nursery is None or self._running is not None or session is None:
            return
        title = session.meta.get("title")
        fallback = self._fallbacks.get(session.id)
        if (title and title != fallback) or self._attempts.get(session.id, 0) >= ATTEMPTS:
            return
        opening = first_exchange(lane.conversation.messages)
        if opening is None:
            return
        self._attempts[session.id] = self._attempts.get(session.id, 0) + 1
        # The scope exists before the task runs, so a job that starts at once still cancels it.
        self._running = trio.CancelScope()
        self._nursery.start_soon(self._title, lane, session, opening, self._running)

    async def _title(self, lane: Lane, session: Session, opening: Opening, scope: trio.CancelScope) -> None:
        try:
            fallback = self._fallbacks.get(session.id)
            if fallback is None:
                fallback = opening_words(opening.message)
                self._fallbacks[session.id] = fallback
                await self._set(session, fallback)
            with scope:
                title = await self._ask(opening)
                if not title:  # failed, timed out, or answered nothing usable: the fallback stays
                    self._attempts[session.id] = ATTEMPTS
                    return
            if scope.cancelled_caught:
                return
            if lane.conversation.session is session and session.meta.get("title") == fallback:
                await self._set(session, title)
                self._attempts[session.id] = ATTEMPTS
        finally:
            if self._running is scope:
                self._running = None

    async def _set(self, session: Session, title: str) -> None:
        """Write the title, shielded (meta.json is replaced whole; a failed write is not worth a word)."""
        with trio.CancelScope(shield=True):
            try:
                await trio.to_thread.run_sync(partial(session.update_meta, touch=False, title=title))
            except IotaError:
                pass

    async def _ask(self, opening: Opening) -> str:
        """The model's title, or "" when the request fails or times out. The agent's
        `title_model:`, else the chat's model as it is now (after any /model), on a provider of
        its own, closed after the pass."""
        provider: Provider | None = None
        try:
            model = title_model(self.setup)
            provider = self.setup.new_provider(model)
            with trio.fail_after(TITLE_SECONDS):
                return await generate_title(provider, model.id, opening)
        except (IotaError, trio.TooSlowError):
            return ""
        finally:
            if provider is not None:
                with trio.move_on_after(2, shield=True):
                    await provider.aclose()


def title_model(setup: ChatSetup) -> settings.ResolvedModel:
    """The model the title pass asks: the agent's `title_model:`, else the chat's model as it is now."""
    agent = setup.agent
    return settings.resolve_model(setup.config, agent, agent.title_model) if agent.title_model else setup.model
