"""`/help`: every command of the chat, a row each, and every key — all of it on one screen."""

from __future__ import annotations

from actors.events import Panel
from actors.lane import Lane


# Every key of the chat, for /help: (keys, what they do), said short so all of it fits one screen.
KEYS = (
    ("Enter", "send (queued while a reply streams)"),
    ("Ctrl+J / Alt+Enter / Shift+Enter", "new line"),
    ("Up / Down", "recall what was sent; Up on an empty composer takes a queued message back"),
    ("Esc", "cancel the stream or shell call; take a queued message back"),
    ("Ctrl+C", "clear the draft, or stop what runs (the queue waits); twice at an empty prompt: leave"),
    ("Ctrl+O", "tool output and summaries in full"),
    ("PgUp / PgDn / wheel", "scroll"),
    ("Tab", "complete a command"),
    ("Ctrl+D", "leave"),
    ("Ctrl+Z", "suspend"),
)
HELP_COLUMNS = 72  # a command's help is cut to this, so each command takes one row
# What a bot refuses (it keeps one conversation, saved under its name): kept as commands so that
# typing one says why, but not listed by /help there.
BOT_REFUSES = ("clear", "new", "save", "rename", "fork")
# /help in agent mode: where the long-running kind of agent is.
BOTS_LINE = ("Bots: an agent with `mode: bot` keeps one conversation that never ends, a memory it "
             "maintains, tasks and schedules — `iota run <bot>`; see docs/bots.md.")


def listed_commands(commands: dict, mode: str) -> dict:
    """The commands /help lists in `mode`: only those that work there."""
    return {name: entry for name, entry in commands.items() if not (mode == "bot" and name in BOT_REFUSES)}


def help_command(commands: dict, mode: str = ""):
    """`/help`'s body: the chat's own commands that work in `mode`, a row each, then every key
    (and, in agent mode, a line on bots)."""

    async def show_help(lane: Lane, argument: str) -> None:
        listed = listed_commands(commands, mode)
        width = max(len(name) for name in listed) + 1
        lines = [f"/{name}".ljust(width) + f"  {_first_clause(help_text)}" for name, (help_text, _) in listed.items()]
        keys = " · ".join(f"{key} {what}" for key, what in KEYS)
        bots = f"\n\n{BOTS_LINE}" if mode == "agent" else ""
        lane.emit(Panel("Commands and keys", "\n".join(lines) + "\n\n" + keys + bots))

    return show_help


def _first_clause(help_text: str) -> str:
    """A command's help without its usage (`…: /save [title]`), cut to one row."""
    text = help_text.split(": /")[0]
    return text if len(text) <= HELP_COLUMNS else text[:HELP_COLUMNS - 1].rstrip() + "…"
