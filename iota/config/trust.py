"""Trust of a project's config file: what in it is risky, and what the person decided about it.

A `.iota.yaml` (or `.iota.yml`) in the working directory arrives with the directory: a cloned
repository brings one, and so can a command the sandboxed shell ran. Merged over the person's own
file, it could point a provider at a server that collects the API key, start an MCP server
outside the sandbox at the next start, or let an agent run commands without asking. So a project
file is untrusted until the person trusts it, and until then iota leaves out every entry that
holds something risky ("a finding"):

    providers.<name>            every entry: it says where requests and the API key go
    mcp_servers.<name>          every entry: it starts a program, or connects somewhere, unsandboxed
    models.<name>.provider      naming a provider this file defines
    agents.<name>               replacing the person's bot, whatever it says; else any key wider
                                than the person's entry of that name (or, for a new agent, than
                                iota's defaults), by the one rule of iota.config.narrowing:
                                more MCP servers, tools, flags, memory, … than theirs
    any entry                   a `${env:…}` reference, which copies a variable of the person's
                                environment into the value

An entry is left out whole, so the person's entry of the same name (if any) stays in force.

The decision is the person's: the interactive start asks once (Trust / Ignore this file) and
~/.iota/trusted.json remembers the answer for that file path and the SHA-256 of its bytes, so a
changed file asks again. "Ignore this file" leaves the whole file out. Headless runs cannot ask:
they leave the risky entries out and say so in one line.

Everything here is a pure function of the documents, except `decisions` and `record`, which read
and write trusted.json.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from iota import paths
from iota.config import narrowing

TRUSTED_FILE = "trusted.json"
TRUST, IGNORE = "trust", "ignore"
ANSWERS = ("Trust", "Ignore this file")   # the question's options, in the order of TRUST, IGNORE


class Finding(NamedTuple):
    """One risky thing in a project file."""

    entry: str    # the entry left out for it: `providers.evil`, `agents.coder`
    key: str      # the key that holds it: `agents.coder.tools.shell.auto_run`
    reason: str   # what it would do: `runs commands without asking`

    def describe(self) -> str:
        """`agents.coder: tools.shell.auto_run runs commands without asking`."""
        inner = self.key[len(self.entry) + 1:] if self.key.startswith(self.entry + ".") else ""
        return f"{self.entry}: {inner} {self.reason}" if inner else f"{self.entry}: {self.reason}"


class Review(NamedTuple):
    """A project file as read, what is risky in it, and the person's decision for this content."""

    path: Path
    digest: str                      # SHA-256 of the file's bytes, hex
    findings: tuple[Finding, ...]
    decision: str | None             # TRUST, IGNORE, or None: never decided for these bytes

    @property
    def trusted(self) -> bool:
        return not self.findings or self.decision == TRUST

    @property
    def ignored(self) -> bool:
        """The person chose to leave the whole file out."""
        return bool(self.findings) and self.decision == IGNORE

    @property
    def pending(self) -> bool:
        """There is something to ask about, and it was never asked for this content."""
        return bool(self.findings) and self.decision is None

    @property
    def left_out(self) -> list[str]:
        """The entries left out while the file is not trusted, in the file's order."""
        return list(dict.fromkeys(finding.entry for finding in self.findings))


def digest(data: bytes) -> str:
    import hashlib  # only a project file is hashed: a run without one does not load it

    return hashlib.sha256(data).hexdigest()


def review(path: Path, data: bytes, project: Any, user: Any, cwd: Path, decode: Callable[[str, dict], Any], *,
           decided: bool = True) -> Review:
    """The review of project file `path` whose bytes are `data` and parsed document `project`,
    merged over the person's document `user` (None when there is none), in `cwd`; `decode` turns an
    agent entry into what a run uses (entries.AgentConfig.decode). Without
    `decided` the person's decisions are not consulted (a confined iota's): never decided."""
    path = Path(os.path.abspath(path))
    hashed = digest(data)
    findings = tuple(find_risks(project, user, cwd, decode))
    decided = decisions().get(str(path), {}) if decided else {}
    decision = decided.get("decision") if decided.get("sha256") == hashed else None
    return Review(path, hashed, findings, decision if decision in (TRUST, IGNORE) else None)


def without(document: dict, entries: list[str]) -> dict:
    """`document` with the entries named `section.name` left out (a copy; the input is kept).
    A name is matched as text, the way the review and the merge name entries: YAML reads `1:`,
    `true:` or `null:` as a number, a flag or nothing, and such an entry must go too."""
    kept = {section: dict(value) if isinstance(value, dict) else value for section, value in document.items()}
    for entry in entries:
        section, _, name = entry.partition(".")
        if isinstance(kept.get(section), dict):
            for key in [key for key in kept[section] if str(key) == name]:
                del kept[section][key]
    return kept


# -- what is risky ---------------------------------------------------------------------------------


