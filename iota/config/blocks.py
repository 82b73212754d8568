"""Adding an entry to (or removing one from) one top-level block of a config file — `mcp_servers:`
for `iota mcp add|remove`, `agents:` for `iota bots import` — leaving every other byte of the file —
comments, blank lines, key order, quoting — as it was. Keys are never written by these commands.

A YAML round trip would lose the comments, so the change is made to the text. The YAML composer
still does the reading: it gives each node's first and last line, so the block and each entry
in it are found by what the parser saw, not by guessing at indentation. A node ends where the
next token starts, which is past any comments and blank lines that follow it; those are given
back to what comes next.

    block style (the usual)       an entry is inserted after the last one, in the block's own
                                  indentation; a removed entry's lines are cut out
    `agents:` with nothing        the entry goes under the key line
    `mcp_servers: {}`, flow       the block alone is written out again in block style
    no such block at all          a block is appended to the file

An entry is written in block style, a mapping a level deeper at each depth, lists in flow style,
a text quoted only where YAML needs it (a multi-line one as a JSON string). Every rewrite is
checked before it is written: the new text must parse to the old document with exactly the one
change (and pass the caller's `check`, which may load it as a config), or the file is left alone
and the person is told to edit it by hand.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from iota import yaml_load
from iota.errors import ConfigError


def add_entry(path: Path, key: str, name: str, entry: dict[str, Any],
              check: Callable[[str], None] = lambda text: None) -> None:
    """Add `name` to the file's `key:` block. The caller has made sure the name is new; `check`
    gets the new text before it is written, and refuses it by raising."""
    text = read_text(path)
    _write(path, key, with_entry_added(text, key, name, entry), _expected(path, text, key, name, entry), check)


def remove_entry(path: Path, key: str, name: str) -> None:
    """Remove `name` from the file's `key:` block (the caller has made sure it is there)."""
    text = read_text(path) if path.exists() else ""
    _write(path, key, with_entry_removed(text, key, name), _expected(path, text, key, name, None))


def entries(path: Path, text: str, key: str) -> dict[str, Any]:
    """The entries of the `key:` block of `text` (the file at `path`), by name."""
    try:
        document = yaml_load.safe_load(text) or {}
    except yaml.YAMLError:
        raise ConfigError(f"{path} is not valid YAML; fix it first (`iota config check -c {path}`)") from None
    found = document.get(key) if isinstance(document, dict) else None
    if found is not None and not isinstance(found, dict):
        raise ConfigError(f"{path}: {key}: want a mapping of names to entries")
    return found or {}


def read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")  # as it is: no newline translation
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path} ({getattr(error, 'strerror', None) or error})") from None


def with_entry_added(text: str, key: str, name: str, entry: dict[str, Any]) -> str:
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if "\r\n" in text else "\n"
    key_node, value = _find_block(text, key)
    if key_node is None:
        head = text if not text or text.endswith(("\n", "\r")) else text + newline
        gap = newline if head.strip() and lines[-1].strip() else ""
        return head + gap + f"{key}:{newline}" + _render_entry(name, entry, 2, newline)
    if _is_block_mapping(value):
        indent = value.value[0][0].start_mark.column
        at = _end_line(lines, value.start_mark.line, value.end_mark)
        return "".join(lines[:at]) + _ended(lines[at - 1], newline) \
            + _render_entry(name, entry, indent, newline) + "".join(lines[at:])
    if _is_empty(value):
        at = key_node.start_mark.line + 1
        return "".join(lines[:at]) + _ended(lines[at - 1], newline) \
            + _render_entry(name, entry, 2, newline) + "".join(lines[at:])
    # Flow style (`mcp_servers: {}`): write the block out again, in block style.
    others = yaml_load.safe_load(text)[key] or {}
    block = f"{key}:{newline}" + "".join(
        _render_entry(other, fields, 2, newline) for other, fields in {**others, name: entry}.items())
    start, end = key_node.start_mark.line, _end_line(lines, key_node.start_mark.line, value.end_mark)
    return "".join(lines[:start]) + block + "".join(lines[end:])


