"""The layered parameters' sources (`param_sources`): written with a new session, kept by a /model
switch where the person set a value by hand, and replayed — not evaluated again — on resume."""

from __future__ import annotations

import json

from iota.chat import prepare_chat
from iota.config import entries, params, settings
from iota.config.params import ParamSources
from iota.messages import Message
from iota.sessions.bundle import Session

CONFIG = """\
providers:
  oa: {type: openai, key: k}
models:
  big: {provider: oa, id: big-1, context_window: 1m, effort: high}
  plain: {provider: oa, id: plain-1}
agents:
  chat: {model: big, temperature: 0.3}
"""


def load(fake_home, project, text: str = CONFIG):
    (fake_home / ".iota.yaml").write_text(text)
    return settings.load(project)


def test_a_new_session_records_each_value_and_where_it_came_from(fake_home, tmp_path):
    loaded = load(fake_home, tmp_path)
    setup = prepare_chat(loaded, loaded.agents["chat"], tmp_path)
    session = setup.new_session()
    session.append([Message("user", "hi")])
    meta = json.loads((session.dir / "meta.json").read_text())
    assert (meta["context_window"], meta["effort"], meta["temperature"]) == (1_000_000, "high", 0.3)
    assert meta["param_sources"] == {"context_window": "config", "effort": "config", "temperature": "config",
                                     "top_p": "builtin"}
    assert list(meta).index("param_sources") > list(meta).index("agent")
    session.close()


def test_a_switch_drops_what_the_old_models_config_gave_and_keeps_what_was_set_by_hand(fake_home, tmp_path):
    loaded = load(fake_home, tmp_path)
    setup = prepare_chat(loaded, loaded.agents["chat"], tmp_path)
    setup.model = params.set_by_hand(setup.model, top_p=0.9)
    setup.switch_model("plain")
    model = setup.model
    # The window and effort came from `big`'s entry: `plain` says nothing, so they go.
    assert (model.context_window, model.effort) == (entries.DEFAULT_CONTEXT_WINDOW, None)
    # The agent's temperature is config for any model; top_p was the person's own.
    assert (model.temperature, model.top_p) == (0.3, 0.9)
    assert model.param_sources == ParamSources(context_window="builtin", effort="builtin", temperature="config",
                                               top_p="user")


def test_a_resume_replays_the_bundles_values_not_the_config(fake_home, tmp_path):
    loaded = load(fake_home, tmp_path)
    setup = prepare_chat(loaded, loaded.agents["chat"], tmp_path)
    setup.model = params.set_by_hand(setup.model, effort="low", temperature=0.0)
    meta = {**Session.new(tmp_path, **setup.model.meta_fields()).meta}
    # The config changes after the session was written; the resume does not follow it.
    changed = load(fake_home, tmp_path, CONFIG.replace("effort: high", "effort: medium").replace(
        "temperature: 0.3", "temperature: 0.8"))
    meta.pop("temperature")  # meta.json leaves a zero out, as the Rust iota does
    resumed = prepare_chat(changed, changed.agents["chat"], tmp_path, replay=meta).model
    assert (resumed.context_window, resumed.effort, resumed.temperature, resumed.top_p) == (1_000_000, "low", 0.0, None)
    assert resumed.param_sources == ParamSources(context_window="config", effort="user", temperature="user")
    fresh = prepare_chat(changed, changed.agents["chat"], tmp_path).model
    assert (fresh.effort, fresh.temperature) == ("medium", 0.8)


def test_a_bundle_from_before_param_sources_reads_its_values_as_the_persons_own(fake_home, tmp_path):
    loaded = load(fake_home, tmp_path)
    legacy = {"provider": "oa", "model": "big-1", "context_window": 64_000, "effort": "low"}
    model = prepare_chat(loaded, loaded.agents["chat"], tmp_path, replay=legacy).model
    assert (model.context_window, model.effort, model.temperature) == (64_000, "low", None)
    assert model.param_sources == ParamSources(context_window="user", effort="user")


def test_minus_M_on_resume_evaluates_the_config_for_the_model_it_names(fake_home, tmp_path):
    loaded = load(fake_home, tmp_path)
    meta = {"provider": "oa", "model": "big-1", "context_window": 64_000,
            "param_sources": {"context_window": "user"}}
    model = prepare_chat(loaded, loaded.agents["chat"], tmp_path, model_override="plain", replay=meta).model
    assert model.context_window == entries.DEFAULT_CONTEXT_WINDOW
