"""The chat's permission mode: `ask`, `auto-edit`, `plan` (iota.agent.MODES), on Shift+Tab and `/mode`.

    ask         the agent's config as written (the default)
    auto-edit   edit_file / write_file land without asking; commands still follow `auto_run`
    plan        read-only: only tools that change nothing run (reading, searching, asking the
                person); every other call is refused without a question, and the model is told

The mode belongs to the approvals of the one lane (`Lane.approvals.mode`), so it applies from the
next tool call on, also in the middle of a turn. It is the person's choice alone: a chat starts in
`ask`, or in the mode its session was left in (kept in meta.json as `permission_mode`, and said on
the start card), or in `--mode`'s; nothing the model or a project file says changes it. A bot
keeps its config's approvals the same way, unless the person switches its mode in the chat.

Going into plan mode or out of it puts a notice before the next message (a job on the lane, after
whatever runs), so the model knows whether it is planning.
"""

from __future__ import annotations

from functools import partial

import trio

from actors.events import Hint
from actors.lane import JobNote, Lane
from iota.errors import SessionError
from iota.sessions.bundle import Session
from iota.tools.modes import ASK, MODE_MEANINGS, MODES, PLAN, PLAN_NOTICE

MODE_HELP = "the permission mode (Shift+Tab cycles it): /mode [ask|auto-edit|plan]"
META_KEY = "permission_mode"
HINT_SECONDS = 3.0
PLAN_OFF = "The person left plan mode (the mode is now {mode}): changes can be made again as the config allows."


def next_mode(mode: str) -> str:
    return MODES[(MODES.index(mode) + 1) % len(MODES)] if mode in MODES else ASK


async def switch_mode(lane: Lane, mode: str) -> None:
    """Set the mode the person chose, show it, tell the model when planning starts or stops, and
    keep it with the session (in a worker thread: meta.json is fsynced; a failed write is a
    warning, the mode holds for this run)."""
    before = lane.approvals.mode
    lane.approvals.mode = mode
    lane.show_status()
    lane.emit(Hint(f"mode: {mode} — {MODE_MEANINGS[mode]} (Shift+Tab: next)", HINT_SECONDS))
    if (before == PLAN) != (mode == PLAN):
        lane.inbox.put(JobNote(PLAN_NOTICE if mode == PLAN else PLAN_OFF.format(mode=mode)))
    session = lane.conversation.session
    if session is not None:
        try:
            await trio.to_thread.run_sync(partial(keep_mode, session, mode))
        except SessionError as error:
            lane.notice(f"{error}; the mode holds until iota stops", warning=True)


def keep_mode(session: Session, mode: str) -> None:
    """Keep `mode` in the session's meta.json (blocking I/O)."""
    session.update_meta(touch=False, **{META_KEY: mode})


def saved_mode(meta: dict | None) -> str:
    """The mode a session was left in (`ask` when none, or one iota does not know)."""
    mode = (meta or {}).get(META_KEY)
    return mode if mode in MODES else ASK


def card_line(mode: str) -> str | None:
    """What the start card says of a mode other than `ask`."""
    return None if mode == ASK else f"mode {mode}: {MODE_MEANINGS[mode]} (Shift+Tab or /mode to change)"


def starting_mode(mode: str):
    """A lane `on_start` hook: the chat starts in `mode` (`--mode`'s, else the one its session was
    left in; see ui.chat_parts)."""

    def start(lane: Lane) -> None:
        lane.approvals.mode = mode
        lane.show_status()

    return start


async def mode_command(lane: Lane, argument: str) -> None:
    """`/mode`: the modes, the current one marked; `/mode <name>` switches to it."""
    wanted = argument.strip().lower()
    if not wanted:
        rows = [f"{'❯' if mode == lane.approvals.mode else ' '} {mode:9}  {MODE_MEANINGS[mode]}" for mode in MODES]
        lane.notice("\n".join(["Permission mode (Shift+Tab cycles, /mode <name> sets):", *rows]))
    elif wanted not in MODES:
        lane.notice(f"unknown mode {argument.strip()!r}: use one of {', '.join(MODES)}", warning=True)
    else:
        await switch_mode(lane, wanted)
