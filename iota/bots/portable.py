"""A bot in a file: `iota bots export <name> [FILE]` and `iota bots import FILE [--name NEW]`.

The file (`<name>.iotabot`) is a zip archive of what makes the bot itself, and nothing else:

    iota-bot.json              {"format": 1, "name": "coder", "entry": {mode, model, tools, …}}
    SOUL.md                    its persona (memory/SOUL.md), if it has one
    skills/<slug>/SKILL.md     each skill it wrote (~/.iota/bots/<name>/skills), with the files beside it

The entry is the bot's config entry as written, cut to EXPORTED_KEYS: its model's name, its mode
and toolsets, its instructions (a `system_file:` is read into `system:`) and how it behaves. Never
a key (an agent entry holds none), nor what lives in or points at the exporter's machine:
conversation, memory (MEMORY.md, USER.md, BRIEF.md), candidates, tasks, schedules, notes, the
journal, `inherit:`, `mcp_servers:`. A line of the persona, a skill or the instructions that looks
like a key, token or password stops the export (iota.memory.secrets).

Importing reads the file as untrusted input — someone else's bot. It is checked whole before
anything is written: every name in the archive is a plain relative path of the layout above (no
`..`, no absolute path, no link), so nothing lands outside the new bot's directory; sizes are capped
(each file, the whole, the number of files) by what is actually read, not by what the archive
claims; each skill must read back as a skill of its directory's name. The entry keeps only
EXPORTED_KEYS; a model name the importer's config lacks is left out, with a line that says so;
the bot gets `mcp_servers: []` (none of the importer's servers until they give it some). What would
loosen confinement — `sandbox: off`, `auto_run`, `auto_write`, `network`, `write:` paths,
`env_keep:`, a `${env:…}` reference — is found by the same review as an untrusted project file
(iota.config.trust) and said before the person is asked. The plan is shown in full (the entry, the
persona, every SKILL.md) and nothing is written until they say yes. An existing bot (its directory
or its entry) is never overwritten. The entry goes into the config file as `iota mcp add` adds a
server: only the `agents:` block changes, comments kept, and the new file must load.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from iota import yaml_load
from iota.bots.bot import bot_dir
from iota.config.instructions import read_instructions
from iota.config import blocks, entries, settings, trust
from iota.config.settings import Config
from iota.errors import BotError, ConfigError, IotaError
from iota.memory.document import MEMORY_CAP, MemoryDoc, check_secret
from iota.memory.kinds import MEMORY_DIR, SOUL_MD
from iota.memory.lines import MemoryRefusal, join_lines, kib
from iota.sessions.bundle import write_atomically
from iota.skills import SKILL_CAP, SKILL_FILE, SKILL_NAME, bot_skills_dir, read_skill, split_front_matter

FORMAT = 1
SUFFIX = ".iotabot"
MANIFEST = "iota-bot.json"
SOUL = "SOUL.md"
SKILLS = "skills"
# What an entry may carry from one machine to another.
EXPORTED_KEYS = ("mode", "model", "description", "system", "tools", "notify", "journal", "context_window", "effort",
                 "temperature", "top_p", "auto_continue", "timezone", "upkeep", "upkeep_every")
MODEL_KEYS = ("model",)
# Caps on what an import reads: the archive file, one member, all of them, how many.
ARCHIVE_CAP = 16 * 1024 * 1024
FILE_CAP = 256 * 1024
TOTAL_CAP = 4 * 1024 * 1024
FILES_CAP = 500
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")


@dataclass
class Bundle:
    """A bot as the file carries it: its entry, persona and skills' files (path → bytes)."""

    name: str
    entry: dict[str, Any]
    soul: str | None = None
    skills: dict[str, bytes] = field(default_factory=dict)   # `skills/<slug>/<path>` → content


# -- export ---------------------------------------------------------------------------------------------


