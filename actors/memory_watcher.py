"""The memory watcher: what the model reads from disk stays current, and its own memory writes
reach the conversation.

Before each message is sent it checks, in this order:

- AGENTS.md: a change anywhere in the chain (agent and bot mode) shows a dim `AGENTS.md
  reloaded`; the prompt is composed at send time, so the new text goes out with this message.
- MEMORY.md (bots): a change made outside this process (the tool's own writes do not count)
  refreshes the memory block and shows a dim `MEMORY.md reloaded`; so does the day changing.

After each turn it drains the `remember` tool's notices (`memory: MEMORY.md ## User +1 line: …`):
each is shown and recorded in the conversation as a notice, so the model sees its own writes
even though its snapshot of the file is frozen until the next refresh.

It is not a task of its own: checking at the moment of sending is exactly when it matters, and
costs two stat calls.
"""

from __future__ import annotations

import datetime

from actors.lane import Lane
from iota.chat import ChatSetup
from iota.sessions.conversation import notice
from iota.messages import Message
from iota.memory.file import MemoryFile
from iota.prompt import agents_signature


class MemoryWatcher:
    def __init__(self, setup: ChatSetup, memory: MemoryFile | None):
        self.setup = setup
        self.memory = memory
        self._agents_signature = self._agents_now()
        self._day = datetime.date.today()

    def _agents_now(self) -> tuple:
        if self.setup.mode not in ("agent", "bot"):
            return ()
        return agents_signature(self.setup.project_root, self.setup.cwd)

    def refresh_memory(self) -> list[str]:
        """Re-read MEMORY.md into the prompt; the warnings to show."""
        if self.memory is None:
            return []
        snapshot = self.memory.snapshot(self.setup.project_root.name)
        self.setup.memory_block = snapshot.block
        return list(snapshot.warnings)

    async def before_send(self, lane: Lane, user: Message) -> None:
        signature = self._agents_now()
        if signature != self._agents_signature:
            self._agents_signature = signature
            lane.notice("AGENTS.md reloaded")
        if self.memory is None:
            return
        today = datetime.date.today()
        if self.memory.changed_outside() or today != self._day:
            outside = self.memory.changed_outside()
            self._day = today
            for warning in self.refresh_memory():
                lane.notice(warning, warning=True)
            if outside:
                lane.notice("MEMORY.md reloaded")

    async def after_turn(self, lane: Lane) -> None:
        if self.memory is None:
            return
        lines = self.memory.take_notices()
        for line in lines:
            lane.notice(line)
        if lines:
            await lane.keep([notice(line) for line in lines])
