"""Composing the system prompt, at send time. It is never stored in the session: only the
person's own instructions are, so a config change or a new AGENTS.md takes effect at once.

Segments, top to bottom, a blank line between them; a segment whose condition fails is left out:

1. the harness preamble          when `tools:` names at least one toolset (a bot always)
2. `<environment>`               with the harness
3. `<iota_cli>`                  when the shell toolset is on
4. `<instructions>`              the person's system prompt (bare, untagged, without a harness)
5. the AGENTS.md chain           agent and bot mode
6. the skills catalog            agent and bot mode, with at least one valid skill
7. `<journal>`                   bots that keep a journal: look up earlier work before answering
8. the notes catalog             bots with notes (iota.bots.notes; the bodies are read on demand)
8. the memory blocks             agents: their own memory directory (iota.memory.agent);
                                 bots: global memory, inherited memory, the bot's memory
                                 directory (SOUL.md, USER.md, BRIEF.md, the others), MEMORY.md —
                                 in that fixed order, one block a file, composed by
                                 iota.memory.layers and passed in here as one text

The memory comes last because it changes most often: everything before it stays in the
provider's cache when a memory file is edited, and a file's edit changes its own block only.
Nothing here changes from turn to turn (the date only daily): per-turn context (a bot's journal
entries) rides on the message instead.
"""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from iota import paths
from iota.errors import IotaError
from iota.skills import catalog, Skill

AGENTS_CHAIN_CAP = 32 * 1024
AGENTS_TRUNCATED = "<!-- AGENTS.md chain truncated at 32 KiB -->"

PREAMBLE = """\
You run inside iota, a coding agent in the user's terminal: you act on their project through the tools you are given, and you report what you did and what you found.
When the user declines a tool call, do not retry it: say what it was for and ask. A command that fails with "Operation not permitted", a write outside the project or a missing network was stopped by the sandbox: say so instead of working around it."""

IOTA_CLI = """\
<iota_cli>
iota itself runs outside the sandbox when it is the whole command (no pipes, chains, redirects, $ or -c):
  iota mcp list|get, iota config check|path, iota list agents|models|providers
  iota run <agent> -m "<task>"  (a child agent, confined to this project)
  iota mcp add|remove, iota config init  (the user is asked every time)
Change MCP servers with `iota mcp`. Change anything else by editing the config file, then run `iota config check`.
Changes apply from the next session.
</iota_cli>"""


JOURNAL_GUIDANCE = """\
<journal>
iota keeps a journal of everything you do here: after each turn it writes down what was asked, the tools you used and on what, how many failed, the beginning and end of your answer, and the files you wrote. Entries of turns no longer in this conversation come with the user's messages, marked [journal].
When the user refers to earlier work ("like last time", "where are we on the audit?", "what did we decide about X?"), check those entries and search your past with the recall tool before answering; reread a session with recall's read action when you need the details. Never claim not to remember: look it up, then say what you found, or that you found nothing.
</journal>"""


@dataclass
class PromptContext:
    """Everything the prompt is composed from, gathered by the chat at send time."""

    project_root: Path
    cwd: Path
    mode: str                                   # chat | agent | bot
    instructions: str = ""                      # system:, system_file: or -s
    toolsets: tuple[str, ...] = ()              # the sets `tools:` turns on (a bot adds "memory")
    config_lines: list[str] = field(default_factory=list)  # `user config: …` / `config: … (given with -c…)`
    host_lines: list[str] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    memory_block: str = ""
    journal: bool = False                       # a bot that keeps a journal (and has `recall`)
    notes_catalog: str = ""
    today: datetime.date | None = None


def compose(context: PromptContext) -> str:
    segments: list[str] = []
    harness = bool(context.toolsets) or context.mode == "bot"
    if harness:
        segments.append(PREAMBLE)
        segments.append(environment_block(context))
        if "shell" in context.toolsets:
            segments.append(IOTA_CLI)
    if context.instructions.strip():
        segments.append(f"<instructions>\n{context.instructions}\n</instructions>" if harness
                        else context.instructions)
    if context.mode in ("agent", "bot"):
        segments.append(agents_chain(context.project_root, context.cwd))
        segments.append(catalog(context.skills))
    if context.mode == "bot":
        if context.journal:
            segments.append(JOURNAL_GUIDANCE)
        segments.append(context.notes_catalog)
    if context.mode in ("agent", "bot"):
        segments.append(context.memory_block)
    return "\n\n".join(segment for segment in segments if segment)


def environment_block(context: PromptContext) -> str:
    today = context.today or datetime.date.today()
    lines = [
        f"project root: {context.project_root}",
        f"platform: {_OS_NAMES.get(sys.platform, sys.platform)} ({_machine()})",
        f"shell: {shell_name()}",
        f"date: {today.isoformat()}",
        f"iota binary: {iota_binary()}",
        *context.config_lines,
        *context.host_lines,
    ]
    return "<environment>\n" + "\n".join(lines) + "\n</environment>"


_OS_NAMES = {"darwin": "macos", "win32": "windows"}


def _machine() -> str:
    """What `platform.machine()` says, without importing `platform` (a few ms of regexes at
    start-up) where the system's uname says it directly."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


def shell_name() -> str:
    chosen = os.environ.get("IOTA_SHELL")
    if chosen:
        return Path(chosen).stem
    return "bash" if Path("/bin/bash").exists() else "(none)"


def iota_binary() -> str:
    """The running `iota` executable, canonicalised, or `(unknown)`."""
    candidate = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if candidate is not None and candidate.name == "iota" and candidate.exists():
        return str(candidate.resolve())
    return "(unknown)"


def agents_files(project_root: Path, cwd: Path) -> list[Path]:
    """Every AGENTS.md from the project root down to `cwd`, root first."""
    cwd = Path(os.path.abspath(cwd))
    root = Path(os.path.abspath(project_root))
    directories = [cwd, *cwd.parents]
    if root not in directories:
        directories = [cwd]
    else:
        directories = directories[: directories.index(root) + 1]
    return [d / "AGENTS.md" for d in reversed(directories) if (d / "AGENTS.md").is_file()]


def agents_chain(project_root: Path, cwd: Path) -> str:
    """The chain's text, capped at 32 KiB with the truncation marker. A file that, as opened, lies
    in ~/.iota is left out: the project is where sandboxed commands write, and ~/.iota the one
    place they cannot read, so `AGENTS.md -> ~/.iota/bots/x/memory/MEMORY.md` would hand the
    model what the sandbox hides."""
    texts = []
    try:
        hidden = os.path.realpath(paths.app_home())
    except IotaError:  # no $HOME, so no ~/.iota to keep out
        hidden = ""
    for path in agents_files(project_root, cwd):
        try:
            data, _, opened = paths.read_regular_file(path)
        except OSError:
            continue
        if hidden and paths.is_under(opened, hidden):
            continue
        texts.append(data.decode("utf-8", errors="replace").rstrip("\n"))
    chain = "\n\n".join(texts)
    encoded = chain.encode()
    if len(encoded) > AGENTS_CHAIN_CAP:
        chain = encoded[:AGENTS_CHAIN_CAP].decode(errors="ignore") + "\n\n" + AGENTS_TRUNCATED
    return chain


def agents_signature(project_root: Path, cwd: Path) -> tuple:
    """Changes when any file of the chain appears, goes, or changes: a stat per file, no reading."""
    signature = []
    for path in agents_files(project_root, cwd):
        try:
            stat = path.stat()
        except OSError:
            continue
        signature.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(signature)
