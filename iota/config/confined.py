"""What a confined iota reads of a project's config: the one file its parent ran under, unchanged.

An iota started by a sandboxed iota's command (a self-call, iota.sandbox.confinement) runs
outside the sandbox, in a directory the sandbox could write. A `.iota.yaml` there — one a
sandboxed command wrote in `sub/` a moment ago, say — would otherwise be read as the project's
file. So the parent hands down the path and the SHA-256 of the project file it ran under (or
that it ran under none), and the child reads that file only, and only while its bytes are those:
a different or changed file is not read at all. And the child applies no trust decision of the
person's (~/.iota/trusted.json) to it: the file is judged as untrusted, so the child gets at most
the narrowing part of it (iota.config.trust), never more than its parent.

This module is the config's side of the confinement, so the config layer needs nothing above it:
the names of the two variables a confined child finds, and what they say about the project file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import NamedTuple
from pathlib import Path

from iota.errors import ConfigError

# Set in every command a sandboxed iota runs: its presence alone says this iota is confined.
ROOT_VARIABLE = "IOTA_CONFINED_ROOT"
# The parent's project file as JSON: {"path": "/abs/.iota.yaml", "sha256": "<hex>"}, or null.
PROJECT_CONFIG_VARIABLE = "IOTA_CONFINED_PROJECT_CONFIG"


class ProjectPin(NamedTuple):
    """The project file a confined iota may read: `path` (None: none at all) with these bytes."""

    path: Path | None = None
    sha256: str | None = None

    def value(self) -> str:
        """The variable's text for this pin."""
        if self.path is None:
            return "null"
        return json.dumps({"path": str(self.path), "sha256": self.sha256})


def project_pin(environ: Mapping[str, str]) -> ProjectPin | None:
    """None when this iota is not confined; else the one project file it may read. A confined iota
    without the variable reads none (the tightest reading); a malformed one stops the start."""
    if ROOT_VARIABLE not in environ:
        return None
    text = environ.get(PROJECT_CONFIG_VARIABLE, "null")
    try:
        value = json.loads(text)
    except ValueError:
        value = ...
    if value is None:
        return ProjectPin()
    if isinstance(value, dict) and isinstance(value.get("path"), str) and os.path.isabs(value["path"]) and \
            isinstance(value.get("sha256"), str) and len(value["sha256"]) == 64:
        return ProjectPin(Path(value["path"]), value["sha256"])
    raise ConfigError(f"{PROJECT_CONFIG_VARIABLE} is malformed; this iota was started confined and reads no "
                      "project config but its parent's")
