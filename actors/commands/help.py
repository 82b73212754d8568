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


def help_command(commands: dict):
    """`/help`'s body: the chat's own commands, a row each, then every key."""

    async def show_help(lane: Lane, argument: str) -> None:
        width = max(len(name) for name in commands) + 1
        lines = [f"/{name}".ljust(width) + f"  {_first_clause(help_text)}" for name, (help_text, _) in commands.items()]
        keys = " · ".join(f"{key} {what}" for key, what in KEYS)
        lane.emit(Panel("Commands and keys", "\n".join(lines) + "\n\n" + keys))

    return show_help


def _first_clause(help_text: str) -> str:
    """A command's help without its usage (`…: /save [title]`), cut to one row."""
    text = help_text.split(": /")[0]
    return text if len(text) <= HELP_COLUMNS else text[:HELP_COLUMNS - 1].rstrip() + "…"
