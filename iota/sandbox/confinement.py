"""The confinement a sandboxed iota hands down to every iota its commands start.

A self-call (`iota run helper -m "…"`, see self_call.py) runs outside the sandbox, so without
more the child could do what its parent may not: take another directory as its project, run
its commands with `sandbox: off`, or ask a person who is not there. So the parent's shell puts
its confinement in the environment of every command it runs, self-calls and sandboxed commands
alike:

    IOTA_CONFINED_ROOT      the parent's project root
    IOTA_CONFINED_NETWORK   1 when the parent's commands may reach the network, else 0
    IOTA_CONFINED_WRITE     the parent's `write:` paths, as a JSON list
    IOTA_CONFINED_ENV_KEEP  the parent's `env_keep:` names and patterns, as a JSON list (a
                            self-call gets iota's whole environment, so a child whose shell kept
                            more would hand its commands, and so the model, what the parent's lack)
    IOTA_CONFINED_LIMITS    the parent's commands' limits (iota.config.limits), as JSON: a child's
                            commands may have none higher (missing, from an older iota: unchecked)
    IOTA_CONFINED_PROJECT_CONFIG   the project config file the parent ran under, with its SHA-256
                            (JSON), or null: the only project file the child may read, unchanged,
                            and as untrusted (iota.config.confined)

and an iota that finds it there enforces it when a chat starts (`enforce_confinement` in
iota.chat): its project root is that root and a working directory outside it is refused; its
shell must be sandboxed, with no network the parent's commands lack, nothing writable the
parent's cannot write, no `env_keep` entry the parent's has not got and no limit higher; `-c` and `--mcp` are refused (a config or a server of the model's
choosing would run outside the sandbox); it starts no MCP server at all (an MCP server runs
outside the sandbox and its tools do not ask), and an agent that names one is refused; and it runs only headless, where whatever would need a
yes is refused. Its own shell passes its own confinement on — the same root, a policy no weaker
— so a child started from a child keeps it too. A variable that cannot be read confines as
tightly as it can: a malformed one stops the start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import NamedTuple
from pathlib import Path

from iota.config.limits import KEYS, ShellLimits
from iota.config.narrowing import lower_limits
from iota.config.confined import PROJECT_CONFIG_VARIABLE, ROOT_VARIABLE, ProjectPin, project_pin
from iota.errors import ConfigError

NETWORK_VARIABLE = "IOTA_CONFINED_NETWORK"
WRITE_VARIABLE = "IOTA_CONFINED_WRITE"
ENV_KEEP_VARIABLE = "IOTA_CONFINED_ENV_KEEP"
LIMITS_VARIABLE = "IOTA_CONFINED_LIMITS"

HEADLESS_ONLY = "it runs only headless, with -m, where nothing is asked"


class ConfinementError(ConfigError):
    """What a confined iota refuses to do; the message says it is confined and by what."""


class Confinement(NamedTuple):
    root: Path
    network: bool = False
    write: tuple[str, ...] = ()  # absolute paths
    project_config: ProjectPin = ProjectPin()   # the project file the parent ran under (path None: none)
    env_keep: tuple[str, ...] = ()   # the parent's shell's `env_keep:` entries, as written
    limits: ShellLimits | None = None   # the parent's commands' limits (None: not handed down)

    def environment(self) -> dict[str, str]:
        return {ROOT_VARIABLE: str(self.root), NETWORK_VARIABLE: "1" if self.network else "0",
                WRITE_VARIABLE: json.dumps(list(self.write)), PROJECT_CONFIG_VARIABLE: self.project_config.value(),
                ENV_KEEP_VARIABLE: json.dumps(list(self.env_keep)),
                **({LIMITS_VARIABLE: json.dumps(vars(self.limits))} if self.limits is not None else {})}

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Confinement | None:
        """The confinement this process was started under, or None when it was not confined."""
        if ROOT_VARIABLE not in environ:
            return None
        root = environ[ROOT_VARIABLE]
        network = environ.get(NETWORK_VARIABLE, "0")
        try:
            write = json.loads(environ.get(WRITE_VARIABLE, "[]"))
        except ValueError:
            write = None
        try:  # missing (an older parent's): nothing kept, the tightest reading
            env_keep = json.loads(environ.get(ENV_KEEP_VARIABLE, "[]"))
        except ValueError:
            env_keep = None
        try:
            limits, bad_limits = _limits(environ.get(LIMITS_VARIABLE)), False
        except ValueError:
            limits, bad_limits = None, True
        if not os.path.isabs(root) or network not in ("0", "1") or not isinstance(write, list) or \
                not all(isinstance(path, str) and os.path.isabs(path) for path in write) or \
                not isinstance(env_keep, list) or not all(isinstance(name, str) for name in env_keep) or \
                bad_limits:
            raise ConfinementError(f"{ROOT_VARIABLE}, {NETWORK_VARIABLE}, {WRITE_VARIABLE}, {ENV_KEEP_VARIABLE} or "
                                   f"{LIMITS_VARIABLE} is malformed; this iota was started confined and will not run "
                                   "unconfined")
        return cls(Path(os.path.normpath(root)), network == "1", tuple(os.path.normpath(p) for p in write),
                   project_pin(environ) or ProjectPin(), tuple(env_keep), limits)

    def refuse(self, what: str) -> ConfinementError:
        return ConfinementError(f"confined to {self.root} by the iota that started this one: {what}")

    def check_cwd(self, cwd: Path) -> None:
        if not is_inside(cwd, self.root):
            raise self.refuse(f"the working directory {cwd} is outside it")

    def check_shell(self, *, sandbox: str, network: bool, writable: Sequence[str], allowed: Sequence[str],
                    env_keep: Sequence[str] = (), limits: ShellLimits | None = None) -> None:
        """A child's shell: sandboxed, no network the parent lacks, each of its `writable` paths
        inside one of the parent's (`allowed`: the same list, made from the parent's `write:`), and
        each `env_keep` entry one the parent's has, as written (an exact name passes a secret
        its pattern would withhold, so `AWS_SECRET` is not within `AWS_*`), and no limit above the
        parent's."""
        if sandbox != "auto":
            raise self.refuse("tools.shell.sandbox: off is refused")
        if network and not self.network:
            raise self.refuse("tools.shell.network: true is refused (the parent's commands have no network)")
        for path in writable:
            if not any(is_inside(Path(path), Path(parent)) for parent in allowed):
                raise self.refuse(f"tools.shell.write: {path} is refused (the parent's commands cannot write it)")
        kept = [name for name in env_keep if name not in self.env_keep]
        if kept:
            raise self.refuse(f"tools.shell.env_keep: {', '.join(kept)} is refused (the parent's commands do not get it)")
        raised = lower_limits(limits, self.limits, None) if limits is not None and self.limits is not None else None
        if raised:
            raise self.refuse(f"tools.shell.limits {raised} above the parent's (set them as low on this agent)")


def is_inside(path: Path, directory: Path) -> bool:
    """Whether `path` is `directory` or lies under it, both with their symlinks resolved."""
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(directory))


def _limits(text: str | None) -> ShellLimits | None:
    """The limits the variable's JSON gives (None: there is no variable); ValueError when malformed."""
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, dict) or sorted(value) != sorted(KEYS) or \
            not all(isinstance(number, int) and not isinstance(number, bool) for number in value.values()):
        raise ValueError(f"{LIMITS_VARIABLE}: want a mapping of {', '.join(KEYS)} to whole numbers")
    return ShellLimits(**value)
