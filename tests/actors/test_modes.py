"""Switching the permission mode (Shift+Tab, `/mode`) keeps it with the session in a worker
thread, and a meta.json that cannot be written is a warning, never the end of the chat."""

from __future__ import annotations

import errno
import json

from actors.events import Notice
from actors.modes import switch_mode
from iota.messages import Message
from iota.sessions.conversation import Conversation
from tests.actors.test_lane import open_lane  # noqa: F401  (the fixture)


async def test_a_switched_mode_is_kept_with_the_session(open_lane, session):  # noqa: F811
    session.append([Message("user", "hi")])
    async with open_lane(Conversation(session=session)) as chat:
        await switch_mode(chat.lane, "plan")
        assert chat.lane.approvals.mode == "plan"
    assert json.loads((session.dir / "meta.json").read_text())["permission_mode"] == "plan"


async def test_a_mode_that_cannot_be_kept_is_a_warning_and_holds(open_lane, session, monkeypatch):  # noqa: F811
    session.append([Message("user", "hi")])

    def full_disk(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    async with open_lane(Conversation(session=session)) as chat:
        monkeypatch.setattr("iota.sessions.bundle.write_atomically", full_disk)
        await switch_mode(chat.lane, "auto-edit")
        assert chat.lane.approvals.mode == "auto-edit"
        warning = (await chat.until(lambda e: isinstance(e, Notice) and e.warning))[-1]
        assert "meta.json not updated" in warning.text and "the mode holds until iota stops" in warning.text
