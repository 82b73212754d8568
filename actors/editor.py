"""The person's editor, with the terminal handed to it: `/memory` opens a memory file in it, `/edit`
the composer's text, `/model`'s System tab the instructions.

    if await run_editor(lane, path):          # False: it could not start, or did not exit cleanly
        text = path.read_text()

The editor is $VISUAL, else $EDITOR, else vi, split as a shell would split it. The face stops
drawing while it runs (actors.events.RunInTerminal) and redraws when it exits; what went wrong —
no such editor, an exit status, a signal — is one warning line in the transcript.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import tempfile
from pathlib import Path

import trio

from actors.events import RunInTerminal
from actors.lane import Lane


def editor_command() -> list[str]:
    """The person's editor: $VISUAL, else $EDITOR, else vi, split as a shell would split it."""
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


async def run_editor(lane: Lane, path: Path) -> bool:
    """Open `path` in the editor with the terminal handed over; True when it exited with status 0."""
    try:
        command = [*editor_command(), str(path)]
    except ValueError as error:  # shlex: an unclosed quote
        lane.notice(f"cannot read $EDITOR: {error}", warning=True)
        return False
    reply_send, reply_receive = trio.open_memory_channel(1)
    lane.emit(RunInTerminal(tuple(command), reply_send))
    outcome = await reply_receive.receive()
    if isinstance(outcome, str):
        lane.notice(f"cannot start the editor ({shlex.join(command[:-1])}): {outcome}; set $EDITOR", warning=True)
    elif outcome < 0:  # ended by a signal: Ctrl+C in an editor that does not catch it
        lane.notice(f"the editor was stopped by {signal.Signals(-outcome).name}", warning=True)
    elif outcome != 0:
        lane.notice(f"the editor exited with status {outcome}", warning=True)
    return outcome == 0


async def edit_text(lane: Lane, text: str, name: str) -> str | None:
    """`text` as the person left it in the editor, or None when the editor failed (the warning is
    shown). The file is `name` in a private temporary directory, removed afterwards: nothing of
    the draft stays on disk."""
    directory = Path(tempfile.mkdtemp(prefix="iota-edit-"))
    try:
        path = directory / name
        path.write_text(text, encoding="utf-8")
        if not await run_editor(lane, path):
            return None
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            lane.notice(f"cannot read back {path.name}: {error.strerror or error}", warning=True)
            return None
    finally:
        shutil.rmtree(directory, ignore_errors=True)
