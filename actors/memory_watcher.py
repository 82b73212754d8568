"""The memory watcher: what the model reads from disk stays current, its own memory writes reach
the conversation, and `/memory` shows a bot's memory and opens a file of it in $EDITOR.

Before each message is sent it checks, in this order:

- AGENTS.md: a change anywhere in the chain (agent and bot mode) shows a dim `AGENTS.md
  reloaded`; the prompt is composed at send time, so the new text goes out with this message.
- the memory (bots): every file of every layer (iota.memory.layers) changed, added or removed
  from outside this process — the tool's own writes do not count — has its block read again and
  shows a dim `memory/SOUL.md reloaded` (`MEMORY.md reloaded`, `main/MEMORY.md reloaded`); the
  day changing rereads them all.
- an agent's memory (iota.memory.agent) the same way, and all of it again when the session the
  chat writes changes its id or title (`/session`, `/new`, the title pass, `/rename`): its files'
  `include-session` / `exclude-session` are matched against both.

After each turn it drains the `remember` tool's notices (`memory: MEMORY.md ## User +1 line: …`):
each is shown and recorded in the conversation as a notice, so the model sees its own writes
even though its copy of the files is frozen until the next refresh.

It is not a task of its own: checking at the moment of sending is exactly when it matters, and
costs a directory listing and a stat per memory file.
"""

from __future__ import annotations

import datetime

from actors.editor import run_editor
from actors.events import Panel
from actors.lane import Lane
from iota.chat import ChatSetup
from iota.memory.agent import AgentMemory
from iota.memory.scope import session_name
from iota.memory.layers import BotMemory
from iota.bots.summary import SUMMARY_NAME, read_summary, summary_path
from iota.memory.kinds import MEMORY_DIR
from iota.memory.report import Editable, describe, editable
from iota.messages import Message
from iota.prompt import agents_signature
from iota.sessions.conversation import notice

MEMORY_HELP = "show the memory files, and open one in $EDITOR"


class MemoryWatcher:
    def __init__(self, setup: ChatSetup, memory: BotMemory | None):
        self.setup = setup
        self.memory = memory
        self._agents_signature = self._agents_now()
        self._day = datetime.date.today()

    def _agents_now(self) -> tuple:
        if self.setup.mode not in ("agent", "bot"):
            return ()
        return agents_signature(self.setup.project_root, self.setup.cwd)

    def refresh_memory(self) -> list[str]:
        """Re-read every memory file into the prompt; the warnings to show."""
        if self.memory is None:
            return []
        warnings = self.memory.refresh()
        self.setup.memory_block = self.memory.prompt()
        return warnings

    async def before_send(self, lane: Lane, user: Message) -> None:
        signature = self._agents_now()
        if signature != self._agents_signature:
            self._agents_signature = signature
            lane.notice("AGENTS.md reloaded")
        if self.memory is None:
            return
        if isinstance(self.memory, AgentMemory) and self.memory.follow(session_name(lane.conversation.session)):
            self.setup.memory_block = self._refresh_and_warn(lane)
        reloaded, warnings = self.memory.reload_changed()
        today = datetime.date.today()
        new_day = today != self._day
        if new_day:
            self._day = today
            warnings = self.memory.refresh()
        if reloaded or new_day:
            self.setup.memory_block = self.memory.prompt()
        for warning in warnings:
            lane.notice(warning, warning=True)
        for label in reloaded:
            lane.notice(f"{label} reloaded")

    def _refresh_and_warn(self, lane: Lane) -> str:
        for warning in self.memory.refresh():
            lane.notice(warning, warning=True)
        return self.memory.prompt()

    async def after_turn(self, lane: Lane) -> None:
        if self.memory is None:
            return
        lines = self.memory.take_notices()
        for line in lines:
            lane.notice(line)
        if lines:
            await lane.keep([notice(line) for line in lines])

    async def show(self, lane: Lane, argument: str) -> None:
        """`/memory`: every file of the bot's (or agent's) memory with its size against its cap, what does not go
        out here and why; then a pick (a digit, or Enter) opens one in $EDITOR, with the terminal
        handed over until it exits. The edit reaches the next request like any outside edit."""
        memory = self.memory
        if memory is None:
            return
        # Read as the next request would, so the table says what will go out, not what went out.
        if isinstance(memory, AgentMemory):
            fresh = memory.fresh_for(session_name(lane.conversation.session))
            lane.emit(Panel("Memory", f"{describe(fresh)}\n\nin {memory.bot_dir / MEMORY_DIR}"))
            await self._offer_editor(lane, editable(fresh))
            return
        fresh = memory.fresh()
        summary = read_summary(memory.bot_dir)
        lane.emit(Panel("Memory", f"{describe(fresh)}\n\n{SUMMARY_NAME} (the running summary, sent after a "
                                  f"compaction):\n{summary or '(none yet)'}"))
        await self._offer_editor(lane, [*editable(fresh), Editable(SUMMARY_NAME, summary_path(memory.bot_dir),
                                                                   new=not summary)])

    async def _offer_editor(self, lane: Lane, files: list[Editable]) -> None:
        index = await lane.ask("Open a memory file in $EDITOR? (Esc: no)",
                               tuple(f"{file.label}{' (new)' if file.new else ''}" for file in files))
        if index is None:
            return
        chosen = files[index]
        try:
            chosen.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            lane.notice(f"cannot create {chosen.path.parent}: {error.strerror or error}", warning=True)
            return
        await run_editor(lane, chosen.path)
