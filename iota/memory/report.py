"""A bot's memory as a person reads it: every file of every layer, what of it goes out here and
why the rest does not. `/memory` in a bot shows it, and so does `iota bots show <name>`.

    global     ~/.iota/memory/00_SYSTEM.md   1.2 / 8 KiB
    inherited  main/MEMORY.md                3.4 / 8 KiB
    own        memory/SOUL.md                0.8 / 8 KiB   include-project: iota
               memory/WORK.md                not sent: exclude-project "web-*" matches web (/work/web)
               MEMORY.md                     2.1 / 8 KiB
    in all 7.5 / 24 KiB
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iota.memory.document import MEMORY_CAP
from iota.memory.kinds import DIRECTORY_KINDS, MEMORY_DIR
from iota.memory.layers import TOTAL_CAP, BotMemory, FileView
from iota.memory.lines import kib

CAP = f"{MEMORY_CAP // 1024} KiB"


def describe(memory: BotMemory) -> str:
    """The table above, from the files as the memory last read them."""
    rows = [(view.source.layer, view.source.label, _state(memory, view)) for view in memory.views()]
    if not rows:
        return "No memory files."
    layer_width = max(len(layer) for layer, _, _ in rows)
    label_width = max(len(label) for _, label, _ in rows)
    lines, shown = [], None
    for layer, label, state in rows:
        lines.append(f"{(layer if layer != shown else '').ljust(layer_width)}  {label.ljust(label_width)}  {state}"
                     .rstrip())
        shown = layer
    lines.append(f"in all {kib(memory.total())} / {TOTAL_CAP // 1024} KiB")
    return "\n".join(lines)


def _state(memory: BotMemory, view: FileView) -> str:
    if view.skipped is not None:
        state = f"not sent: {view.skipped}"
    elif memory.left_out(view):
        state = f"{kib(view.size)} / {CAP}, left out: past the {TOTAL_CAP // 1024} KiB of all memory"
    else:
        state = f"{kib(view.size)} / {CAP}" + (", sent cut short" if view.size > MEMORY_CAP else "")
    return f"{state}   {view.scope}" if view.scope and view.skipped is None else state


@dataclass(frozen=True)
class Editable:
    """A memory file a person may open in their editor: every file the memory has, and the bot's
    own SOUL.md, USER.md and BRIEF.md before they exist (the editor creates them)."""

    label: str
    path: Path
    new: bool = False


def editable(memory: BotMemory) -> list[Editable]:
    files = [Editable(view.source.label, view.source.path) for view in memory.views()]
    known = {file.path for file in files}
    missing = [Editable(f"{MEMORY_DIR}/{kind.name}", memory.bot_dir / MEMORY_DIR / kind.name, new=True)
               for kind in DIRECTORY_KINDS if memory.bot_dir / MEMORY_DIR / kind.name not in known]
    return files + missing