def export_bot(config: Config, name: str, target: Path, cwd: Path) -> tuple[Bundle, list[str]]:
    """Write bot `name` to `target`; (what was written, notes on what was left out)."""
    agent = config.agents.get(name)
    if agent is None or agent.mode != "bot":
        bots = ", ".join(n for n, a in config.agents.items() if a.mode == "bot") or "none"
        raise BotError(f'unknown bot "{name}" (bots: {bots})')
    if target.exists():
        raise BotError(f"{target} exists; remove it or name another file")
    notes: list[str] = []
    raw = _raw_entry(config, name)
    entry = {key: raw[key] for key in EXPORTED_KEYS if key in raw}
    if agent.system_file and "system" not in entry:
        entry["system"] = read_instructions(config, agent, cwd)
    left_out = [key for key in raw if key not in EXPORTED_KEYS and key != "system_file"]
    if left_out:
        notes.append(f"left out of the entry: {', '.join(left_out)} (they belong to this machine)")
    directory = bot_dir(name)
    soul_path = directory / MEMORY_DIR / SOUL_MD.name
    soul = _read_text(soul_path) if soul_path.is_file() else None
    bundle = Bundle(name, entry, soul, _skill_files(bot_skills_dir(name), notes))
    _check_no_secrets(bundle)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, _archive(bundle))
    try:
        read_bundle(target)   # what an import will accept: the same checks and caps
    except BotError as error:
        target.unlink(missing_ok=True)
        raise BotError(f"bot {name} cannot be exported: {error}") from None
    return bundle, notes


