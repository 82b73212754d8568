"""The messages that cross between the actors and the face, as frozen dataclasses.

    face ──Submit / Interrupt / CancelInnermost / Leave──► input actor ─► turn lane
    face ──TakeBackQueued / SendQueued / LoadOlder──► input actor ─► the lane's queue, the history
    face ──CycleMode──► input actor ─► the lane's approvals (actors.modes)
    face ──ListFiles──► input actor ─► the project's listing ──ProjectFiles(paths)──► face (the `@` list)
    turn lane ──UserEcho / TextDelta / ToolStarted / ToolProgress / ToolEnded / Notice / ErrorLine / TurnEnded──► face
    turn lane ──Choose(title, options, reply channel, detail)──► face ──index or None──► the waiting job
    turn lane ──ComposerText──► face (the composer's text)
    the ask tools ──Ask(questions, reply channel)──► face ──answers or None──► the waiting tool call
    /memory ──RunInTerminal(argv, reply channel)──► face ──exit status or why not──► the waiting job
    /edit ──ComposerText(text)──► face
    /jobs ──JobsView(pages, reply channel), then JobsUpdate each second──► face ──ids to kill──► /jobs
    status ──Status(...) / Hint(...)──► face
    a bot's tasks ──OpenTasks(rows)──► face (above the composer)
    the history of a saved session ──Older(events, more)──► face (prepended to the transcript)

The face (the urwid app, or a test) only reads these and sends the four inputs; it never
reaches into an actor, and no actor imports urwid.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from iota.providers.base import RetryWait
from iota.tools.ask import Question
from iota.tools.job_view import JobPage

# ---- from the face ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Submit:
    """The person pressed Enter on the composer."""

    text: str


@dataclass(frozen=True)
class Interrupt:
    """Ctrl+C: cancel whatever runs (a turn, a flush, a compaction); at an idle prompt, leave
    with status 130. The input actor decides which, since only it knows what runs."""


@dataclass(frozen=True)
class CancelInnermost:
    """Esc: cancel only the innermost scope (the stream or the running shell call)."""


@dataclass(frozen=True)
class Leave:
    """Ctrl+D (code 0) or a signal: end the chat with this exit status."""

    code: int = 0


@dataclass(frozen=True)
class TakeBackQueued:
    """Up or Esc on an empty composer: the last queued message comes back to be edited."""


@dataclass(frozen=True)
class SendQueued:
    """Enter on an empty composer while the queue is held (after Ctrl+C): send it after all."""


@dataclass(frozen=True)
class LoadOlder:
    """The person scrolled near the top of a resumed session's transcript: the page before it."""


@dataclass(frozen=True)
class Focus:
    """The terminal reported focus in (`ESC [ I`) or out (`ESC [ O`)."""

    focused: bool


@dataclass(frozen=True)
class CycleMode:
    """Shift+Tab: the next permission mode (ask → auto-edit → plan → ask; actors.modes)."""


@dataclass(frozen=True)
class ListFiles:
    """`@` typed in the composer: the project's files, please (answered by `ProjectFiles`)."""


# ---- to the face -----------------------------------------------------------------------------


@dataclass(frozen=True)
class UserEcho:
    text: str


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolStarted:
    call_id: str
    name: str
    target: str           # short: `src/a.py`, the first line of a command
    command: str = ""     # a shell call's whole command, shown in full when the target cuts it
                          # ("" when an approval asks about it: the question shows it whole)


@dataclass(frozen=True)
class ToolEnded:
    call_id: str
    name: str
    output: str           # exactly what the model reads; the transcript shows its first lines
    display: str | None   # the diff of an edit, a memory line: shown in full
    is_error: bool
    more: str | None = None  # shown only when expanded (Ctrl+O): a helper's whole conversation


@dataclass(frozen=True)
class ToolProgress:
    """A running call's live line, replaced by each newer one and gone when the call ends: a
    helper's `reviewer · read_file a.py · 12s` under its `delegate` call."""

    call_id: str
    text: str


@dataclass(frozen=True)
class Notice:
    """A dim line: `MEMORY.md reloaded`, `Resumed after 3 days …`, a background job's end."""

    text: str
    warning: bool = False   # drawn as `⚠ text`


@dataclass(frozen=True)
class ErrorLine:
    text: str


@dataclass(frozen=True)
class TurnEnded:
    interrupted: bool = False
    failed: bool = False


@dataclass(frozen=True)
class Compaction:
    """The older conversation was summarised: one dim line, the summary behind Ctrl+O."""

    count: int            # the conversation messages the summary stands for
    summary: str


@dataclass(frozen=True)
class TakenBack:
    """The queued message `TakeBackQueued` took out of the queue, for the composer."""

    text: str


@dataclass(frozen=True)
class Hint:
    """A short-lived line in place of the status row: `Press Ctrl+C again to exit`."""

    text: str
    seconds: float = 1.0


@dataclass(frozen=True)
class Older:
    """A page of a saved session's history, older than everything shown: its events in order,
    and whether there is more before it."""

    events: tuple = ()
    more: bool = False


