"""`iota bots`, `iota bots new <name>` (ui.commands.bots_new), `iota bots watch` (ui.commands.bots_watch), `iota bots show <name>`, `iota bots rm <name> [--sessions] [-y]`, `iota bots reindex
<name>`, `iota bots export <name> [FILE]`, `iota bots import FILE [--name NEW] [-y]`: the bots, one
in detail with its memory as a chat here would send it, removing one (iota.bots.roster), rebuilding
one's journal and search index from its logs (iota.bots.journal), and a bot's persona and skills
in a file, out and in (iota.bots.portable: an import shows all it would add and asks first).

    Bots:
      coder     working · 12s · task "migrate db" 2/5 · pid 4242 · m · 42 msgs (12.3 KiB) · memory 3.2 KiB
      reviewer  m · not run yet

A running bot's state comes from its state.json (iota.bots.state_file); one without a fresh state
file (a bot from before state files, or just starting) says `running (pid N)`.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from iota.errors import EXIT_OK, BotError
from ui.commands.bots_new import add_new_parser, new_bot
from ui.commands.shared import load_config


def add_bots_parser(commands: argparse._SubParsersAction) -> None:
    bots = commands.add_parser("bots", help="list the bots, show, remove, export or import one")
    bots.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS, help="read this config file alone")
    actions = bots.add_subparsers(dest="action")
    add_new_parser(actions)
    actions.add_parser("watch", help="a live screen of every bot's state; Enter goes to its tmux pane")
    show = actions.add_parser("show", help="a bot's files, memory layers and session")
    show.add_argument("name")
    remove = actions.add_parser("rm", help="remove a bot's directory and memory (asks first)")
    remove.add_argument("name")
    remove.add_argument("--sessions", action="store_true", help="delete its session too")
    remove.add_argument("-y", "--yes", action="store_true", help="do not ask")
    reindex = actions.add_parser("reindex", help="rebuild a bot's journal and search index from its logs")
    reindex.add_argument("name")
    export = actions.add_parser("export", help="write a bot's entry, persona and skills to a file")
    export.add_argument("name")
    export.add_argument("file", nargs="?", type=Path, help="the file to write (default: ./<name>.iotabot)")
    imported = actions.add_parser("import", help="add a bot from a file written by iota bots export (asks first)")
    imported.add_argument("file", type=Path)
    imported.add_argument("--name", help="the new bot's name (default: the file's)")
    imported.add_argument("-y", "--yes", action="store_true", help="do not ask")


def bots_command(args: argparse.Namespace) -> int:
    from iota.bots import roster

    if args.action == "reindex":  # works from the bot's directory and logs: no config needed
        return reindex(args.name)
    loaded = load_config(args, write_starter=args.action == "new")
    if args.action == "new":
        return new_bot(loaded, args)
    if args.action == "watch":
        from ui.commands.bots_watch import watch
        return watch(loaded)
    if args.action == "export":
        return export(loaded, args.name, args.file)
    if args.action == "import":
        return import_bot(loaded, args)
    if args.action == "rm":
        print(roster.remove_bot(args.name, sessions=args.sessions, confirm=_yes if args.yes else _ask))
    elif args.action == "show":
        print(render_show(loaded, args.name, Path.cwd()))
    else:
        print(render_list(loaded))
    return EXIT_OK


def reindex(name: str) -> int:
    from iota.bots.journal import rebuild_journal

    entries, records, seconds = rebuild_journal(name)
    print(f"Rebuilt bot {name}'s journal from its logs: {entries} entries, {records} records indexed in {seconds:.1f} s")
    return EXIT_OK


def export(loaded, name: str, file: Path | None) -> int:
    from iota.bots.portable import SUFFIX, export_bot

    target = file if file is not None else Path.cwd() / f"{name}{SUFFIX}"
    bundle, notes = export_bot(loaded, name, target, Path.cwd())
    skills = sorted({path.split("/")[1] for path in bundle.skills})
    print(f"Exported bot {name} to {target}: its entry, {'its persona (SOUL.md)' if bundle.soul else 'no persona'}"
          f" and {len(skills)} skill{'' if len(skills) == 1 else 's'}{': ' + ', '.join(skills) if skills else ''}")
    for note in notes:
        print(f"  ({note})")
    return EXIT_OK


def import_bot(loaded, args: argparse.Namespace) -> int:
    from iota import paths
    from iota.bots.portable import apply_import, plan_import, read_bundle
    from iota.config import starter

    path = Path(args.config) if getattr(args, "config", None) is not None else paths.user_config_path()
    plan = plan_import(read_bundle(args.file), loaded, path, args.name, Path.cwd())
    print(plan.describe())
    print()
    question = f"Add bot {plan.name}?" + (" It loosens confinement as marked ⚠ above." if plan.risks else "")
    if not (args.yes or _ask(question)):
        print("Nothing was imported.")
        return EXIT_OK
    if not path.exists():
        print(starter.write_starter(path), file=sys.stderr)
    apply_import(plan, Path.cwd())
    print(f"Imported bot {plan.name}: iota run {plan.name}")
    return EXIT_OK


def render_list(loaded) -> str:
    from iota.bots import roster
    from iota.bots.state_file import read_state, state_line
    from iota.sessions.listing import relative_time

    now = datetime.now().astimezone()
    rows = []
    for name in roster.bot_names(loaded):
        bot = roster.summarize(loaded, name)
        state = read_state(bot.directory) if bot.running else None
        details = [state_line(state, now), f"pid {state.pid}"] if state is not None else []
        details.append(bot.model or "(no model)")
        if bot.session is None:
            details.append("not run yet")
        elif state is not None:
            details.append(f"{bot.messages} msgs ({_bytes(bot.log_size)})")
        else:
            details += [relative_time(bot.last_activity, now), f"{bot.messages} msgs ({_bytes(bot.log_size)})"]
        if bot.memory_size:
            details.append(f"memory {_bytes(bot.memory_size)}")
        if bot.running and state is None:
            details.append(f"running (pid {bot.pid})" if bot.pid is not None else "running")
        if not bot.configured:
            details.append("not in the config")
        if bot.problem:
            details.append(f"⚠ {bot.problem}")
        rows.append((name, " · ".join(details)))
    if not rows:
        return NO_BOTS
    width = max(len(name) for name, _ in rows)
    return "\n".join(["Bots:", *(f"  {name.ljust(width)}  {details}" for name, details in rows)])


NO_BOTS = "No bots yet. Make one with `iota bots new <name>`, then start it with `iota run <name>`."


def render_show(loaded, name: str, cwd: Path) -> str:
    from iota import paths
    from iota.bots import roster
    from iota.bots.bot import bot_memory
    from iota.bots.state_file import read_state, state_line
    from iota.config.inheritance import inherited_bots
    from iota.memory.report import describe
    from iota.memory.scope import SessionName

    if name not in roster.bot_names(loaded):
        raise BotError(f'unknown bot "{name}" (bots: {", ".join(roster.bot_names(loaded)) or "none"})')
    bot = roster.summarize(loaded, name)
    agent = loaded.agents.get(name)
    if bot.configured:
        config = f"mode: bot · model {bot.model or '(none)'}"
        inherits = inherited_bots(loaded.agents, name)
        if inherits:
            config += f" · inherits {', '.join(inherits)}"
    else:
        config = "not in the config" + (f" (agents.{name} is mode: {agent.mode})" if agent is not None else "")
    if bot.session is None:
        session = "none yet"
    else:
        when = _local_time(bot.last_activity)
        session = f"{bot.session} · {bot.messages} msgs ({_bytes(bot.log_size)}) · last activity {when}"
    running = (f"pid {bot.pid}" if bot.pid is not None else "yes") if bot.running else "no"
    state = read_state(bot.directory) if bot.running else None
    if state is not None:
        running += f" · {state_line(state)}"
    rows = [("config", config), ("directory", str(bot.directory)), ("session", session), ("running", running),
            ("files", ", ".join(roster.bot_files(bot.directory)) or "(none)")]
    if bot.problem:
        rows.append(("problem", bot.problem))
    lines = [f"Bot {name}", *(f"  {label.ljust(9)}  {value}" for label, value in rows)]
    project = paths.project_root(cwd)
    memory = bot_memory(name, loaded, project, SessionName(bot.session) if bot.session else None)
    warnings = memory.refresh()
    lines.append(f"Memory in {project}:")
    lines += [f"  {line}" for line in describe(memory).splitlines()]
    lines += [f"  ⚠ {warning}" for warning in warnings]
    return "\n".join(lines)


def _ask(question: str) -> bool:
    print(f"{question} [y/N] ", end="", flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _yes(question: str) -> bool:
    return True


def _bytes(size: int) -> str:
    """`512 B`, `3.2 KiB`, `1.4 MiB`."""
    from iota.memory.lines import kib

    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{kib(size)} KiB"
    return f"{kib(size // 1024)} MiB"


def _local_time(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return "unknown"
