"""The four layered parameters — `context_window`, `effort`, `temperature`, `top_p` — and where
each value a session runs under came from (the Rust iota's `ParamSources`).

    builtin   nothing declared it and nobody set it: the built-in default (128k, or left out)
    config    a config declaration: the agent's entry, else its model's
    user      set by hand in `/model`

The value alone cannot say what a later `/model` switch should do with it: a window inherited
from one model's entry must not follow the person to a model whose entry is silent, while one
they picked by hand must. So every value carries its source, and meta.json records the four
sources beside the values:

    "param_sources": {"context_window": "config", "effort": "user", "temperature": "builtin", "top_p": "builtin"}

A session starts from the config (`evaluate`). A switch evaluates the new model's config again
and keeps what the person set by hand where the new config is silent (`carry_over`). A plain
resume does not evaluate at all: the bundle's values and their sources replay (`replay`). A
bundle written before the key existed has every value it carries read as the person's own, the
reading that can lose nothing they chose. (Bots are the exception: config wins at every start.)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, TypeVar

PARAMS = ("context_window", "effort", "temperature", "top_p")
BUILTIN, CONFIG, USER = "builtin", "config", "user"
SOURCES = (BUILTIN, CONFIG, USER)


@dataclass(frozen=True)
class ParamSources:
    context_window: str = BUILTIN
    effort: str = BUILTIN
    temperature: str = BUILTIN
    top_p: str = BUILTIN

    def to_record(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in PARAMS}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> ParamSources:
        """The sources a bundle recorded; for one written before they were, every value it holds
        is the person's own."""
        recorded = meta.get("param_sources")
        if not isinstance(recorded, dict):
            return cls(**{name: BUILTIN if meta.get(name) in (None, "") else USER for name in PARAMS})
        return cls(**{name: recorded.get(name) if recorded.get(name) in SOURCES else BUILTIN for name in PARAMS})


def evaluate(*layers: Any) -> ParamSources:
    """The sources of a fresh evaluation: `config` for each parameter some layer (an agent or a
    model entry) declares, else `builtin`."""
    return ParamSources(**{name: CONFIG if any(getattr(layer, name) not in (None, "") for layer in layers)
                           else BUILTIN for name in PARAMS})


Model = TypeVar("Model")


def set_by_hand(model: Model, **values: Any) -> Model:
    """`model` with `values` set in /model: the person's own from now on."""
    sources = dataclasses.replace(model.param_sources, **{name: USER for name in values})
    return dataclasses.replace(model, **values, param_sources=sources)


def carry_over(previous: Model, switched: Model) -> Model:
    """A /model switch: the new model as its config evaluates it, but a value the person set by
    hand survives where that config says nothing."""
    kept = {name: getattr(previous, name) for name in PARAMS
            if getattr(previous.param_sources, name) == USER and getattr(switched.param_sources, name) == BUILTIN}
    return set_by_hand(switched, **kept) if kept else switched


def replay(model: Model, meta: dict[str, Any], default_window: int) -> Model:
    """A resumed session's own values and sources, in place of the config's evaluation."""
    sources = ParamSources.from_meta(meta)
    values: dict[str, Any] = {}
    for name in PARAMS:
        value = meta.get(name) if getattr(sources, name) != BUILTIN else None
        if name == "context_window":
            values[name] = value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
                else default_window
        elif name == "effort":
            values[name] = value if isinstance(value, str) and value else None
        elif getattr(sources, name) == BUILTIN:
            values[name] = None
        else:  # meta.json leaves a zero out, as the Rust iota does: a set temperature it lacks is 0.0
            values[name] = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
    return dataclasses.replace(model, **values, param_sources=sources)
