"""`iota mcp add` and `iota mcp remove`: change the `mcp_servers:` block of a config file and
leave every other byte of it — comments, blank lines, key order, quoting — as it was.

A YAML round trip would lose the comments, so the change is made to the text. The YAML composer
still does the reading: it gives each node's first and last line, so the block and each entry
in it are found by what the parser saw, not by guessing at indentation. A node ends where the
next token starts, which is past any comments and blank lines that follow it; those are given
back to what comes next.

    block style (the usual)       an entry is inserted after the last one, in the block's own
                                  indentation; a removed entry's lines are cut out
    `mcp_servers:` with nothing   the entry goes under the key line
    `mcp_servers: {}`, flow       the block alone is written out again in block style
    no `mcp_servers:` at all      a block is appended to the file

Every rewrite is checked before it is written: the new text must parse to the old document with
exactly the one change, or the file is left alone and the user is told to edit it by hand.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from iota.errors import ConfigError

KEY = "mcp_servers"
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+")


def add_server(path: Path, name: str, entry: dict[str, Any]) -> None:
    """Add `name` to the file's servers; refused when the file already has one by that name."""
    if not SERVER_NAME.fullmatch(name):
        raise ConfigError(f'MCP server names may use letters, digits, - and _ (got "{name}")')
    text = _read(path)
    if name in _servers(path, text):
        raise ConfigError(f'MCP server "{name}" already exists in {path}; remove it first with '
                          f"`iota mcp remove {name}`")
    _write(path, with_server_added(text, name, entry), _expected(path, text, name, entry))


def remove_server(path: Path, name: str) -> None:
    """Remove `name` from the file's servers; refused when the file has none by that name."""
    text = _read(path) if path.exists() else ""
    servers = _servers(path, text)
    if name not in servers:
        configured = ", ".join(servers) or "none"
        raise ConfigError(f'no MCP server "{name}" in {path} (configured there: {configured})')
    _write(path, with_server_removed(text, name), _expected(path, text, name, None))


def with_server_added(text: str, name: str, entry: dict[str, Any]) -> str:
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if "\r\n" in text else "\n"
    key, value = _find_block(text)
    if key is None:
        head = text if not text or text.endswith(("\n", "\r")) else text + newline
        gap = newline if head.strip() and lines[-1].strip() else ""
        return head + gap + f"{KEY}:{newline}" + _render_entry(name, entry, 2, newline)
    if _is_block_mapping(value):
        indent = value.value[0][0].start_mark.column
        at = _end_line(lines, value.start_mark.line, value.end_mark)
        return "".join(lines[:at]) + _ended(lines[at - 1], newline) \
            + _render_entry(name, entry, indent, newline) + "".join(lines[at:])
    if _is_empty(value):
        at = key.start_mark.line + 1
        return "".join(lines[:at]) + _ended(lines[at - 1], newline) \
            + _render_entry(name, entry, 2, newline) + "".join(lines[at:])
    # Flow style (`mcp_servers: {}`): write the block out again, in block style.
    servers = yaml.safe_load(text)[KEY] or {}
    block = f"{KEY}:{newline}" + "".join(
        _render_entry(other, fields, 2, newline) for other, fields in {**servers, name: entry}.items())
    start, end = key.start_mark.line, _end_line(lines, key.start_mark.line, value.end_mark)
    return "".join(lines[:start]) + block + "".join(lines[end:])


def with_server_removed(text: str, name: str) -> str:
    lines = text.splitlines(keepends=True)
    key, value = _find_block(text)
    if not _is_block_mapping(value):
        # Flow style: the block alone is written out again without the entry.
        newline = "\r\n" if "\r\n" in text else "\n"
        servers = {other: fields for other, fields in (yaml.safe_load(text)[KEY] or {}).items() if other != name}
        block = f"{KEY}:{newline}" + "".join(_render_entry(other, fields, 2, newline)
                                              for other, fields in servers.items())
        start, end = key.start_mark.line, _end_line(lines, key.start_mark.line, value.end_mark)
        return "".join(lines[:start]) + block + "".join(lines[end:])
    for entry_key, entry_value in value.value:
        if entry_key.value == name:
            start = entry_key.start_mark.line
            end = _end_line(lines, start, entry_value.end_mark)
            return "".join(lines[:start]) + "".join(lines[end:])
    raise ConfigError(f'no MCP server "{name}" in the mcp_servers: block')


