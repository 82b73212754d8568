"""The hosts a chat runs inside, and exactly what each one is sent.

People run several chats side by side and look elsewhere while they work, so the pane, tab or
sidebar shows what each chat is doing. Three hosts can show it, innermost first:

    herdr      a pane in herdr: JSON lines on its Unix socket (the pane's agent state)
    cmux       a surface in cmux: `cmux` commands (a status row keyed `iota`, a loading spinner)
    terminal   always, behind either: OSC 9;4 progress on the tab, an attention ping (OSC 9,
               or kitty's OSC 99, or OSC 777 where only that is read)
    tmux       besides any of them, inside tmux: the pane's title (OSC 2, which tmux takes
               without passthrough) and the pane options @iota_agent and @iota_state

Only the innermost detected host is told anything besides the terminal. Hosts nest, and a pane
inherits the environment of whatever spawned it: a herdr pane carries the `CMUX_SURFACE_ID`
the herdr server was born with, which names some other surface. So herdr is looked for first,
and once found cmux is not even asked.

Everything here is a pure function of the environment or of a state: detection, the lines the
model is told, the herdr requests, the cmux argv lists and the terminal's bytes. Sending them —
off the chat loop, each send bounded — is the notifier actor's job (actors/notifier.py).
"""

from __future__ import annotations

import enum
import json
import shutil
from collections.abc import Mapping
from typing import NamedTuple


class State(enum.Enum):
    """What the chat is doing, as the hosts show it."""

    IDLE = "idle"                 # your move; also after a failed turn
    BUSY = "busy"                 # a turn, a flush or a background job runs
    COMPACTING = "compacting"     # a compaction runs (busy, to every host but tmux and state.json)
    NEEDS_INPUT = "needs-input"   # an approval prompt or a question waits for the person
    ERROR = "error"               # the last turn failed, or the compaction alarm


class PingKind(enum.Enum):
    """Why the person is called back to the chat."""

    NEEDS_INPUT = "needs-input"            # an approval or a question
    TURN_ENDED = "turn-ended"              # the reply is there
    COMPACTION_ALARM = "compaction-alarm"  # `bot <name>: compaction failing — <error>`


# ---- detection -------------------------------------------------------------------------------


class HerdrPane(NamedTuple):
    pane_id: str
    socket_path: str
    workspace_id: str | None = None
    tab_id: str | None = None


class CmuxSurface(NamedTuple):
    surface_id: str
    executable: str   # the `cmux` found on PATH at detection


class Dialect(enum.Enum):
    """How the terminal is asked to show a desktop notification."""

    OSC9 = "osc9"       # iTerm2, WezTerm, Ghostty, herdr, cmux and most others
    OSC99 = "osc99"     # kitty
    OSC777 = "osc777"   # VTE (GNOME Terminal, Tilix, …), foot, urxvt: a title and a body


class Terminal(NamedTuple):
    dialect: Dialect = Dialect.OSC9
    tmux: bool = False   # inside tmux: sequences go out wrapped for its passthrough


class TmuxPane(NamedTuple):
    pane_id: str       # $TMUX_PANE: `%3`, unique on its server
    socket_path: str   # the server's socket: the first of $TMUX's comma-separated fields


class Host(NamedTuple):
    """The innermost host (herdr, cmux, or neither) and the terminal always behind it; and the
    tmux pane when there is one. tmux is told besides the others rather than instead of them:
    cmux's terminal often runs tmux, and the pane title and options cost nothing to a host that
    does not read them."""

    herdr: HerdrPane | None = None
    cmux: CmuxSurface | None = None
    terminal: Terminal = Terminal()
    tmux: TmuxPane | None = None

    @property
    def name(self) -> str | None:
        """`herdr`, `cmux`, or None in a plain terminal (what the start-up card's mode row ends with)."""
        if self.herdr is not None:
            return "herdr"
        if self.cmux is not None:
            return "cmux"
        return None


def detect(environ: Mapping[str, str]) -> Host:
    """The host this process runs inside, read from its environment. cmux counts only when its
    CLI is on the environment's PATH, since that CLI is how cmux is told anything."""

    def value(name: str) -> str | None:
        return environ.get(name) or None   # set but empty is not set

    herdr = cmux = None
    if value("HERDR_ENV") == "1" and value("HERDR_PANE_ID") and value("HERDR_SOCKET_PATH"):
        herdr = HerdrPane(environ["HERDR_PANE_ID"], environ["HERDR_SOCKET_PATH"],
                          value("HERDR_WORKSPACE_ID"), value("HERDR_TAB_ID"))
    elif value("CMUX_SURFACE_ID"):
        executable = shutil.which("cmux", path=environ.get("PATH", ""))
        if executable is not None:
            cmux = CmuxSurface(environ["CMUX_SURFACE_ID"], executable)
    return Host(herdr, cmux, _terminal(environ, inside_a_host=herdr is not None or cmux is not None),
                _tmux_pane(environ))


