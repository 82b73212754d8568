"""YAML read with PyYAML's safe loader in C (libyaml) where PyYAML was built with it, which reads
a config or a skill's front matter many times faster than the pure-Python one (the fallback).
Both raise `yaml.YAMLError` with the same `problem_mark`."""

from __future__ import annotations

from typing import Any

import yaml

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """The YAML document in `text`, as `yaml.safe_load` reads it."""
    return yaml.load(text, Loader=_SAFE_LOADER)
