"""The notifier's outlet that keeps a running bot's `state.json` (iota.bots.state_file).

It hears what the hosts hear. Each state change is stamped when it is posted (`since`) and
written from a worker thread with the bot's task in progress and next schedule read fresh from
its files; while a write is under way newer states replace each other in the mailbox, like any
host's. Leaving removes the file: a bot that is not running has no state.

    parts.host_outlets.append(StateFileOutlet(bot_dir, "coder", project_root, host.tmux))
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import trio

from actors.notifier import Message, Outlet, SetState
from iota.bots import state_file
from iota.hosts import STATE_WORDS, State, TmuxPane


_REMOVE = "remove"   # the goodbye (a mailbox item cannot be None: that means closed)


class StateFileOutlet(Outlet):
    name = "state.json"

    def __init__(self, directory: Path, agent: str, project: Path, pane: TmuxPane | None) -> None:
        super().__init__()
        self._directory = directory
        self._agent = agent
        self._project = str(project)
        self._pane = pane
        self._shown: State | None = None
        self._last_activity: str | None = None

    def post(self, message: Message) -> None:
        if not isinstance(message, SetState):
            return
        now = _stamp()
        # A job began (idle → anything) or ended (anything → idle).
        if self._shown is not None and State.IDLE in (self._shown, message.state):
            self._last_activity = now
        self._shown = message.state
        self._mailbox.post("state", (message.state, now, self._last_activity))

    def _goodbye(self) -> list[tuple[str, object]]:
        return [("state", _REMOVE)]

    async def _send(self, item: tuple[State, str, str | None] | str) -> None:
        await trio.to_thread.run_sync(self._write, item)

    def _write(self, item: tuple[State, str, str | None] | str) -> None:
        if item == _REMOVE:
            state_file.remove_state(self._directory)
            return
        state, since, last_activity = item
        task, step, next_schedule = state_file.work_in_hand(self._directory)
        pane = self._pane
        state_file.write_state(self._directory, state_file.BotState(
            self._agent, os.getpid(), self._project, STATE_WORDS[state], since, task, step, next_schedule,
            last_activity, pane.pane_id if pane else None, pane.socket_path if pane else None))


def _stamp() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