@dataclass(frozen=True)
class Status:
    """The status row under the composer."""

    model: str
    context_used: int
    context_window: int
    estimated: bool = False
    running: str = ""            # `Waiting for the model`, `shell ls`, `Compacting context…`; "" when idle
    running_since: float | None = None  # trio.current_time() when it started
    queued: int = 0
    # The background jobs running, oldest first: (id, command name, trio.current_time() it started).
    jobs: tuple[tuple[str, str, float], ...] = ()
    debug: bool = False          # /debug is recording the API round trips
    # The person's queued messages, oldest first, shown dim under the transcript; `held`: Ctrl+C
    # stopped the job, and they wait for Enter (sends them) or Ctrl+C (drops them).
    queued_messages: tuple[str, ...] = ()
    held: bool = False
    # Why records shown are not on disk yet (`disk full`), "" when everything is: the row says
    # `not saved: disk full` until a write succeeds again.
    unsaved: str = ""
    # A provider's wait before it tries again, shown in `running`: the row counts it down from
    # `running_since` (`retrying in 8 s` … `retrying in 1 s`) instead of counting up.
    retry: RetryWait | None = None
    mode: str = "ask"            # the permission mode (actors.modes); the row names any but `ask`


@dataclass(frozen=True)
class OpenTasks:
    """A bot's tasks in progress, one row each (`Migrate CI · step 2/3 · Update workflows`),
    shown above the composer; an empty tuple hides them."""

    rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class Panel:
    """A block of text to show in the transcript: /status, /tools, /skills, the echo of a resume."""

    title: str
    text: str


@dataclass(frozen=True)
class Choose:
    """A select the person answers: the approval prompt (`<label> wants to modify files —
    allow?` or `… wants to run a command — allow?`, with Allow once / Allow for this session /
    Deny), the /session and /model pickers. `detail` is what an approval approves — the whole
    command, the diff — shown in full before the options. `search`, one text per option, makes
    the select a list filtered by what the person types (the session pickers: their titles).
    The chosen option's index goes back on `reply`; Esc sends None. `line`, the last option,
    opens a line to type in when picked (the approval's "Deny and say why"): its answer is
    `(line, what was typed)`."""

    title: str
    options: tuple[str, ...]
    reply: trio.MemorySendChannel = field(compare=False)
    detail: str = ""
    search: tuple[str, ...] = ()
    line: int | None = None


@dataclass(frozen=True)
class Ask:
    """The model's `confirm` or `choose`: questions asked one after another, each a single or a
    multi select, most with an "Other…" row where the person types an answer. One
    `iota.tools.ask.Answer` per question goes back on `reply`; Esc sends None."""

    questions: tuple[Question, ...]
    reply: trio.MemorySendChannel = field(compare=False)


@dataclass(frozen=True)
class ComposerText:
    """Put `text` in the composer, to edit and send again (`/rewind` gives back the message it undid,
    `/edit` what the person wrote in $EDITOR)."""

    text: str


@dataclass(frozen=True)
class RunInTerminal:
    """A program that needs the terminal to itself (`/memory`'s $EDITOR on a memory file): the face
    stops drawing and reading keys, runs it, and takes the terminal back when it exits. Its exit
    status goes back on `reply`, or a str saying why it could not be started."""

    argv: tuple[str, ...]
    reply: trio.MemorySendChannel = field(compare=False)


@dataclass(frozen=True)
class JobsView:
    """`/jobs`: the background jobs, one page each, a Kill tab. The ids to kill go back on `reply`
    (an empty tuple, or None for Esc: nothing); `JobsUpdate`s keep it live meanwhile."""

    jobs: tuple[JobPage, ...]
    reply: trio.MemorySendChannel = field(compare=False)


@dataclass(frozen=True)
class JobsUpdate:
    """The open `/jobs` read again: the jobs running now, how the ones that left ended (by id), or
    `closed` when the command that opened it is gone."""

    jobs: tuple[JobPage, ...] = ()
    ended: tuple[tuple[str, str], ...] = ()
    closed: bool = False


@dataclass(frozen=True)
class ProjectFiles:
    """The project's files as `/file` lists them (root-relative, `/` separated, path order), for
    the composer's `@` list to filter in memory."""

    paths: tuple[str, ...] = field(repr=False)


@dataclass(frozen=True)
class SlashCommands:
    """The commands the composer suggests and completes with Tab: (name, one-line help)."""

    commands: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SessionSaved:
    """`/save` made the chat a saved session: the last screen says how to continue it."""

    session_id: str


@dataclass(frozen=True)
class Card:
    """The start-up card (reference §2.11): `ι> iota  v<version>`, the mode row, the directory,
    then one-line warnings in dim (`⚠ <warning>`)."""

    version: str
    mode: str                       # chat | agent | bot
    session: str                    # `session <id>` | `resumed <id>` | `not saved`
    host: str | None                # herdr | cmux | None
    directory: str
    warnings: tuple[str, ...] = ()
    agent: str = ""                 # the agent's name, first on the mode row
    loaded: tuple[str, ...] = ()    # what agent mode loaded: `2 AGENTS.md`, `3 skills`, `MCP: time`
    fresh: bool = False             # a new conversation (/clear, /session): the transcript starts over
    about: tuple[str, ...] = ()     # a bot's: memory size, open task, next schedule; last activity
    hint: str = ""                  # the keys to start with: `/help · Ctrl+O output · Ctrl+C stop`
