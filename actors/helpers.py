"""Background helpers in the chat (`delegate` with `background: true`, iota.delegation): how their
results reach the conversation, and how a bot is kept aware of them.

    notice on the job channel ──► deliver(): a dim line for the person, and
                                   in a bot:   a quiet turn, so the model reads the result and acts on it
                                   otherwise, or cancelled (Ctrl+C, leaving): a notice kept in the
                                               conversation (as a shell job's), read with the next message
    before each message of a bot ──► open_helpers_notice(): the helpers still running or whose result
                                   the model has not read yet, as seed 002 lists open works

The helpers themselves live in the toolbox (`toolbox.helpers`): leaving the chat cancels them,
and Ctrl+C cancels them too (Lane.interrupt).
"""

from __future__ import annotations

from functools import partial

from actors.lane import JobNote, Lane, QuietTurn
from iota.delegation import HelperNotice
from iota.sessions.conversation import notice

OPEN_MARK = "[helpers] "


def deliver(lane: Lane, note: HelperNotice) -> None:
    """A background helper ended: tell the person, and give the model its result."""
    lane.notice(note.text.splitlines()[0])
    if lane.setup.mode == "bot" and not note.cancelled:   # a cancelled one waits for the next message
        lane.submit(QuietTurn(f"helper {note.work.id}", partial(_read_result, note)))
    else:
        note.seen()
        lane.submit(JobNote(note.text))


async def _read_result(note: HelperNotice, lane: Lane) -> None:
    note.seen()
    await lane.quiet_turn(note.text)


async def open_helpers_notice(lane: Lane, user) -> None:
    """Before a bot's message: list its open helpers, so it follows up instead of starting the same
    task again. Nothing when there are none."""
    helpers = lane.toolbox.helpers
    works = helpers.open() if helpers is not None else []
    if works:
        lines = "\n".join(f"- {work.line()}" for work in works)
        await lane.keep([notice(f"{OPEN_MARK}Helpers you started in the background, still open (their "
                                f"results come as notices):\n{lines}")])


def helper_lines(lane: Lane) -> list[str]:
    """`/jobs`: a line per running helper."""
    helpers = lane.toolbox.helpers
    return [f"helper {work.line()}" for work in helpers.running()] if helpers is not None else []
