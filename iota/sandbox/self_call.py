"""Which shell command lines are iota calling itself, and what such a call may do.

A sandboxed shell lets a few of iota's own commands out of the sandbox, because what they do
needs the outside: a child agent reaches its model's API, `iota mcp add` writes ~/.iota.yaml.
Only these, written out in full, are self-calls:

    iota run [<agent>] -m <text> [-M <model>] [-s <text>] [--max-turns <n>] [--output-format <f>]
    iota list [agents|models|providers] [<agent>]
    iota config check | iota config path
    iota mcp list | iota mcp get <name>
    iota version

and these, which change iota's configuration and so are asked about every time, whatever
`auto_run` says:

    iota mcp add|remove|login|logout …
    iota config init

Anything else that starts iota — a `-c FILE` or any other flag before the subcommand, `iota
resume`, `iota list sessions`, `--mcp`, an abbreviated or unknown flag, a chat without `-m` — is an ordinary command
and stays inside the sandbox.

Reading the line. A self-call must be one simple command in a small, regular part of bash:
words separated by spaces or tabs, each word made of plain characters (letters, digits and
`_-./:=@%+,`), 'single-quoted' text, and "double-quoted" text without `$`, a backtick or a
backslash. Within that part every line means the same to bash and to `shlex.split`, so shlex
gives the words. Everything outside it is not read as a self-call at all: `$(…)`, `$VAR`,
backticks, globs, braces, `~`, a backslash, redirections (`>`, `<`, `>>`, here-docs), `;`, `&`,
`&&`, `|`, a newline or a control character outside quotes, a comment, a prefix such as
`FOO=1 iota`, `exec iota` or `command iota`. And a self-call is not handed to bash: its words are
executed directly, `[iota, *arguments]`, so what runs outside the sandbox is exactly what was
checked here, whatever bash would have made of the line.

The first word is iota when it resolves (on PATH, or as a path from the call's directory) to the
running iota's executable, whatever it is called: a symlink to it is iota, a copy is not (a copy
runs inside the sandbox like any program). And there are no self-calls at all when iota's own
code could have been changed by a sandboxed command — iota installed in a virtualenv inside the
project, say: `writable_code` finds that, and the shell then treats iota like any program.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import site
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iota.sandbox.confinement import is_inside

_PLAIN = r"[A-Za-z0-9_\-./:=@%+,]"
_SINGLE_QUOTED = r"'[^'\x00]*'"
_DOUBLE_QUOTED = r'"[^"$`\\\x00]*"'
_WORD = rf"(?:{_PLAIN}|{_SINGLE_QUOTED}|{_DOUBLE_QUOTED})+"
_SIMPLE_COMMAND = re.compile(rf"[ \t]*{_WORD}(?:[ \t]+{_WORD})*[ \t]*")

# Not `sessions`: it lists every conversation of the person's, in every project, by title — what
# ~/.iota is hidden from the sandbox for. Inside the sandbox it finds none.
LISTS = ("agents", "models", "providers")
CONFIG_CHANGES = ("add", "remove", "login", "logout")
# The flags `iota run … -m` may carry out of the sandbox, each taking a value. `--mcp` (a server
# the child would start unsandboxed), `-c` and `--no-save` are not among them.
RUN_OPTIONS = frozenset({"-m", "--message", "-M", "--model", "-s", "--system", "--max-turns", "--output-format"})
MESSAGE = frozenset({"-m", "--message"})


@dataclass(frozen=True)
class SelfCall:
    """A command line that is iota calling itself: its words after the program, and whether it
    changes iota's configuration (then it is asked about every time)."""

    arguments: tuple[str, ...]
    changes_config: bool


def read_self_call(command: str, cwd: Path, iota_executable: str) -> SelfCall | None:
    """The self-call `command` is when run in `cwd`, or None when it is anything else."""
    words = simple_command_words(command)
    if not words or not _is_iota(words[0], cwd, iota_executable):
        return None
    arguments = tuple(words[1:])
    if changes_config(arguments):
        return SelfCall(arguments, changes_config=True)
    if only_reads(arguments):
        return SelfCall(arguments, changes_config=False)
    return None


def simple_command_words(command: str) -> list[str] | None:
    """The words of `command` when it is one simple command of the part of bash described above,
    else None."""
    if not _SIMPLE_COMMAND.fullmatch(command):
        return None
    return shlex.split(command)


def _is_iota(word: str, cwd: Path, iota_executable: str) -> bool:
    program = os.path.join(cwd, word) if "/" in word else shutil.which(word)
    return program is not None and os.path.isfile(program) and os.path.realpath(program) == iota_executable


def changes_config(arguments: tuple[str, ...]) -> bool:
    match arguments:
        case ("mcp", subcommand, *_) if subcommand in CONFIG_CHANGES:
            return True
        case ("config", "init"):
            return True
    return False


def only_reads(arguments: tuple[str, ...]) -> bool:
    """Whether the arguments are one of the commands that may leave the sandbox unasked."""
    match arguments:
        case ("version",) | ("config", "check") | ("config", "path") | ("mcp", "list"):
            return True
        case ("mcp", "get", name):
            return not name.startswith("-")
        case ("list", *rest):
            return len(rest) <= 2 and not any(word.startswith("-") for word in rest) and \
                (not rest or rest[0] in LISTS)
        case ("run", *rest):
            return _headless_run(rest)
    return False


def _headless_run(words: list[str]) -> bool:
    """`[<agent>] -m <text>` and the allowed flags, each written in full: `-M x`, `--model x` or
    `--model=x`. A value that starts with a dash is refused, as argparse would refuse it."""
    positionals, has_message = 0, False
    position = 0
    while position < len(words):
        word = words[position]
        if word.startswith("--") and "=" in word:
            flag = word.split("=", 1)[0]
            if flag not in RUN_OPTIONS:
                return False
        elif word in RUN_OPTIONS:
            flag = word
            position += 1
            if position == len(words) or words[position].startswith("-"):
                return False
        elif word.startswith("-"):
            return False
        else:
            flag = None
            positionals += 1
        has_message = has_message or flag in MESSAGE
        position += 1
    return has_message and positionals <= 1


def writable_code(iota_executable: str, writable: Sequence[str]) -> str | None:
    """The first place the running iota's code is read from that lies in one of the `writable`
    directories (where a sandboxed command could change it), or None. Its executable, its
    interpreter's prefix, the source of its packages and every directory Python imports from
    (the child iota, started the same way, imports from the same ones)."""
    sources = [iota_executable, sys.prefix, str(Path(__file__).resolve().parents[2]), *filter(None, sys.path)]
    if site.ENABLE_USER_SITE:
        sources.append(site.getusersitepackages())
    for source in sources:
        if any(is_inside(Path(source), Path(directory)) for directory in writable):
            return source
    return None
