"""The `code` toolset: read, search and change the files of one project, jailed at its root.

    glob, grep, list_dir, read_file    readers: run side by side, never ask
    edit_file, write_file              writers: one at a time, ask unless auto_write

The parts, in this package: `paths` (the jail: paths judged after resolving links, files opened
without following one), `shared` (the read-before-write ledger, the caps), `walk` (the
.gitignore-aware walk and glob patterns), `read` and `write` (the tools). This module puts a set
together. What no writer may touch is `iota.sandbox.protected`, shared with the shell's
sandbox.
"""

from __future__ import annotations

import os

from iota.tools.base import Tool
from iota.tools.code.read import Glob, Grep, ListDir, ReadFile
from iota.tools.code.shared import CodeSet
from iota.tools.code.write import EditFile, WriteFile

def code_tools(root: os.PathLike[str] | str, *, read_only: bool = False, auto_write: bool = False) -> list[Tool]:
    """The toolset's tools in the order the model is told about them; `read_only` leaves out the
    writers. The tools of one call share one read ledger."""
    code = CodeSet(root, auto_write=auto_write)
    tools: list[Tool] = [Glob(code), Grep(code), ListDir(code), ReadFile(code)]
    if not read_only:
        tools += [EditFile(code), WriteFile(code)]
    return tools