def _raw_entry(config: Config, name: str) -> dict[str, Any]:
    """The entry as the file that defines it has it (keys as written, `${…}` unexpanded)."""
    source = config.sources.get(f"agents.{name}")
    try:
        document = yaml_load.safe_load(Path(source).read_text(encoding="utf-8")) if source else {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read {source} ({error})") from None
    entry = ((document or {}).get("agents") or {}).get(name)
    return dict(entry) if isinstance(entry, dict) else {}


def _skill_files(root: Path, notes: list[str]) -> dict[str, bytes]:
    """Every regular file of each valid skill under `root` (no links, no hidden files, no `.prev`)."""
    files: dict[str, bytes] = {}
    if not root.is_dir():
        return files
    for folder in sorted(path for path in root.iterdir() if path.is_dir() and not path.is_symlink()):
        try:
            read_skill(folder)
        except ValueError as error:
            notes.append(f"skill {folder.name} left out: {error}")
            continue
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(root)
            if path.is_symlink() or not path.is_file() or any(part.startswith(".") for part in relative.parts) \
                    or path.name.endswith(".prev"):
                continue
            files[f"{SKILLS}/{relative.as_posix()}"] = path.read_bytes()
    return files


def _check_no_secrets(bundle: Bundle) -> None:
    """Refuse to export a line that looks like a key, token or password (it would leave with the file)."""
    texts = [("the entry's system", str(bundle.entry.get("system") or "")), (f"memory/{SOUL}", bundle.soul or "")]
    for path, data in bundle.skills.items():
        try:
            texts.append((path, data.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    for where, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            try:
                check_secret(line, where)
            except MemoryRefusal:
                raise BotError(f"{where}, line {number}, looks like a key, token or password: a bot file must not "
                               "carry one; remove it and export again") from None


def _archive(bundle: Bundle) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        manifest = {"format": FORMAT, "name": bundle.name, "entry": bundle.entry}
        archive.writestr(MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        if bundle.soul is not None:
            archive.writestr(SOUL, bundle.soul)
        for path, data in bundle.skills.items():
            archive.writestr(path, data)
    return buffer.getvalue()


# -- import: reading the file ------------------------------------------------------------------------------


def read_bundle(path: Path) -> Bundle:
    """The bot in the file at `path`, checked whole (BotError names the first problem)."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise BotError(f"cannot read {path}: {error.strerror or error}") from None
    if size > ARCHIVE_CAP:
        raise BotError(f"{path} is {size} bytes; a bot file is at most {ARCHIVE_CAP // (1024 * 1024)} MiB")
    try:
        with zipfile.ZipFile(path) as archive:
            members = [info for info in archive.infolist() if not info.is_dir()]
            if len(members) > FILES_CAP:
                raise BotError(f"{path} holds {len(members)} files; a bot file holds at most {FILES_CAP}")
            contents, total = {}, 0
            for info in members:
                name = _safe_name(info)
                cap = SKILL_CAP if PurePosixPath(name).name == SKILL_FILE else MEMORY_CAP if name == SOUL \
                    else FILE_CAP
                with archive.open(info) as member:
                    data = member.read(cap + 1)   # what is read counts, not what the archive says
                if len(data) > cap:
                    raise BotError(f"{name} in {path} is over its cap of {kib(cap)} KiB")
                total += len(data)
                if total > TOTAL_CAP:
                    raise BotError(f"{path} unpacks to more than {TOTAL_CAP // (1024 * 1024)} MiB")
                contents[name] = data
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError) as error:
        raise BotError(f"{path} is not a bot file (a zip archive written by iota bots export): {error}") from None
    return _bundle_of(path, contents)


def _safe_name(info: zipfile.ZipInfo) -> str:
    """A member's name if it is a plain file at a place of the layout; BotError otherwise."""
    name = info.filename
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise BotError(f"the bot file holds a link ({name}); a bot file holds plain files only")
    parts = name.split("/")
    if "\\" in name or name.startswith("/") or not all(_PART.fullmatch(part) and part not in (".", "..")
                                                        for part in parts):
        raise BotError(f"the bot file holds {json.dumps(name)}, which is not a plain relative path; nothing was "
                       "imported")
    if name in (MANIFEST, SOUL):
        return name
    if len(parts) >= 3 and parts[0] == SKILLS and SKILL_NAME.fullmatch(parts[1]) and len(parts) <= 8:
        return name
    raise BotError(f"the bot file holds {json.dumps(name)}, which has no place in a bot; nothing was imported")


def _bundle_of(path: Path, contents: dict[str, bytes]) -> Bundle:
    if MANIFEST not in contents:
        raise BotError(f"{path} has no {MANIFEST}: it is not a bot file")
    try:
        manifest = json.loads(contents.pop(MANIFEST).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BotError(f"{MANIFEST} in {path} is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or \
            not isinstance(manifest.get("name"), str) or not isinstance(manifest.get("entry"), dict):
        raise BotError(f"{MANIFEST} in {path} is not a bot file of format {FORMAT}")
    soul = contents.pop(SOUL, None)
    bundle = Bundle(manifest["name"], manifest["entry"], _decoded(SOUL, soul) if soul is not None else None, contents)
    for slug in sorted({name.split("/")[1] for name in contents}):
        skill = f"{SKILLS}/{slug}/{SKILL_FILE}"
        if skill not in contents:
            raise BotError(f"skills/{slug} in {path} has no {SKILL_FILE}")
        _check_skill(slug, _decoded(skill, contents[skill]))
    return bundle


def _check_skill(slug: str, text: str) -> None:
    front, _ = split_front_matter(text)
    try:
        meta = yaml_load.safe_load(front) if front is not None else None
    except yaml.YAMLError:
        meta = None
    if not isinstance(meta, dict) or meta.get("name") != slug or not isinstance(meta.get("description"), str):
        raise BotError(f"skills/{slug}/{SKILL_FILE} is not a skill named {slug} (front matter with name: and "
                       "description:)")


def _decoded(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BotError(f"{name} in the bot file is not UTF-8 text") from None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BotError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None


# -- import: the plan, shown, then done ----------------------------------------------------------------------


@dataclass
class Plan:
    name: str
    config_path: Path
    entry: dict[str, Any]
    bundle: Bundle
    risks: list[str] = field(default_factory=list)    # what loosens confinement
    notes: list[str] = field(default_factory=list)    # what was left out, and why

    def describe(self) -> str:
        """Everything the import would add, in full, for the person to read before the question."""
        lines = [f"Import bot {self.name} into {self.config_path} and {bot_dir(self.name)}:", "",
                 *_yaml_lines({"agents": {self.name: self.entry}})]
        lines += [f"⚠ {risk}" for risk in self.risks]
        lines += [f"  ({note})" for note in self.notes]
        if self.bundle.soul is not None:
            lines += ["", f"{MEMORY_DIR}/{SOUL} ({_size(len(self.bundle.soul.encode()))}):",
                      *(f"  │ {line}" for line in self.bundle.soul.splitlines())]
        for path, data in sorted(self.bundle.skills.items()):
            lines.append("")
            if PurePosixPath(path).name == SKILL_FILE:
                lines += [f"{path}:", *(f"  │ {line}" for line in data.decode("utf-8").splitlines())]
            else:
                lines.append(f"{path} ({_size(len(data))})")
        return "\n".join(lines)


def plan_import(bundle: Bundle, config: Config, config_path: Path, name: str | None, cwd: Path) -> Plan:
    """What importing `bundle` as bot `name` (else its own name) would add to `config_path`."""
    name = name or bundle.name
    directory = bot_dir(name)   # refuses a name that cannot be a bot's
    if name in config.agents or name in _file_agents(config_path):
        raise BotError(f"agents.{name} exists already; import under another name with --name")
    if os.path.lexists(directory):
        raise BotError(f"{directory} exists already (a bot of that name); import under another name with --name")
    raw = bundle.entry
    if raw.get("mode") != "bot":
        raise BotError("the file's entry is not a bot's (mode: bot)")
    entry = {key: raw[key] for key in EXPORTED_KEYS if key in raw}
    notes = [f"left out: {key} (an imported bot carries none)" for key in raw if key not in EXPORTED_KEYS]
    for key in MODEL_KEYS:
        model = entry.get(key)
        if isinstance(model, str) and model not in config.models and not _direct_model(config, model):
            del entry[key]
            notes.append(f'left out: model "{model}", which your config does not have; set agents.{name}.model')
    entry["mcp_servers"] = []
    user_document = _document(config_path)
    others = {section: value for section, value in user_document.items() if section != "agents"}
    # The person asked for a bot: it is judged as the same entry would be without `mode: bot`.
    judged = {key: value for key, value in entry.items() if key != "mode"}
    risks = [finding.describe() for finding in trust.find_risks({"agents": {name: judged}}, others, cwd,
                                                                entries.AgentConfig.decode)]
    return Plan(name, config_path, entry, bundle, risks, notes)


def apply_import(plan: Plan, cwd: Path) -> None:
    """Write the bot's files, then its entry; a config that would not load undoes the files."""
    directory = bot_dir(plan.name)
    text = blocks.read_text(plan.config_path) if plan.config_path.exists() else ""
    check_config = config_check(cwd)
    check_config(blocks.with_entry_added(text, "agents", plan.name, plan.entry))   # before any file exists
    directory.mkdir(parents=True)
    try:
        if plan.bundle.soul is not None:
            (directory / MEMORY_DIR).mkdir()
            write_atomically(directory / MEMORY_DIR / SOUL, _owned(plan.bundle.soul, plan.name).encode())
        for path, data in plan.bundle.skills.items():
            target = directory.joinpath(*path.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as file:   # a fresh directory: nothing there to follow or replace
                file.write(data)
        if not plan.config_path.exists():
            plan.config_path.write_text("")
        blocks.add_entry(plan.config_path, "agents", plan.name, plan.entry, check_config)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise


def config_check(cwd: Path):
    """A check that the config text loads, every key and reference of it."""
    def check(text: str) -> None:
        descriptor, probe = tempfile.mkstemp(suffix=".yaml")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(text)
            settings.load(cwd, Path(probe))
        except IotaError as error:
            raise ConfigError(f"the config would not load with the bot's entry: {error}") from None
        finally:
            Path(probe).unlink(missing_ok=True)
    return check


def _owned(soul: str, name: str) -> str:
    """SOUL.md with its front matter's `bot:` (if it has one) naming the bot it now belongs to."""
    doc = MemoryDoc.parse(soul)
    if doc.front is None or doc.owner() is None:
        return soul
    front = [f"bot: {name}" if line.partition(":")[0].strip() == "bot" else line for line in doc.front]
    return f"---\n{join_lines(front)}---\n{doc.body_text()}"


def _document(path: Path) -> dict[str, Any]:
    try:
        document = yaml_load.safe_load(blocks.read_text(path)) if path.exists() else {}
    except yaml.YAMLError:
        raise ConfigError(f"{path} is not valid YAML; fix it first (`iota config check -c {path}`)") from None
    return document if isinstance(document, dict) else {}


def _file_agents(path: Path) -> dict[str, Any]:
    return blocks.entries(path, blocks.read_text(path), "agents") if path.exists() else {}


def _direct_model(config: Config, reference: str) -> bool:
    provider, colon, model_id = reference.partition(":")
    return bool(colon and model_id) and provider in config.providers


def _size(size: int) -> str:
    return f"{size} bytes" if size < 1024 else f"{kib(size)} KiB"


def _yaml_lines(document: dict[str, Any]) -> list[str]:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100).splitlines()
