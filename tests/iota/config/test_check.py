"""`iota config check` says what `iota run` would refuse, not only whether the file loads."""

from __future__ import annotations

from pathlib import Path

from ui.cli import main

BASE = """\
providers: {oa: {type: openai}}
models:
  gpt: {provider: oa, id: gpt-5.2}
  small: {provider: oa, id: tiny, context_window: 16k}
agents:
  default: {model: gpt}
"""


def check(capsys, tmp_path: Path, agents: str) -> tuple[int, str, str]:
    path = tmp_path / "iota.yaml"
    path.write_text(BASE + agents)
    status = main(["config", "check", "-c", str(path)])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_config_every_agent_starts_from_passes(capsys, tmp_path):
    status, out, err = check(capsys, tmp_path, "  coder: {mode: bot, model: gpt}\n")
    assert (status, err) == (0, "")
    assert out.endswith("OK: 1 provider(s), 2 model(s), 2 agent(s), 0 mcp server(s)\n")


def test_a_bot_with_no_save_passes_the_load_but_not_the_check(capsys, tmp_path):
    status, out, err = check(capsys, tmp_path, "  coder: {mode: bot, model: gpt, no_save: true}\n")
    assert status == 1
    assert err == "Error: iota run coder would refuse to start: agents.coder: no_save contradicts mode: bot\n"
    assert "OK:" not in out


def test_each_refusal_is_a_line_of_its_own(capsys, tmp_path):
    status, _, err = check(capsys, tmp_path, (
        "  coder: {mode: bot, model: small}\n"
        "  helper: {mode: bot, model: gpt, context_window: 8200}\n"
        "  nomodel: {}\n"
        f"  writer: {{model: gpt, system_file: {tmp_path}/missing.md}}\n"))
    assert status == 1
    assert err.splitlines() == [
        'Error: iota run coder would refuse to start: bot "coder" needs a context window of at least 32k, '
        "this one is 16k (context_window: in its config)",
        'Error: iota run helper would refuse to start: bot "helper" needs a context window of at least 32k, '
        "this one is 8.2k (context_window: in its config)",
        "Error: iota run nomodel would refuse to start: no model chosen: set agents.nomodel.model or pass -M",
        f"Error: iota run writer would refuse to start: config {tmp_path}/iota.yaml: agents.writer.system_file: "
        f"cannot read {tmp_path}/missing.md (No such file or directory)",
    ]
