"""The slash commands: each one a job on the lane, so it runs after what is queued before it and
Ctrl+C cancels it like a turn. `registry` is the table the input actor looks a `/word` up in;
each command with a body of any size has a module of its own (`/file`, `/edit`, `/jobs`,
`/debug`, `/skills <name>`, `/help`, `/tools`, `/model`'s tabs, the conversation's and the
session's commands, a bot's work: `/tasks`, `/schedules`, `/notes`).

Uses the other actors (the lane, the compactor, the editor) and `iota`; never `ui`.

The package itself imports nothing: the chat's screen reads a `/word` with `command_and_argument`
before it has loaded the lane and the rest of the engine (ui.widgets.layout).
"""


def command_and_argument(text: str) -> tuple[str, str]:
    """`/name` and its argument: the first word, up to a space or a new line, and the rest (a
    draft for `/edit` keeps its lines)."""
    name, *rest = text.split(maxsplit=1) or [""]
    return name, rest[0].strip() if rest else ""
