"""One turn of the `lead` agent of the config in HOME, saved record by record into a new session
as the chat saves it, for a test to kill mid-helper (tests/iota/test_delegation_kill.py):

    python -m tests.support.delegating_turn <project dir> <message>

It prints the caller's session id as soon as the session exists, then runs the turn."""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from iota.agent import Approvals, Turn, run_turn
from iota.chat import prepare_chat
from iota.config import settings
from iota.messages import USER, Message
from iota.sessions.bundle import new_turn_id


class SessionRecorder:
    def __init__(self, session):
        self.session = session

    async def record(self, messages, *, durable: bool = True) -> None:
        self.session.append(messages, durable=durable, meta=False)


async def main(project: Path, text: str) -> None:
    loaded = settings.load(project)
    setup = prepare_chat(loaded, settings.find_agent(loaded, "lead"), project, interactive=False)
    session = setup.new_session()
    setup.caller_session = lambda: session
    turn = Turn(id=new_turn_id())
    user = Message(USER, text, turn=turn.id)
    session.append([user])
    print(session.id, flush=True)
    async with setup.open_tools() as toolbox:
        await run_turn(turn, setup.provider(), setup.request([user], toolbox), toolbox, Approvals(None),
                       recorder=SessionRecorder(session))


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]), sys.argv[2])
