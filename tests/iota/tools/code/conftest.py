"""The fixtures of the `code` tools' tests: a project root, a Toolbox of the set on it, a tree of
files with ages, and the two writers."""

from __future__ import annotations

import pytest

from iota.tools.base import Toolbox
from iota.tools.code.toolset import code_tools
from tests.iota.tools.code.helpers import write


@pytest.fixture
def root(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    return project


@pytest.fixture
def box(root):
    return Toolbox(code_tools(root))


@pytest.fixture
def tree(root):
    """Files with distinct ages (newest last here), a .git and a .gitignore."""
    write(root / ".gitignore", "# build output\nbuild/\n*.log\n!keep.log\n/secret.py\n", mtime=100)
    for age, rel in enumerate(["c.py", "src/a.py", "src/deep/b.py", "README.md", "keep.log", "x.log",
                               "secret.py", "lib/secret.py", "build/gen.py", ".git/hook.py"]):
        write(root / rel, f"{rel}\n", mtime=1000 + age)
    return root


@pytest.fixture
def writers(root):
    tools = {tool.name: tool for tool in code_tools(root)}
    return tools["edit_file"], tools["write_file"]
