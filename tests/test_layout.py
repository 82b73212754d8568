"""The layout's one-way rule, read from the source: `ui → actors → iota`, and no circles.

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
