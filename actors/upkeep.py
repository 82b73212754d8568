"""A bot's upkeep after turns, "wrapping up", as lane work (the rules are iota.bots.upkeep's).

    a turn ends cleanly, and the upkeep is due ──► Command("upkeep") at the end of the lane
        └─ the job: the journal caught up, hits counted, candidates consolidated
           (iota.bots.candidates), then one short model call over the exchange since the last
           upkeep, with `remember` and `skill` (whose skills wait as proposals for /skills)
           as its only tools ──► its writes shown as dim
           notices and recorded as memory notices; the memory block rebuilt for the next turn
    a compaction condensed turns no upkeep read yet ──► the same call over them, first

It never delays the person. It is queued only when nothing the person typed is waiting, it gives
way the moment they submit anything — a message or a command cancels it at once (it is owed, and
runs again after their turn) — and Ctrl+C cancels it like any job. It is not a turn of the
conversation: the request and its answer are kept nowhere, and the model never sees them; what
it wrote reaches the conversation as notices (`memory: MEMORY.md ## User +1 line: …`, `skill:
created …`), a candidate's text only on screen. A write is whole or not made (each tool writes
synchronously, so a cancellation lands between writes), and the notices of the writes made
before a cancellation are shown all the same. The status row says `wrapping up…`; /status shows
what the upkeeps took, apart from the conversation's own use.

`/candidates` lists the candidates with their hits and pins, promotes or forgets one.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable

import trio

from actors.events import Panel, ToolEnded, ToolStarted
from actors.journal import JournalKeeper
from actors.lane import Command, Lane, UserMessage
from iota.agent import Approvals, Turn, run_turn
from iota.bots.candidates import CANDIDATE, Consolidated, consolidate, describe
from iota.bots.hits import count_hits
from iota.bots import summary as running
from iota.bots import upkeep as rules
from iota.chat import ChatSetup
from iota.config import settings
from iota.errors import IotaError, ToolError
from iota.memory.document import MemoryDoc, go_quote
from iota.memory.file import read_memory
from iota.memory.kinds import WRITABLE
from iota.memory.layers import BotMemory
from iota.messages import ASSISTANT, USER, Message, ToolCall
from iota.providers.base import Provider, Request
from iota.sessions.conversation import notice
from iota.tools.base import ToolResult, Toolbox
from iota.tools.remember import Remember
from iota.tools.remember_candidates import CandidateActions
from iota.tools.skill_write import SkillTool

UPKEEP = "upkeep"
CANDIDATES_HELP = "the bot's candidate memory with its hits; pin, promote or forget one"


class Upkeep:
    def __init__(self, setup: ChatSetup, memory: BotMemory, remember: Remember, candidates: CandidateActions,
                 skill: SkillTool | None, journal: JournalKeeper | None, refresh_memory: Callable[[], list[str]],
                 *, now: Callable[[], float] = time.time):
        self.setup = setup
        self.memory = memory
        self.candidates = candidates
        self.journal = journal
        self.refresh_memory = refresh_memory
        # Its skills are proposals: they wait for the person's yes in /skills, out of every catalog.
        self.skill = skill.proposer() if skill is not None else None
        self.toolbox = Toolbox([remember, *([self.skill] if self.skill is not None else [])])
        self.state = rules.ReadMark(memory.bot_dir)
        self.cost = rules.UpkeepCost()
        self.enabled = setup.agent.upkeep
        self.every = setup.agent.upkeep_every
        self.now = now
        self.person_turns = 0     # typed since the last upkeep
        # The running summary (iota.bots.summary): refreshed by this job every `summary_every`
        # typed turns, and carried by the first message after a compaction; `upkeep: false` turns
        # it off with the rest of the upkeep.
        self.summary_every = setup.agent.summary_every if setup.agent.upkeep else 0
        self.summary_state = running.summary_mark(memory.bot_dir)
        self.summary_turns = 0    # typed since the last refresh
        self._carry = False       # a compaction just happened: the next message carries the summary
        self.asked = False        # one of them asked to remember
        self.owed = False         # due, but given way to the person: runs after their next turn
        self._queued = False
        self._condensed: list[Message] = []   # condensed by a compaction before any upkeep read it
        self._scope: trio.CancelScope | None = None
        self._typed_jobs: list = []           # what the person submitted that the lane has not taken yet
        self._lane: Lane | None = None
        self._provider: Provider | None = None
        self._failed = ""         # the last warning said, so a provider down is said once
        self._failing = False     # the last upkeep failed: the next waits for the throttle

    # -- the chat's hooks ----------------------------------------------------------------------

    async def run(self, lane: Lane, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """A task beside the lane (ChatParts.tasks): hooks in, counts what is owed from before this
        start, and closes the upkeep model's provider when the chat ends."""
        self._lane = lane
        lane.on_submit.append(self.give_way)
        lane.on_compacted.append(self.condensed)
        lane.status_rows.append(lambda: ("Upkeep", self.cost.describe() if self.enabled else "off (upkeep: false)"))
        model = self.model()
        if self.enabled and not model.supports_tools:
            self.enabled = False
            lane.notice(f"upkeep is off: its model {model.name} does not call tools (supports_tools: false)",
                        warning=True)
        self.person_turns = rules.typed_turns(rules.since_wrapped(lane.conversation.messages,
                                                                  self.state.read()))
        self.owed = self.person_turns >= self.every
        self.summary_turns = rules.typed_turns(rules.since_wrapped(lane.conversation.messages,
                                                                   self.summary_state.read()))
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            if self._provider is not None:
                with trio.move_on_after(2, shield=True):
                    await self._provider.aclose()

    async def before_send(self, lane: Lane, user: Message) -> None:
        """Each message the person typed counts, and may ask to remember (iota's own do not)."""
        if not user.hidden:
            self.person_turns += 1
            self.summary_turns += 1
            self.asked = self.asked or rules.asks_to_remember(user.content)

    async def after_turn(self, lane: Lane) -> None:
        """After a clean turn: queue the upkeep when it is due."""
        turn = lane.last_turn
        if turn is None or turn.interrupted:
            return
        if self._due() or (self.enabled and self._condensed and not self._failing) or self._summary_due():
            self._queue(lane)

    def _due(self) -> bool:
        return self.enabled and (self.asked or self.owed or self.person_turns >= self.every)

    def _summary_due(self) -> bool:
        return self.summary_every > 0 and self.summary_turns >= self.summary_every

    def give_way(self, job) -> None:
        """The person submitted something (a message, a command): a running upkeep stops at once."""
        if isinstance(job, (UserMessage, Command)):
            self._typed_jobs.append(job)
            if self._scope is not None:
                self._scope.cancel()

    def _person_waiting(self, lane: Lane) -> bool:
        """Whether something the person submitted is still in the lane's queue."""
        self._typed_jobs = [job for job in self._typed_jobs if any(job is queued for queued in lane.inbox)]
        return bool(self._typed_jobs)

    def condensed(self, messages: list[Message]) -> None:
        """A compaction condensed `messages`: those after the last upkeep are read next, before
        they are out of reach (the job is queued behind whatever runs now)."""
        self._carry = True
        part = rules.since_wrapped(messages, self.state.read())
        if self.enabled and self._lane is not None and rules.exchange_text(part).strip():
            self._condensed += part
            self._queue(self._lane)

    def _queue(self, lane: Lane) -> None:
        if self._queued:
            return
        if self._person_waiting(lane):
            self.owed = self._due()   # a refresh of the summary alone stays owed by its own count
            return
        self._queued = True
        lane.inbox.put(Command(UPKEEP, "", self._job))
        lane.show_status()

    # -- the job ---------------------------------------------------------------------------------

    async def _job(self, lane: Lane, argument: str) -> None:
        self._queued = False
        if self._person_waiting(lane):  # typed while it waited: their turn first
            self.owed = self._due()
            return
        lane.set_running(rules.RUNNING)
        report = _Report()
        due, summary_due = self._due(), self._summary_due()
        extracted = False
        try:
            with trio.CancelScope() as self._scope:
                if self._condensed:
                    part = self._condensed
                    await self._ask(lane, part, report, condensed=True)
                    self.state.save(rules.last_turn(part) or self.state.read())
                    self._condensed = []
                if due:
                    await self._consolidate(lane, report)
                    exchange = rules.since_wrapped(lane.conversation.messages, self.state.read())
                    await self._ask(lane, exchange, report)
                    self.state.save(rules.last_turn(exchange) or self.state.read())
                    self.person_turns, self.asked, self.owed = 0, False, False
                    extracted = True
                if summary_due:
                    await self._refresh_summary(lane)
            if self._scope.cancelled_caught:  # the person typed: it runs again after their turn
                self.owed = due and not extracted
            else:
                self._failing = False
        except _Failed:
            # The provider failed (said once): it is tried again at the next throttle point, over
            # everything since the last upkeep that finished.
            self.person_turns, self.asked, self.owed, self._failing = 0, False, False, True
        finally:
            self._scope = None
            with trio.CancelScope(shield=True):
                await self._tell(lane, report)

    async def _refresh_summary(self, lane: Lane) -> None:
        """One tool-less call over the exchange since the last refresh and the summary on disk now
        (the person's edits and all); the answer, shaped, replaces summary.md (the old kept as .prev).
        A failure is said once and tried again at the next throttle point; a cancel (the person
        typed) leaves it owed."""
        exchange_messages = rules.since_wrapped(lane.conversation.messages, self.summary_state.read())
        exchange = rules.exchange_text(exchange_messages)
        if exchange.strip():
            model = self.model()
            previous = running.read_summary(self.memory.bot_dir)
            self.cost.runs += 1
            try:
                reply = await self._provider_for(model).stream(
                    running.request(self.memory.bot, model.id, previous, exchange), lambda _text: None)
            except IotaError as error:
                self._warn(lane, f"summary refresh failed: {error}")
                self.summary_turns = 0
                return
            self.cost.add(reply.usage)
            if reply.text.strip():
                text = running.shaped(reply.text)
                try:
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(running.write_summary, self.memory.bot_dir, text)
                except OSError as error:
                    self._warn(lane, f"summary: cannot write {running.SUMMARY_NAME}: {error.strerror or error}")
                    return
                lane.notice(f"summary: {running.SUMMARY_NAME} refreshed ({len(text.encode())} bytes)")
        self.summary_state.save(rules.last_turn(exchange_messages) or self.summary_state.read())
        self.summary_turns = 0

    async def carry_summary(self, lane: Lane, user: Message) -> None:
        """The first message after a compaction carries the running summary (a hidden notice)."""
        if not self._carry:
            return
        self._carry = False
        text = running.read_summary(self.memory.bot_dir)
        if text:
            await lane.keep([running.summary_notice(text)])

    async def _consolidate(self, lane: Lane, report: _Report) -> None:
        """Count the hits since the last upkeep in the journal's index and apply the rules."""
        if self.journal is not None:
            await self.journal.catch_up(lane)
        session = lane.conversation.session
        try:
            done = await trio.to_thread.run_sync(self._consolidate_now, session.id if session else "")
        except (ToolError, IotaError) as error:   # an unreadable candidates file, a broken index
            self._warn(lane, f"upkeep: {error}; the candidates are left as they are")
            return
        report.store += done.notices()

    def _consolidate_now(self, session: str) -> Consolidated:
        book = self.candidates.book
        entries = book.load()
        now = int(self.now())
        counting = self.journal is not None and bool(session)
        if counting:
            count_hits(self.journal.journal, session, entries, now)
        done = consolidate(entries, now=now, counting=counting)
        book.save(entries)
        return done

    async def _ask(self, lane: Lane, messages: list[Message], report: _Report, *, condensed: bool = False) -> None:
        """One upkeep call over `messages`, unless they hold nothing that was said."""
        exchange = rules.exchange_text(messages)
        if not exchange.strip():
            return
        model = self.model()
        text = rules.request_text(self._context(condensed), exchange)
        request = Request(model=model.id, system=rules.instruction(self.skill is not None),
                          messages=[Message(USER, text)], tools=self.toolbox.specs(), temperature=model.temperature,
                          top_p=model.top_p, effort=model.effort)
        turn = Turn()
        self.cost.runs += 1
        try:
            await run_turn(turn, self._provider_for(model), request, self.toolbox, Approvals(None),
                           _Shown(lane), max_turns=rules.ROUNDS)
        except IotaError as error:  # the provider failed: said once, and it runs again after a later turn
            self._warn(lane, f"upkeep failed: {error}")
            raise _Failed() from None
        finally:
            for message in turn.messages:
                if message.role == ASSISTANT:
                    self.cost.add(message.usage)

    def _warn(self, lane: Lane, text: str) -> None:
        """A warning, once: the same one again (a provider down for an hour) is not repeated."""
        if text != self._failed:
            lane.notice(text, warning=True)
        self._failed = text

    def model(self) -> settings.ResolvedModel:
        """The agent's `upkeep_model:`, else the chat's model as it is now (after any /model)."""
        agent = self.setup.agent
        return settings.resolve_model(self.setup.config, agent, agent.upkeep_model) if agent.upkeep_model \
            else self.setup.model

    def _provider_for(self, model: settings.ResolvedModel) -> Provider:
        if not self.setup.agent.upkeep_model:
            return self.setup.provider()
        if self._provider is None:
            self._provider = self.setup.new_provider(model)
        return self._provider

    def _context(self, condensed: bool) -> rules.Context:
        files = []
        for name, kind in WRITABLE.items():
            try:
                body = MemoryDoc.parse(read_memory(self.memory.writer(name).path) or "").body_text()
            except ToolError:
                body = ""
            files.append((kind.label, body))
        try:
            entries = [entry for entry in self.candidates.book.load() if entry.state == CANDIDATE]
        except ToolError:
            entries = []
        entries.sort(key=lambda entry: -entry.created)
        own = self.skill.directory if self.skill is not None else None
        skills = [(skill.name, skill.description, " (yours)" if own is not None and skill.directory.parent == own
                   else "") for skill in self.setup.skills]
        if self.skill is not None:   # what waits for the person is not proposed again
            skills += [(proposal.slug, proposal.description, " (proposed, waiting)") for proposal in self.skill.pending()]
        return rules.Context(self.memory.bot, datetime.date.today().isoformat(), files,
                             [describe(entry) for entry in entries], skills, condensed)

    async def _tell(self, lane: Lane, report: _Report, *, by: str = "the upkeep") -> None:
        """Show every write as a dim notice and record it in the conversation as a memory notice;
        a candidate's text is shown, not recorded: candidates are never sent with requests."""
        memory = report.memory + self.memory.take_notices()
        noted = self.candidates.take_notices() + report.store
        skills = self.skill.take_notices() if self.skill is not None else []
        for line in [*memory, *noted, *skills]:
            lane.notice(line)
        changed = len(noted)
        recorded = memory + skills + ([f"memory: {changed} change{'' if changed == 1 else 's'} to the candidates "
                                       f"and durables by {by} (/candidates lists them)"]
                                      if changed else [])
        if recorded:
            await lane.keep([notice(line) for line in recorded])
        if memory:
            for warning in self.refresh_memory():   # the writes go out with the next message
                lane.notice(warning, warning=True)

    # -- /candidates -------------------------------------------------------------------------------

    async def command(self, lane: Lane, argument: str) -> None:
        """`/candidates`: the candidates and durables with their hits, then a pick to pin, promote
        or forget one (the candidates first: they are what waits on the person)."""
        try:
            entries = self.candidates.book.load()
        except ToolError as error:
            lane.notice(str(error), warning=True)
            return
        entries.sort(key=lambda entry: (entry.state != CANDIDATE, -entry.pinned, -entry.hits, -entry.created))
        if not entries:
            lane.emit(Panel("Candidates", "No candidates yet: the upkeep notes them after turns."))
            return
        lane.emit(Panel("Candidates", "\n".join(describe(entry) for entry in entries)))
        index = await lane.ask("Pin, promote or forget one? (Esc: no)", tuple(describe(entry) for entry in entries))
        if index is None:
            return
        chosen = entries[index]
        candidate = chosen.state == CANDIDATE
        pin = ("unpin", "Unpin") if chosen.pinned else \
            ("pin", "Pin (promoted at the next upkeep)" if candidate else "Pin (sent with every message)")
        choices = [pin, *([("promote", "Promote to durables now")] if candidate else []), ("forget", "Forget")]
        answer = await lane.ask(f"{'Candidate' if candidate else 'Durable'} {go_quote(chosen.text)}",
                                tuple(label for _, label in choices))
        if answer is None:
            return
        try:
            self.candidates.run(choices[answer][0], {"old": chosen.id})
        except ToolError as error:
            lane.notice(str(error), warning=True)
            return
        await self._tell(lane, _Report(), by="the user")


class _Failed(Exception):
    pass


class _Report:
    """What one upkeep job did, to tell once it ends (however it ends)."""

    def __init__(self) -> None:
        self.memory: list[str] = []
        self.store: list[str] = []   # what the consolidation did to the candidates and durables


class _Shown:
    """The upkeep's calls are quiet, except a skill it writes: that is shown in full, as a tool block."""

    def __init__(self, lane: Lane):
        self.lane = lane

    def on_text(self, text: str) -> None:
        pass

    def on_tool_start(self, call: ToolCall, target: str) -> None:
        pass

    def on_tool_end(self, call: ToolCall, result: ToolResult) -> None:
        if call.name == "skill" and not result.is_error:
            self.lane.emit(ToolStarted(call.id, "skill", f"{call.arguments.get('action', '')} "
                                                         f"{call.arguments.get('name', '')}".strip()))
            self.lane.emit(ToolEnded(call.id, call.name, result.content, result.display, False))

