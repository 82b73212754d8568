"""`/model`'s Top P and System tabs, and what every `/model` change leaves in meta.json.

    Top P    nucleus sampling for the rest of this process, or `default` (left out of requests)
    System   the system prompt exactly as the next request sends it (the harness, your
             instructions, AGENTS.md, skills, a bot's memory), then, if you like, your
             instructions in $EDITOR for the rest of this process: the config and the session's
             stored system prompt are not changed, and a resume starts from them again

A value set here is the person's own (iota.config.params: source `user`): a later switch to a
model whose config says nothing of it keeps it. Every change is written to the session's
meta.json with its source, so a resume runs under what the chat last ran under.
"""

from __future__ import annotations

from functools import partial

import trio

from actors.editor import edit_text
from actors.events import Panel
from actors.lane import Lane

TOP_PS = (None, 0.1, 0.5, 0.9, 0.95, 1.0)
SYSTEM_OPTIONS = ("Edit the instructions in $EDITOR (for this process)", "Close")


def top_p_label(value: float | None) -> str:
    return "default" if value is None else str(value)


async def choose_top_p(lane: Lane) -> float | None | bool:
    """The top_p picked, or False when the person pressed Esc."""
    index = await lane.ask("Top P", tuple(top_p_label(value) for value in TOP_PS))
    return False if index is None else TOP_PS[index]


async def show_system(lane: Lane) -> None:
    setup = lane.setup
    lane.emit(Panel("System prompt", setup.system_prompt() or "(empty: no system prompt is sent)"))
    if await lane.ask("System prompt", SYSTEM_OPTIONS) != 0:
        return
    edited = await edit_text(lane, setup.instructions, "instructions.md")
    if edited is None or edited.rstrip("\n") == setup.instructions.rstrip("\n"):
        return
    setup.instructions = edited.rstrip("\n")
    lane.notice("Instructions changed for this process (the config and the session are not changed)")


async def stamp_model(lane: Lane) -> None:
    """Write the model and its layered values, with their sources, to the session's meta.json."""
    session = lane.conversation.session
    if session is None:
        return
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(partial(session.update_meta, touch=False, **lane.setup.model.meta_fields()))