def _tmux_pane(environ: Mapping[str, str]) -> TmuxPane | None:
    """The tmux pane from `$TMUX` (`socket,server pid,session`) and `$TMUX_PANE`, which tmux sets
    for every process it starts in a pane."""
    socket_path = (environ.get("TMUX") or "").split(",")[0]
    pane_id = environ.get("TMUX_PANE") or ""
    if not socket_path or not pane_id.startswith("%"):
        return None
    return TmuxPane(pane_id, socket_path)


def _terminal(environ: Mapping[str, str], *, inside_a_host: bool) -> Terminal:
    """The terminal's notification dialect: kitty's OSC 99; OSC 777 where only that is read (VTE
    says so with VTE_VERSION, which also survives tmux; foot and urxvt with their TERM); else
    OSC 9. WezTerm and Ghostty read both 9 and 777 and name themselves in TERM_PROGRAM: OSC 9.
    herdr's and cmux's own emulators read OSC 9, and a KITTY_WINDOW_ID or VTE_VERSION seen inside
    them was inherited from the window they were started from, not the terminal we write to."""
    term = environ.get("TERM", "")
    kitty = bool(environ.get("KITTY_WINDOW_ID")) or term == "xterm-kitty"
    osc9_program = environ.get("TERM_PROGRAM", "") in ("iTerm.app", "WezTerm", "ghostty")
    osc777 = bool(environ.get("VTE_VERSION")) or term.startswith(("foot", "rxvt-unicode"))
    if inside_a_host or not (kitty or osc777) or osc9_program:
        dialect = Dialect.OSC9
    else:
        dialect = Dialect.OSC99 if kitty else Dialect.OSC777
    return Terminal(dialect, tmux=bool(environ.get("TMUX")))


def host_lines(host: Host) -> list[str]:
    """What the model is told at the end of `<environment>`: the innermost host and the ids its
    CLI takes. Nothing in a plain terminal."""
    if host.herdr is not None:
        pane = host.herdr
        lines = ["host: herdr", f"herdr pane: {pane.pane_id}"]
        if pane.workspace_id:
            lines.append(f"herdr workspace: {pane.workspace_id}")
        if pane.tab_id:
            lines.append(f"herdr tab: {pane.tab_id}")
        return lines
    if host.cmux is not None:
        return ["host: cmux", f"cmux surface: {host.cmux.surface_id}"]
    return []


# ---- herdr -----------------------------------------------------------------------------------
#
# One request per connection: one JSON object on one line, answered by one line,
# `{"id": …, "result": {…}}` or `{"id": …, "error": {"code": …, "message": …}}`. The first report
# makes iota the pane's lifecycle authority; a report whose `seq` is not higher than the last
# one is ignored, so the notifier numbers them upwards from its start time in nanoseconds and a
# restarted iota in the same pane never repeats a number.

HERDR_SOURCE = "iota"   # both `source` (whose reports these are) and `agent` (the label shown)

_LIFECYCLE = {
    State.BUSY: "working",
    State.COMPACTING: "working",
    State.NEEDS_INPUT: "blocked",
    # An error ends the turn and the prompt is back: not waiting on a decision, so not blocked.
    State.IDLE: "idle",
    State.ERROR: "idle",
}


def herdr_lifecycle(state: State) -> str:
    return _LIFECYCLE[state]


def herdr_state_report(pane: HerdrPane, state: State, *, seq: int) -> dict:
    """`pane.report_agent`. No `message`: herdr words its own notification from the state."""
    return _herdr_request("pane.report_agent", pane, seq, state=herdr_lifecycle(state))


def herdr_session_report(pane: HerdrPane, session_id: str, session_path: str, *, seq: int) -> dict:
    """`pane.report_agent_session`: the session the chat writes into, and its bundle directory."""
    return _herdr_request("pane.report_agent_session", pane, seq,
                          agent_session_id=session_id, agent_session_path=session_path)


def herdr_release(pane: HerdrPane, *, seq: int) -> dict:
    """`pane.release_agent`, at exit: herdr goes back to reading the pane's screen."""
    return _herdr_request("pane.release_agent", pane, seq)


