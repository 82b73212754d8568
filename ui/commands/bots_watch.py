"""`iota bots watch`: every bot on one live screen, and a jump to the one that needs you.

    bot       project        state            since  task                  next schedule
  ▸ coder     ~/src/app      working          12s    migrate db 2/5        Tue 09:00
    reviewer  ~/src/app      waiting for you  3m
    helper                   not running

What it shows comes from the bots' state files (iota.bots.state_file). The screen looks again
once a second — a `stat` of each state file, reading only those that changed, and the lock probe
that tells a live bot from a killed one's stale file — and draws only when a row changed. No
file-watching library is needed at that rate: a bot killed with SIGKILL changes no file, so a
look at the locks would be needed anyway, and ten bots cost ten stats and ten probes a second.

Enter on a bot inside tmux shows its pane (its window selected, the client switched to its
session when it is another); a bot in no pane of this tmux server — or a watch outside tmux —
ends the screen and prints the command that opens it. q or Esc leaves.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from iota.text import tilde
from iota.errors import EXIT_OK

REFRESH_SECONDS = 1.0
COLUMNS = (("bot", 10), ("project", 22), ("state", 16), ("since", 6), ("task", 26), ("next schedule", 14))


@dataclass(frozen=True)
class Row:
    name: str
    cells: tuple[str, ...]
    state: object   # the BotState, or None when the bot is not running


class BotStates:
    """The bots' states, looked at again on `refresh()`; each state file is read again only when
    its stat changed, and believed only while its pid holds the bot's lock."""

    def __init__(self, loaded) -> None:
        self._loaded = loaded
        self._seen: dict[str, tuple[tuple[int, int], object]] = {}

    def refresh(self) -> list[Row]:
        from iota.bots import roster
        from iota.bots.bot import LOCK_NAME, bot_dir
        from iota.bots.state_file import STATE_NAME, read_state

        rows = []
        for name in roster.bot_names(self._loaded):
            directory = bot_dir(name)
            try:
                info = (directory / STATE_NAME).stat()
                stamp = (info.st_mtime_ns, info.st_size)
            except OSError:
                stamp = None
            state = None
            if stamp is not None:
                cached = self._seen.get(name)
                if cached is not None and cached[0] == stamp:
                    state = cached[1]
                    running, holder = roster.lock_holder(directory / LOCK_NAME)
                    if state is not None and not (running and holder == state.pid):
                        state = None
                else:
                    state = read_state(directory)
                    self._seen[name] = (stamp, state)
            rows.append(Row(name, cells(name, state), state))
        return rows


def cells(name: str, state) -> tuple[str, ...]:
    from iota.bots.state_file import seconds_since, short_duration

    if state is None:
        return (name, "", "not running", "", "", "")
    task = (state.task or "") + (f" {state.step}" if state.task and state.step else "")
    return (name, _home_relative(state.project), state.state, short_duration(seconds_since(state.since)),
            task, _schedule(state.next_schedule))


def format_row(values: tuple[str, ...]) -> str:
    return "  ".join(_fit(value, width) for value, (_, width) in zip(values, COLUMNS)).rstrip()


def jump_command(state, *, here: str | None) -> tuple[list[list[str]], str | None]:
    """How to show the bot's pane: the tmux commands to run from here (inside tmux, same server),
    or the command to print for the person. `here` is this process's `$TMUX`."""
    from iota.bots.state_file import BotState

    assert isinstance(state, BotState)
    if state.tmux_pane is None or state.tmux_socket is None:
        return [], (f"{state.agent} runs outside tmux (pid {state.pid}, in {state.project}); "
                    "it is in the terminal it was started from")
    pane, socket = state.tmux_pane, state.tmux_socket
    if here and here.split(",")[0] == socket:
        base = ["tmux", "-S", socket]
        return [[*base, "select-window", "-t", pane, ";", "select-pane", "-t", pane],
                [*base, "switch-client", "-t", pane]], None
    return [], f"tmux -S {socket} attach-session -t {pane}"


def watch(loaded) -> int:
    import urwid

    states = BotStates(loaded)
    walker = urwid.SimpleFocusListWalker([])
    header = urwid.AttrMap(urwid.Text(format_row(tuple(title for title, _ in COLUMNS))), "header")
    footer = urwid.Text("Enter: go to the bot   q: quit")
    frame = urwid.Frame(urwid.ListBox(walker), header=urwid.Padding(header, left=2), footer=footer)
    shown: list[Row] = []
    printed: list[str] = []

    def redraw(rows: list[Row]) -> None:
        focus = walker.focus if walker else 0
        walker[:] = [urwid.AttrMap(urwid.SelectableIcon("  " + format_row(row.cells), 0), None, "focus")
                     for row in rows]
        if walker:
            walker.set_focus(min(focus or 0, len(walker) - 1))
        shown[:] = rows

    def refresh(loop, _data=None) -> None:
        rows = states.refresh()
        if [row.cells for row in rows] != [row.cells for row in shown]:
            redraw(rows)
        loop.set_alarm_in(REFRESH_SECONDS, refresh)

    def keys(key) -> None:
        if key in ("q", "Q", "esc"):
            raise urwid.ExitMainLoop()
        if key == "enter" and shown and walker.focus is not None:
            row = shown[walker.focus]
            if row.state is None:
                footer.set_text(f"{row.name} is not running: iota run {row.name}")
                return
            commands, text = jump_command(row.state, here=os.environ.get("TMUX"))
            for argv in commands:
                subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False, timeout=5)
            if text is not None:
                printed.append(text)
                raise urwid.ExitMainLoop()

    redraw(states.refresh())
    loop = urwid.MainLoop(frame, [("header", "bold", ""), ("focus", "standout", "")], unhandled_input=keys,
                          handle_mouse=False)
    loop.set_alarm_in(REFRESH_SECONDS, refresh)
    loop.run()
    for text in printed:
        print(text)
    return EXIT_OK


def _fit(value: str, width: int) -> str:
    return value.ljust(width) if len(value) <= width else value[:width - 1] + "…"


def _home_relative(path: str) -> str:
    """`~/src/app`; a path too long for its column keeps its end (`…ts/project`), the part that
    tells projects apart."""
    short = tilde(path, str(Path.home()))
    width = dict(COLUMNS)["project"]
    return short if len(short) <= width else "…" + short[-(width - 1):]


def _schedule(stamp: str | None) -> str:
    if not stamp:
        return ""
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%a %H:%M")
    except ValueError:
        return ""
