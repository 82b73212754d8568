"""`/debug`, `/skills <name>` and `/model`'s Top P and System tabs end to end: the real `iota` in
tmux against the fake model server."""

from __future__ import annotations

import json
import re

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

EDITOR = """\
#!/bin/sh
printf 'EDITOR OPEN\\n'
IFS= read -r line
printf 'Answer in French.\\n' > "$1"
"""


def start(iota, terminal, *args: str, **env: str):
    screen = terminal.start([IOTA, *args], cols=120, rows=40, env=iota.env(**env), cwd=iota.cwd)
    screen.wait_for(READY)
    return screen


def enter(screen, text: str) -> None:
    screen.type(text)
    screen.send_keys("Enter")


def test_debug_records_each_round_trip_in_the_bundle(iota, terminal):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("A private answer.")
    screen = start(iota, terminal, "run", "chat")
    enter(screen, "/debug on")
    screen.wait_for("Debug on: each round trip is recorded in ")
    screen.wait_for(re.compile(r"· debug$", re.MULTILINE))
    enter(screen, "my secret question")
    screen.wait_for("A private answer.")
    enter(screen, "/debug")
    screen.wait_for(re.compile(r"fake-model  1 msgs, 0\.0 KB → end_turn, 17 B, 0 calls  in 10 out 5"))
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    (bundle,) = [p for p in paths.sessions_dir().iterdir() if (p / "meta.json").exists()]
    (entry,) = [json.loads(line) for line in (bundle / "debug.jsonl").read_text().splitlines()]
    assert entry["response"]["text_bytes"] == len("A private answer.")
    text = (bundle / "debug.jsonl").read_text()
    assert "secret question" not in text and "private answer" not in text and "test-key" not in text


def test_skills_runs_a_skill_with_the_instructions_after_its_body(iota, terminal):
    skill = iota.cwd / ".agents" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release\ndescription: cut a release\n---\nTag and push.\n")
    iota.write_config("  coder: {mode: agent, model: m}\n")
    iota.model.reply("Released.")
    screen = start(iota, terminal, "run", "coder")
    enter(screen, "/skills release v2.1 only")
    screen.wait_for("Released.")
    assert iota.model.requests[0].body["messages"][-1] == {"role": "user", "content": "Tag and push.\n\nv2.1 only"}
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_model_sets_top_p_and_the_system_tab_edits_the_instructions(iota, terminal, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    iota.write_config("  chat: {model: m, system: Be terse.}\n")
    iota.model.reply("Bonjour.")
    screen = start(iota, terminal, "run", "chat", EDITOR=str(editor), VISUAL="")
    enter(screen, "/model")
    screen.wait_for("5. Top P (default)")
    screen.send_keys("5")
    screen.wait_for("4. 0.9")
    screen.send_keys("4")
    screen.wait_for("Model: m (200k window, top_p 0.9) — for this process")
    enter(screen, "/model")
    screen.wait_for("6. System prompt")
    screen.send_keys("6")
    shown = screen.wait_for("1. Edit the instructions in $EDITOR (for this process)")
    assert "System prompt" in shown and "Be terse." in shown  # no tools: the prompt goes bare
    screen.send_keys("1")
    screen.wait_for("EDITOR OPEN")
    screen.send_keys("Enter")
    screen.wait_for("Instructions changed for this process (the config and the session are not changed)")
    enter(screen, "hello")
    screen.wait_for("Bonjour.")
    body = iota.model.requests[0].body
    assert body["top_p"] == 0.9
    assert "Answer in French." in body["messages"][0]["content"] and "Be terse." not in body["messages"][0]["content"]
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