def herdr_notification(text: str, *, seq: int) -> dict:
    """`notification.show`, for the compaction alarm only: herdr words every other notification
    itself from the reported state, but "compaction failing" is not a state it knows."""
    title, _, body = text.partition(": ")
    return {"id": f"{HERDR_SOURCE}:{seq}", "method": "notification.show",
            "params": {"title": title[:80], "body": (body or text)[:240], "sound": "request"}}


def _herdr_request(method: str, pane: HerdrPane, seq: int, **params: str) -> dict:
    return {
        "id": f"{HERDR_SOURCE}:{seq}",
        "method": method,
        "params": {"pane_id": pane.pane_id, "source": HERDR_SOURCE, "agent": HERDR_SOURCE,
                   **params, "seq": seq},
    }


def herdr_line(request: dict) -> bytes:
    return json.dumps(request, ensure_ascii=False).encode() + b"\n"


def herdr_reply_error(reply: bytes) -> str | None:
    """None when herdr answered with a result; otherwise what went wrong, for the debug log."""
    try:
        answer = json.loads(reply)
    except ValueError:
        return f"not a JSON reply: {reply[:200]!r}"
    if not isinstance(answer, dict):
        return f"not a JSON object: {reply[:200]!r}"
    if "result" in answer:
        return None
    error = answer.get("error")
    if isinstance(error, dict):
        return f"{error.get('code')}: {error.get('message')}"
    return f"neither a result nor an error: {reply[:200]!r}"


# ---- cmux ------------------------------------------------------------------------------------
#
# A status row keyed `iota` and the workspace's loading spinner. The icons and colours are the
# ones cmux's own Claude Code hooks use, so iota's row reads like the built-in agents'. Every
# state but busy turns the spinner off first: a chat waiting on the person is not loading.

CMUX_KEY = "iota"
_SPINNER_ON = ["workspace", "loading", "on", "--id", CMUX_KEY]
_SPINNER_OFF = ["workspace", "loading", "off", "--id", CMUX_KEY]

_CMUX_STATUS = {
    State.BUSY: ["set-status", CMUX_KEY, "Running", "--icon", "bolt.fill", "--color", "#4C8DFF"],
    State.COMPACTING: ["set-status", CMUX_KEY, "Running", "--icon", "bolt.fill", "--color", "#4C8DFF"],
    State.NEEDS_INPUT: ["set-status", CMUX_KEY, "Needs input", "--icon", "bell.fill"],
    State.ERROR: ["set-status", CMUX_KEY, "Failed", "--icon", "exclamationmark.triangle.fill",
                  "--color", "#FF3B30"],
    State.IDLE: ["set-status", CMUX_KEY, "Idle", "--icon", "pause.circle.fill", "--color", "#8E8E93"],
}


def cmux_commands(state: State) -> list[list[str]]:
    """The `cmux` argv lists (without the executable) that show a state, run in order."""
    if state in (State.BUSY, State.COMPACTING):
        return [list(_CMUX_STATUS[state]), list(_SPINNER_ON)]
    return [list(_SPINNER_OFF), list(_CMUX_STATUS[state])]


def cmux_exit_commands() -> list[list[str]]:
    """What clears iota from the sidebar at exit: the row and the spinner outlive the process."""
    return [list(_SPINNER_OFF), ["clear-status", CMUX_KEY]]


# ---- the terminal ----------------------------------------------------------------------------
#
# Progress on the tab (OSC 9;4) for every state, always. The attention ping (OSC 9, OSC 99 for
# kitty, OSC 777 for VTE, foot and urxvt) is followed by a plain BEL, which is what rings: terminals listen to one or the
# other. Whether to ping at all (focus, `notify:`) is the notifier's decision, not these bytes'.
# Focus reporting (DEC mode 1004) makes the terminal send FOCUS_IN / FOCUS_OUT as input, which
# the app recognises and passes on to the notifier.

BEL = b"\x07"
FOCUS_REPORTING_ON = b"\x1b[?1004h"
FOCUS_REPORTING_OFF = b"\x1b[?1004l"
FOCUS_IN = b"\x1b[I"
FOCUS_OUT = b"\x1b[O"

_PROGRESS = {
    State.BUSY: b"\x1b]9;4;3\x07",          # indeterminate
    State.COMPACTING: b"\x1b]9;4;3\x07",
    State.NEEDS_INPUT: b"\x1b]9;4;4;100\x07",  # warning, a full bar
    State.ERROR: b"\x1b]9;4;2;100\x07",     # error, a full bar
    State.IDLE: b"\x1b]9;4;0\x07",          # no bar
}