def with_entry_removed(text: str, key: str, name: str) -> str:
    lines = text.splitlines(keepends=True)
    key_node, value = _find_block(text, key)
    if not _is_block_mapping(value):
        # Flow style: the block alone is written out again without the entry.
        newline = "\r\n" if "\r\n" in text else "\n"
        others = {other: fields for other, fields in (yaml_load.safe_load(text)[key] or {}).items() if other != name}
        block = f"{key}:{newline}" + "".join(_render_entry(other, fields, 2, newline)
                                              for other, fields in others.items())
        start, end = key_node.start_mark.line, _end_line(lines, key_node.start_mark.line, value.end_mark)
        return "".join(lines[:start]) + block + "".join(lines[end:])
    for entry_key, entry_value in value.value:
        if entry_key.value == name:
            start = entry_key.start_mark.line
            end = _end_line(lines, start, entry_value.end_mark)
            return "".join(lines[:start]) + "".join(lines[end:])
    raise ConfigError(f'no entry "{name}" in the {key}: block')


def _find_block(text: str, key: str) -> tuple[Any, Any]:
    """The top-level `key` node and its value node, or (None, None)."""
    try:
        document = yaml.compose(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"the file is not valid YAML ({error.__class__.__name__}); fix it first") from None
    if document is None:
        return None, None
    if not isinstance(document, yaml.MappingNode):
        raise ConfigError("the file is not a mapping of providers:, models:, agents:, mcp_servers:")
    for key_node, value in document.value:
        if key_node.value == key:
            return key_node, value
    return None, None


def _is_block_mapping(node: Any) -> bool:
    return isinstance(node, yaml.MappingNode) and not node.flow_style and bool(node.value)


def _is_empty(node: Any) -> bool:
    """`agents:` with nothing after it (a comment at most)."""
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
    """One entry in block style: `name:` at `indent`, its keys one level in (a mapping's keys a
    level further, at each depth), lists in flow style, nothing after a key whose value is null."""
    return "".join(line + newline for line in _render_mapping({name: fields}, indent, indent))


def _render_mapping(mapping: dict[str, Any], column: int, step: int) -> list[str]:
    pad, out = " " * column, []
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            out.append(f"{pad}{_scalar(key)}:")
            out += _render_mapping(value, column + step, step)
        elif isinstance(value, dict):
            out.append(f"{pad}{_scalar(key)}: {{}}")
        elif isinstance(value, list):
            out.append(f"{pad}{_scalar(key)}: [{', '.join(_scalar(item) for item in value)}]")
        elif value is None:
            out.append(f"{pad}{_scalar(key)}:")
        else:
            out.append(f"{pad}{_scalar(key)}: {_scalar(value)}")
    return out


def _scalar(value: Any) -> str:
    """A value as YAML reads it back: plain when that is unambiguous in a block and in a flow
    list, else double-quoted (a JSON string is a YAML double-quoted scalar)."""
    if not isinstance(value, str):
        return json.dumps(value)
    if re.fullmatch(r"[A-Za-z0-9_./@+=~-][A-Za-z0-9_./@+=~:-]*", value):
        try:
            if yaml_load.safe_load(f"k: {value}") == {"k": value} and yaml_load.safe_load(f"[{value}]") == [value]:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value, ensure_ascii=False)


def _expected(path: Path, text: str, key: str, name: str, entry: dict[str, Any] | None) -> dict[str, Any]:
    """The document the rewrite must parse to: the old one with `name` added (or removed)."""
    document = yaml_load.safe_load(text) or {}
    block = dict(entries(path, text, key))
    if entry is None:
        del block[name]
    else:
        block[name] = entry
    document[key] = block
    return _normal(document, key)


def _write(path: Path, key: str, text: str, expected: dict[str, Any],
           check: Callable[[str], None] = lambda text: None) -> None:
    """Write `text` over the file (through a symlink, to the file it names) if it reads back as
    `expected` and passes `check`; the file is replaced in one step, keeping its permissions."""
    try:
        written = yaml_load.safe_load(text) or {}
    except yaml.YAMLError:
        written = None
    if _normal(written, key) != expected:
        raise ConfigError(f"could not change the {key}: block of {path} safely; edit the file by hand")
    check(text)
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


def _normal(document: Any, key: str) -> Any:
    """A document without an empty `key:` block (None, {} or absent all mean no entries)."""
    if isinstance(document, dict) and not document.get(key):
        return {other: value for other, value in document.items() if other != key}
    return document
