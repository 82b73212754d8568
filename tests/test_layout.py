"""The layout's one-way rules, read from the source: `ui → actors → iota`, iota's own packages in
one order (`IOTA_ORDER`), and no circles.

Every import counts, the ones inside functions too: a circle that only closes at call time
(as `ui.cli` and the commands once had) still ties the modules into one knot.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("iota", "actors", "ui")
# Which top-level packages each one may import.
ALLOWED = {"iota": {"iota"}, "actors": {"actors", "iota"}, "ui": {"ui", "actors", "iota"}}
# iota's packages (and its top-level modules, each a package of one), lowest first: each may import
# only those before it (and the root package, for `__version__`). docs/architecture.md gives the
# reasons; in short, records and files sit below settings, settings below what talks to models,
# a bot's stores below the tools that serve them to the model, and the chat on top.
IOTA_ORDER = (
    # the ground everything stands on: errors, formatting, paths, YAML, token counts, time zones,
    # and what a message is (with its attachments)
    "errors", "text", "paths", "yaml_load", "tokens", "zones", "attachments", "messages",
    # records and files: the session log, memory files (written the log's atomic way), settings
    # (whose trust decisions are written the same way)
    "sessions", "memory", "config",
    # the wire protocols, and the compaction that calls a model and rewrites nothing but the log
    "providers", "compaction",
    # a bot's layers on disk: skill files, then the bot's stores (journal, tasks, schedules, notes,
    # candidates, upkeep's rules), which the tools further on serve to the model
    "skills", "bots",
    # what the model runs: the sandbox, the toolsets, MCP servers' tools
    "sandbox", "tools", "mcp",
    # one turn, the system prompt, the title pass, the debug log, the terminal hosts
    "agent", "prompt", "titles", "debug_log", "hosts",
    # a helper's turn, run inside a tool call of the chat's (the chat builds its setup)
    "delegation",
    # what one chat is made of
    "chat",
)


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the three packages, by dotted name (a package by its `__init__.py`)."""
    names = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names[".".join(parts)] = path
    return names


def imports_of(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The project's modules that this module imports, anywhere in its body."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from a.b import c` imports the module a.b.c when there is one, else a name of a.b.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in known)
    found.discard(name)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    known = module_names(root)
    return {name: imports_of(path, name, known) for name, path in known.items()}


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{source} imports {target}" for source, targets in graph.items() for target in targets
                  if target.split(".")[0] not in ALLOWED[source.split(".")[0]])


def iota_package(module: str) -> str | None:
    """The package of IOTA_ORDER a module of iota belongs to (None for the root package)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "iota" and len(parts) > 1 else None


def wrong_way_in_iota(graph: dict[str, set[str]]) -> list[str]:
    """The imports of one iota package by another placed after it in IOTA_ORDER (or not in it)."""
    rank = {name: index for index, name in enumerate(IOTA_ORDER)}
    found = []
    for source, targets in graph.items():
        mine = iota_package(source)
        for target in targets:
            theirs = iota_package(target)
            if mine is None or theirs is None or mine == theirs:
                continue
            if mine not in rank or theirs not in rank or rank[theirs] > rank[mine]:
                found.append(f"iota.{mine} imports iota.{theirs} ({source} imports {target})")
    return sorted(found)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_imports_point_from_ui_to_actors_to_iota():
    assert wrong_way(import_graph(REPO)) == []


def test_iotas_packages_import_in_one_order():
    assert wrong_way_in_iota(import_graph(REPO)) == []


def test_every_package_of_iota_has_its_place_in_the_order():
    placed = {iota_package(name) for name in module_names(REPO)} - {None}
    assert placed == set(IOTA_ORDER)


def test_no_module_imports_itself_back_through_others():
    assert circles(import_graph(REPO)) == []


def test_the_checks_see_a_wrong_way_import_and_a_circle_inside_a_function(tmp_path):
    def write(relative: str, text: str) -> None:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    for package in PACKAGES:
        write(f"{package}/__init__.py", "")
    write("iota/store.py", "def f():\n    from actors.lane import Lane\n")
    write("actors/lane.py", "from ui.cli import main\n")
    write("ui/cli.py", "from ui.commands import run\n")
    write("ui/commands/__init__.py", "")
    write("ui/commands/run.py", "def go():\n    from ui.cli import main\n")
    graph = import_graph(tmp_path)
    assert wrong_way(graph) == ["actors.lane imports ui.cli", "iota.store imports actors.lane"]
    assert circles(graph) == [["ui.cli", "ui.commands.run"]]


def test_the_order_check_sees_a_package_importing_one_above_it(tmp_path):
    for relative, text in {
        "iota/__init__.py": "__version__ = '0'\n",
        "iota/errors.py": "",
        "iota/sessions/__init__.py": "",
        "iota/sessions/log.py": "from iota.errors import x\nfrom iota import __version__\n",
        "iota/tools/__init__.py": "",
        "iota/tools/base.py": "from iota.sessions.log import y\n",
        "iota/memory/__init__.py": "",
        "iota/memory/lines.py": "def f():\n    from iota.tools.base import ToolError\n",
        "iota/unplaced.py": "",
    }.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in ("actors", "ui"):
        (tmp_path / package).mkdir()
    graph = import_graph(tmp_path)
    graph["iota.sessions.log"].add("iota.unplaced")
    assert wrong_way_in_iota(graph) == [
        "iota.memory imports iota.tools (iota.memory.lines imports iota.tools.base)",
        "iota.sessions imports iota.unplaced (iota.sessions.log imports iota.unplaced)",
    ]