def progress(state: State, terminal: Terminal) -> bytes:
    return passthrough(_PROGRESS[state], terminal)


def attention(text: str, terminal: Terminal) -> bytes:
    """The attention ping carrying `text`, then the BEL that rings. OSC 777 has a title and a body:
    `iota: the reply` is titled `iota`, `bot coder: compaction failing — …` `bot coder` (a `;`
    in the title would end it, so it becomes a `,`)."""
    body = sanitize(text)
    if terminal.dialect is Dialect.OSC99:
        sequence = f"\x1b]99;;{body}\x1b\\"
    elif terminal.dialect is Dialect.OSC777:
        title, _, rest = body.partition(": ")
        title, rest = (title, rest) if rest else ("iota", body)
        sequence = f"\x1b]777;notify;{title.replace(';', ',')};{rest}\x07"
    else:
        sequence = f"\x1b]9;{body}\x07"
    return passthrough(sequence.encode(), terminal) + BEL


def sanitize(text: str) -> str:
    """Text that cannot end or extend the sequence it rides in: control characters go (ESC, BEL
    and the 8-bit ST 0x9C by name, and with them every other C0 and C1 control, any of which can
    cut an OSC short), line breaks and tabs become spaces, and a leading `<digit>;` gets a space
    before it so that `4;…` is not read as a progress report."""
    kept = []
    for character in text:
        if character in "\n\r\t":
            kept.append(" ")
        elif not _is_control(character):
            kept.append(character)
    clean = "".join(kept)
    if len(clean) >= 2 and clean[0].isascii() and clean[0].isdigit() and clean[1] == ";":
        clean = " " + clean
    return clean


def _is_control(character: str) -> bool:
    code = ord(character)
    return code < 0x20 or 0x7F <= code <= 0x9F


def passthrough(sequence: bytes, terminal: Terminal) -> bytes:
    """`sequence` as it must be written to reach the terminal: inside tmux, wrapped so that tmux
    passes it on (`set -g allow-passthrough on`, tmux ≥ 3.3) instead of swallowing it."""
    if not terminal.tmux:
        return sequence
    return b"\x1bPtmux;" + sequence.replace(b"\x1b", b"\x1b\x1b") + b"\x1b\\"


# ---- tmux ------------------------------------------------------------------------------------
#
# tmux drops the sequences above unless the person turned `allow-passthrough` on, but it reads
# OSC 2 itself: the pane's title, which `pane-border-format` and `status-right` can show as
# `#{pane_title}`. Pane options (`@iota_agent`, `@iota_state`) say the same to a format without
# parsing a title: `#{@iota_state}`. Both are the pane's own; no option of the person's tmux is
# touched. The bell that rings after an attention ping needs no passthrough either: tmux turns it
# into the window's bell flag.

# What each state is called where people read it: the pane title, @iota_state, state.json.
STATE_WORDS = {
    State.IDLE: "idle",
    State.BUSY: "working",
    State.COMPACTING: "compacting",
    State.NEEDS_INPUT: "waiting for you",
    State.ERROR: "failing",
}


def pane_title(agent: str, state: State) -> str:
    return f"ι {agent} · {STATE_WORDS[state]}"


def title_sequence(title: str) -> bytes:
    """OSC 2: set the window (in tmux, the pane) title."""
    return f"\x1b]2;{sanitize(title)}\x07".encode()


def tmux_argv(pane: TmuxPane, *arguments: str) -> list[str]:
    """A `tmux` command line on the pane's own server, whatever `-L` or `-S` it was started with."""
    return ["tmux", "-S", pane.socket_path, *arguments]


def tmux_title_query(pane: TmuxPane) -> list[str]:
    """Prints the pane's title now, to put back at exit."""
    return tmux_argv(pane, "display-message", "-p", "-t", pane.pane_id, "#{pane_title}")


def tmux_set_options(pane: TmuxPane, agent: str, state: State) -> list[str]:
    """Both pane options in one tmux call (`;` separates commands)."""
    return tmux_argv(pane, "set-option", "-p", "-t", pane.pane_id, "@iota_agent", agent, ";",
                     "set-option", "-p", "-t", pane.pane_id, "@iota_state", STATE_WORDS[state])


def tmux_unset_options(pane: TmuxPane) -> list[str]:
    return tmux_argv(pane, "set-option", "-p", "-u", "-t", pane.pane_id, "@iota_agent", ";",
                     "set-option", "-p", "-u", "-t", pane.pane_id, "@iota_state")