def _find_block(text: str) -> tuple[Any, Any]:
    """The top-level `mcp_servers` key node and its value node, or (None, None)."""
    try:
        document = yaml.compose(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"the file is not valid YAML ({error.__class__.__name__}); fix it first") from None
    if document is None:
        return None, None
    if not isinstance(document, yaml.MappingNode):
        raise ConfigError("the file is not a mapping of providers:, models:, agents:, mcp_servers:")
    for key, value in document.value:
        if key.value == KEY:
            return key, value
    return None, None


def _is_block_mapping(node: Any) -> bool:
    return isinstance(node, yaml.MappingNode) and not node.flow_style and bool(node.value)


def _is_empty(node: Any) -> bool:
    """`mcp_servers:` with nothing after it (a comment at most)."""
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null") and node.value == ""


def _end_line(lines: list[str], start: int, end_mark: Any) -> int:
    """The line after a node's last line: where its end mark stands, unless that is in the middle
    of a line, without the blank and comment-only lines before it (they belong to what follows)."""
    end = end_mark.line
    if end < len(lines) and lines[end][: end_mark.column].strip():
        end += 1
    end = min(end, len(lines))
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return end


def _ended(line: str, newline: str) -> str:
    """What a last line needs before something is put under it: its newline, if it had none."""
    return "" if line.endswith(("\n", "\r")) else newline


def _render_entry(name: str, fields: dict[str, Any], indent: int, newline: str) -> str:
    """One entry in block style: `name:` at `indent`, its keys one level in, lists in flow style."""
    pad, inner = " " * indent, " " * (indent * 2)
    out = [f"{pad}{_scalar(name)}:"]
    for key, value in (fields or {}).items():
        if isinstance(value, dict):
            out.append(f"{inner}{key}:")
            out.extend(f"{inner}{' ' * indent}{_scalar(k)}: {_scalar(v)}" for k, v in value.items())
        elif isinstance(value, list):
            out.append(f"{inner}{key}: [{', '.join(_scalar(item) for item in value)}]")
        else:
            out.append(f"{inner}{key}: {_scalar(value)}")
    return "".join(line + newline for line in out)


def _scalar(value: Any) -> str:
    """A value as YAML reads it back: plain when that is unambiguous in a block and in a flow
    list, else double-quoted (a JSON string is a YAML double-quoted scalar)."""
    if not isinstance(value, str):
        return json.dumps(value)
    if re.fullmatch(r"[A-Za-z0-9_./@+=~-][A-Za-z0-9_./@+=~:-]*", value):
        try:
            if yaml.safe_load(f"k: {value}") == {"k": value} and yaml.safe_load(f"[{value}]") == [value]:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value, ensure_ascii=False)


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")  # as it is: no newline translation
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path} ({getattr(error, 'strerror', None) or error})") from None


def _servers(path: Path, text: str) -> dict[str, Any]:
    try:
        document = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        raise ConfigError(f"{path} is not valid YAML; fix it first (`iota config check -c {path}`)") from None
    servers = document.get(KEY) if isinstance(document, dict) else None
    if servers is not None and not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcp_servers: want a mapping of names to entries")
    return servers or {}


def _expected(path: Path, text: str, name: str, entry: dict[str, Any] | None) -> dict[str, Any]:
    """The document the rewrite must parse to: the old one with `name` added (or removed)."""
    document = yaml.safe_load(text) or {}
    servers = dict(_servers(path, text))
    if entry is None:
        del servers[name]
    else:
        servers[name] = entry
    document[KEY] = servers
    return _normal(document)


def _write(path: Path, text: str, expected: dict[str, Any]) -> None:
    """Write `text` over the file (through a symlink, to the file it names) if it reads back as
    `expected`; the file is replaced in one step, keeping its permissions."""
    try:
        written = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        written = None
    if _normal(written) != expected:
        raise ConfigError(f"could not change the mcp_servers: block of {path} safely; edit the file by hand")
    target = path.resolve()
    mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as file:
            file.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _normal(document: Any) -> Any:
    """A document without an empty `mcp_servers:` (None, {} or absent all mean no servers)."""
    if isinstance(document, dict) and not document.get(KEY):
        return {key: value for key, value in document.items() if key != KEY}
    return document
