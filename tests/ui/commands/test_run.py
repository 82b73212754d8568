"""`iota run … -m` turns the cyclic garbage collector off while it imports and reads the config
(ui.commands.run): whatever happens then, it is on again when the command returns."""

from __future__ import annotations

import gc

import pytest

from iota.errors import IotaError
from ui.cli import parse
from ui.commands.run import run_command


@pytest.mark.parametrize("config", ["agents: [not, a, mapping]\n", "agents:\n  other: {}\n"],
                         ids=["a broken config", "an unknown agent"])
def test_a_headless_run_that_fails_before_its_turn_leaves_the_collector_on(fake_home, tmp_path, monkeypatch, config):
    (fake_home / ".iota.yaml").write_text(config)
    monkeypatch.chdir(tmp_path)
    assert gc.isenabled()
    with pytest.raises(IotaError):
        run_command(parse(["run", "chat", "-m", "hi"]))
    enabled = gc.isenabled()
    gc.enable()  # for the tests after this one, should it have been left off
    assert enabled
