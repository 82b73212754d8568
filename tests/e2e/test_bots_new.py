"""`iota bots new`: the flag form, the questions in a real terminal, and the refusals."""

from __future__ import annotations

import re

from iota import yaml_load
from iota.bots.bot import bot_dir
from tests.e2e.conftest import IOTA
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

CONFIG_TAIL = "  coder:   # the person's comment\n    mode: agent\n    model: m\n# the end\n"


def models_config(iota) -> str:
    path = iota.write_config(CONFIG_TAIL)
    text = path.read_text().replace("models:\n", "models:\n  other: {provider: fake, id: other-model}\n")
    path.write_text(text)
    return text


def test_the_flag_form_writes_the_entry_and_keeps_every_other_byte(iota):
    before = models_config(iota)
    done = iota("bots", "new", "scout", "--model", "m", "--tools", "code,shell", "--unattended", "full")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Added bot scout to ~/.iota.yaml (model m; code, shell; full). Start it: iota run scout\n"
    after = (iota.home / ".iota.yaml").read_text()
    assert after.startswith(before.removesuffix("# the end\n"))   # comments and all, unchanged
    assert yaml_load.safe_load(after)["agents"]["scout"] == {
        "mode": "bot", "model": "m",
        "tools": {"code": {"auto_write": True}, "shell": {"sandbox": "auto", "auto_run": True}}}
    assert "# the person's comment" in after and "# the end" in after
    listed = iota("bots").stdout
    assert re.search(r"^  scout\s+m · not run yet$", listed, re.MULTILINE), listed
    assert iota("config", "check").returncode == 0


def test_yes_takes_the_safe_defaults(iota):
    models_config(iota)
    done = iota("bots", "new", "scout", "-y")
    assert done.returncode == 0, done.stderr
    assert yaml_load.safe_load((iota.home / ".iota.yaml").read_text())["agents"]["scout"] == {
        "mode": "bot", "model": "other", "tools": {"code": {"auto_write": True}, "shell": {"sandbox": "auto"}}}
    none = iota("bots", "new", "bare", "-y", "--tools", "none")
    assert none.returncode == 0, none.stderr
    assert yaml_load.safe_load((iota.home / ".iota.yaml").read_text())["agents"]["bare"] == {"mode": "bot", "model": "other"}


def test_refusals_are_one_line_and_change_nothing(iota):
    before = models_config(iota)
    bot_dir("old").mkdir(parents=True)
    for argv, message in [
        (["coder"], "Error: agents.coder exists already (mode: agent); pick another name\n"),
        (["old"], f"Error: {bot_dir('old')} exists already (a bot of that name ran before); pick another name, "
                  "or `iota bots rm old` first\n"),
        (["scout", "--model", "nope"], 'Error: unknown model "nope" (models: other, m)\n'),
        (["scout", "--tools", "code,web"], 'Error: unknown toolset "web" (toolsets: code, shell, or none)\n'),
        (["scout", "--unattended", "always"], 'Error: unknown answer "always" (how unattended: ask, confined, full)\n'),
    ]:
        done = iota("bots", "new", *argv, "-y")
        assert (done.returncode, done.stderr) == (1, message), argv
    bad_name = iota("bots", "new", "../up", "-y")
    assert bad_name.returncode == 1 and bad_name.stderr.count("\n") == 1, bad_name.stderr
    assert (iota.home / ".iota.yaml").read_text() == before


def test_the_questions_on_a_terminal(iota, terminal):
    models_config(iota)
    screen = terminal.start([IOTA, "bots", "new", "scout"], cols=120, rows=30, env=iota.env(), cwd=iota.cwd)
    screen.wait_for("Model for scout (other, m) [other]:")
    screen.type("gpt-9")
    screen.send_keys("Enter")
    screen.wait_for('unknown model "gpt-9" (models: other, m)')
    screen.type("m")
    screen.send_keys("Enter")
    screen.wait_for("  shell  run commands, confined to the project by the sandbox")
    screen.wait_for("Toolsets (code, shell, or none) [code,shell]:")
    screen.type("code")
    screen.send_keys("Enter")
    screen.wait_for("  confined  edits land without a yes; commands run in the sandbox, and ask where there "
                    "is none (the default)")
    screen.send_keys("Enter")
    screen.wait_for("Added bot scout to ~/.iota.yaml (model m; code; confined). Start it: iota run scout")
    assert screen.wait_for_exit() == 0
    assert yaml_load.safe_load((iota.home / ".iota.yaml").read_text())["agents"]["scout"] == {
        "mode": "bot", "model": "m", "tools": {"code": {"auto_write": True}}}
