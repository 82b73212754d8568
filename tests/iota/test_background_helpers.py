"""A background helper that fails before its turn starts (an unreadable system_file, an agent
removed while it waited, no sandbox where one is required) is a failed helper with a notice the
model reads, never the end of the chat around it."""

from __future__ import annotations

import math

import trio

from iota.delegation import open_background_helpers
from iota.errors import ConfigError


async def test_a_helper_that_cannot_start_is_a_failed_helper_and_the_chat_goes_on():
    notices_send, notices_receive = trio.open_memory_channel(math.inf)

    async def cannot_start(agent: str, task: str):
        raise ConfigError("agents.reviewer: system_file /nowhere/prompt.md: No such file or directory")

    went_on = False
    async with open_background_helpers(notices_send) as helpers:
        helpers.start("reviewer", "look at the diff", cannot_start)
        with trio.fail_after(5):
            notice = await notices_receive.receive()
        went_on = True
    assert went_on
    assert notice.text.startswith("[background helper h1 (reviewer) failed] error: agents.reviewer: system_file")
    assert not notice.cancelled and notice.work.ended
