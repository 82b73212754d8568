"""`/edit [text]`: write the message in $VISUAL or $EDITOR, then go on with it in the composer.

The editor opens on the composer's text — what follows `/edit` on the line, as typed there (a
longer draft: `/edit`, Ctrl+J, the draft) — with the terminal handed to it; when it exits with
status 0, what it left is put back in the composer, to be read over and sent with Enter, or
edited further. Nothing is sent by itself. An editor that fails leaves the composer as it was.
"""

from __future__ import annotations

from actors.editor import edit_text
from actors.events import ComposerText
from actors.lane import Lane

EDIT_HELP = "write your message in $EDITOR, then go on with it here: /edit [text]"


async def edit_message(lane: Lane, draft: str) -> None:
    edited = await edit_text(lane, draft, "message.md")
    if edited is None:
        if draft:
            lane.emit(ComposerText(draft))
        return
    lane.emit(ComposerText(edited.rstrip("\n")))