def find_risks(project: Any, user: Any, cwd: Path, decode: Callable[[str, dict], Any]) -> list[Finding]:
    """Every finding in the project document: providers, MCP servers, models, then agents (a
    `${env:…}` reference with its entry). Later sections see what earlier ones left out, so a
    model on a left-out provider is left out too, and an agent on that model."""
    project, user = _mapping(project), _mapping(user)
    found: list[Finding] = []
    for name, entry in _section(project, "providers").items():
        found.append(Finding(f"providers.{name}", f"providers.{name}", _provider_risk(_mapping(entry))))
    for name, entry in _section(project, "mcp_servers").items():
        found.append(Finding(f"mcp_servers.{name}", f"mcp_servers.{name}", _server_risk(_mapping(entry))))
    # Whatever this file alone defines in those two sections is left out, always.
    own_providers = set(_section(project, "providers")) - set(_section(user, "providers"))
    for name, entry in _section(project, "models").items():
        provider = entry.partition(":")[0] if isinstance(entry, str) else _mapping(entry).get("provider")
        if provider in own_providers:
            found.append(Finding(f"models.{name}", f"models.{name}.provider",
                                 f"uses provider {provider}, which this file defines"))
        found += _environment_risks(f"models.{name}", entry)
    left_out_models = {f.entry.partition(".")[2] for f in found if f.entry.startswith("models.")}
    context = narrowing.Context(cwd, frozenset(_section(user, "mcp_servers")),
                                frozenset(left_out_models - set(_section(user, "models"))), frozenset(own_providers),
                                decode)
    for name, entry in _section(project, "agents").items():
        mine = _section(user, "agents").get(name, False)
        found += _agent_risks(f"agents.{name}", entry, None if mine is False else _mapping(mine), context)
        found += _environment_risks(f"agents.{name}", entry)
    return found


def _provider_risk(entry: dict) -> str:
    if entry.get("url"):
        return f"sends your requests and API key to {entry['url']}"
    if entry.get("key"):
        return f"sends your requests to the {entry.get('type', 'provider')} API with a key this file chooses"
    return "defines where your requests go"


def _server_risk(entry: dict) -> str:
    if entry.get("command"):
        words = [str(entry["command"]), *(str(arg) for arg in entry.get("args") or [])]
        return f"starts `{' '.join(words)}` outside the sandbox at every start"
    if entry.get("url"):
        return f"connects to {entry['url']} at every start"
    return "adds an MCP server whose tools run without asking"


def _agent_risks(entry_name: str, entry: Any, mine: Any, context: narrowing.Context) -> list[Finding]:
    """The findings of one agent entry: replacing the person's bot, whatever it says, and every key
    wider than the person's entry (`mine`; None: they have none) by the one rule of
    iota.config.narrowing."""
    name = entry_name.partition(".")[2]
    if _mapping(mine).get("mode") == "bot":
        return [Finding(entry_name, f"{entry_name}.mode", f"replaces your bot {name}")]
    return [Finding(entry_name, f"{entry_name}.{key}", reason)
            for key, reason in narrowing.wider_keys(name, entry, mine, context)]


_ENV_REFERENCE = re.compile(r"\$\{env:([^}]*)\}")


def _environment_risks(entry_name: str, entry: Any, where: str = "") -> list[Finding]:
    """A `${env:NAME}` anywhere in the entry, at the key that holds it."""
    if isinstance(entry, dict):
        return [finding for key, value in entry.items()
                for finding in _environment_risks(entry_name, value, f"{where}.{key}" if where else str(key))]
    if isinstance(entry, list):
        return [finding for value in entry for finding in _environment_risks(entry_name, value, where)]
    if isinstance(entry, str):
        return [Finding(entry_name, f"{entry_name}.{where}" if where else entry_name,
                        f"copies ${{env:{name}}} from your environment") for name in _ENV_REFERENCE.findall(entry)]
    return []


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _section(document: dict, name: str) -> dict[str, Any]:
    return {str(key): value for key, value in _mapping(document.get(name)).items()}


# -- what the person is told -----------------------------------------------------------------------


def question(review: Review) -> str:
    """The interactive question, every finding on a line of its own."""
    lines = [f"{review.path} is not trusted yet. Trusted, it would:"]
    lines += [f"  {finding.describe()}" for finding in review.findings]
    lines.append("Trust it? Ignore leaves the whole file out. The answer holds until the file changes.")
    return "\n".join(lines)


def warning(review: Review) -> str | None:
    """The one line a run shows about the file, or None when it is trusted."""
    if review.trusted:
        return None
    if review.ignored:
        return f"project config {review.path}: ignored, as you chose (iota asks again when it changes)"
    return (f"project config {review.path} is not trusted: left out {', '.join(review.left_out)} "
            "(`iota config check` says why; start iota here in a terminal to trust it)")


def report(review: Review) -> list[str]:
    """What `iota config check` says about the file's trust, after its `project config:` line."""
    if not review.findings:
        return []
    if review.decision == TRUST:
        return ["  trusted (its providers, MCP servers and tool settings apply)"]
    if review.ignored:
        return ["  ignored as a whole, as you chose (iota asks again when it changes)"]
    return ["  not trusted; these entries are left out until you trust it in an interactive start:",
            *(f"    {finding.describe()}" for finding in review.findings)]


# -- the decisions on disk -------------------------------------------------------------------------


def trusted_path() -> Path:
    return paths.app_home() / TRUSTED_FILE


def decisions() -> dict[str, dict]:
    """trusted.json's decisions by file path. A missing or damaged file trusts nothing."""
    try:
        document = json.loads(trusted_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = document.get("files") if isinstance(document, dict) else None
    return {path: value for path, value in files.items() if isinstance(value, dict)} if isinstance(files, dict) else {}


def record(review: Review, decision: str) -> None:
    """Remember `decision` (TRUST or IGNORE) for this file's path and content, replacing any earlier
    one for the path. The file is replaced whole, so a crash leaves the old decisions or the new."""
    from iota.sessions.bundle import write_atomically  # only a decision being saved needs it

    files = decisions()
    files[str(review.path)] = {"sha256": review.digest, "decision": decision}
    trusted_path().parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"files": files}, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_atomically(trusted_path(), text.encode())
