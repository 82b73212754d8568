"""`iota mcp add|list|get|remove`: only the `mcp_servers:` block of the file changes; every other
byte — comments, blank lines, key order — stays as it was, and the file still loads."""

from __future__ import annotations

import pytest

from iota.config import entries, settings
from iota.errors import ConfigError
from iota.mcp.config_file import add_server, remove_server
from ui.cli import main

HEAD = """\
# My iota config.   (a comment above everything)
providers:
  oa:
    type: openai     # the key is in $OPENAI_API_KEY
  # an old one:
  # an: {type: anthropic}
"""
AGENTS = """\

# Agents come last.
agents:
  default: {model: oa:gpt-5.2}   # the one `iota` runs
  coder:
    model: oa:gpt-5.2
    # tools are off for now
# trailing comment
"""
SERVERS = """\
mcp_servers:    # the servers I use
  # time, from PyPI
  time:
    command: uvx
    args: [mcp-server-time]   # keep it simple
    # env: {TZ: UTC}

  docs:
    url: https://docs.example.com/mcp
"""


def write(tmp_path, text: str):
    path = tmp_path / "iota.yaml"
    path.write_bytes(text.encode())
    return path


def servers(path):
    return settings.load(path.parent, path).mcp_servers


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_adding_to_a_file_without_a_block_appends_one_and_keeps_every_byte(tmp_path):
    original = HEAD + AGENTS
    path = write(tmp_path, original)
    add_server(path, "time", {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"]})
    text = path.read_text()
    assert text == original + "\nmcp_servers:\n  time:\n    command: uvx\n" \
                              "    args: [mcp-server-time, --local-timezone, UTC]\n"
    assert servers(path)["time"].args == ("mcp-server-time", "--local-timezone", "UTC")


def test_adding_to_a_block_inserts_after_its_last_entry_and_keeps_every_other_byte(tmp_path):
    original = HEAD + "\n" + SERVERS + AGENTS
    path = write(tmp_path, original)
    add_server(path, "echo", {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}})
    added = ("  echo:\n    url: http://127.0.0.1:8000/mcp\n    headers:\n"
             "      Authorization: \"Bearer ${env:TOKEN}\"\n")
    assert path.read_text() == HEAD + "\n" + SERVERS + added + AGENTS
    loaded = servers(path)
    assert list(loaded) == ["time", "docs", "echo"]
    assert loaded["echo"].headers == {"Authorization": "Bearer ${env:TOKEN}"}


def test_the_new_entry_follows_the_blocks_own_indentation(tmp_path):
    path = write(tmp_path, "mcp_servers:\n    time:\n        command: uvx\nagents: {}\n")
    add_server(path, "web", {"url": "https://x.example/mcp"})
    assert path.read_text() == ("mcp_servers:\n    time:\n        command: uvx\n"
                                "    web:\n        url: https://x.example/mcp\nagents: {}\n")


def test_adding_to_the_starters_empty_flow_block_writes_that_block_alone_in_block_style(fake_home, capsys):
    run(capsys, "config", "init")
    path = fake_home / ".iota.yaml"
    before = path.read_text()
    assert "mcp_servers: {}\n" in before
    status, out, _ = run(capsys, "mcp", "add", "time", "--", "uvx", "mcp-server-time")
    assert status == 0
    assert out == (f"Added MCP server time to {path} (stdio: uvx mcp-server-time); it starts with the next chat\n")
    assert path.read_text() == before.replace("mcp_servers: {}\n",
                                              "mcp_servers:\n  time:\n    command: uvx\n    args: [mcp-server-time]\n")
    assert servers(path)["time"].command == "uvx"


def test_adding_under_an_empty_key_keeps_its_comment(tmp_path):
    path = write(tmp_path, HEAD + "mcp_servers:   # none yet\n" + AGENTS)
    add_server(path, "time", {"command": "uvx"})
    assert path.read_text() == HEAD + "mcp_servers:   # none yet\n  time:\n    command: uvx\n" + AGENTS


def test_values_are_quoted_only_when_yaml_needs_it_and_read_back_as_given(tmp_path):
    path = write(tmp_path, "")
    args = ["-y", "@scope/server-x", "--root=/tmp/a b", "yes", "1.5", "${cwd}", "a: b", "[x]", "#tag", ""]
    add_server(path, "odd", {"command": "npx", "args": args, "env": {"DEBUG": "true", "KEY": "${env:KEY}"}})
    assert path.read_text().splitlines()[3] == (
        '    args: [-y, "@scope/server-x", "--root=/tmp/a b", "yes", "1.5", "${cwd}", "a: b", "[x]", "#tag", ""]')
    loaded = entries.McpServerConfig(name="odd", command="npx", args=tuple(args), env={"DEBUG": "true", "KEY": "${env:KEY}"})
    assert servers(path)["odd"] == loaded


def test_adding_a_name_that_exists_is_refused_and_the_file_is_untouched(tmp_path):
    path = write(tmp_path, SERVERS)
    with pytest.raises(ConfigError, match=r'^MCP server "time" already exists in .*; remove it first with '
                                          r"`iota mcp remove time`$"):
        add_server(path, "time", {"command": "other"})
    assert path.read_text() == SERVERS


def test_a_name_that_cannot_be_part_of_a_tool_name_is_refused(tmp_path):
    path = write(tmp_path, SERVERS)
    with pytest.raises(ConfigError, match=r'letters, digits, - and _ \(got "my.server"\)'):
        add_server(path, "my.server", {"command": "x"})


def test_removing_cuts_out_only_the_entrys_lines(tmp_path):
    original = HEAD + SERVERS + AGENTS
    path = write(tmp_path, original)
    remove_server(path, "time")
    assert path.read_text() == original.replace(
        "  time:\n    command: uvx\n    args: [mcp-server-time]   # keep it simple\n", "")
    assert list(servers(path)) == ["docs"]
    remove_server(path, "docs")
    assert path.read_text() == original.replace(
        "  time:\n    command: uvx\n    args: [mcp-server-time]   # keep it simple\n", "").replace(
        "  docs:\n    url: https://docs.example.com/mcp\n", "")
    assert servers(path) == {}


def test_removing_from_a_flow_block(tmp_path):
    path = write(tmp_path, HEAD + "mcp_servers: {a: {command: x}, b: {url: 'http://h/mcp'}}\n" + AGENTS)
    remove_server(path, "a")
    assert path.read_text() == HEAD + "mcp_servers:\n  b:\n    url: http://h/mcp\n" + AGENTS


def test_removing_a_missing_name_is_refused(tmp_path):
    path = write(tmp_path, SERVERS)
    with pytest.raises(ConfigError, match=r'^no MCP server "nope" in .* \(configured there: time, docs\)$'):
        remove_server(path, "nope")
    assert path.read_text() == SERVERS


def test_windows_line_endings_stay_windows_line_endings(tmp_path):
    original = (HEAD + SERVERS).replace("\n", "\r\n")
    path = write(tmp_path, original)
    add_server(path, "web", {"url": "https://x.example/mcp"})
    assert path.read_bytes().decode() == original + "  web:\r\n    url: https://x.example/mcp\r\n"


def test_a_symlinked_config_is_changed_where_it_lives(tmp_path):
    real = write(tmp_path, SERVERS)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    real.chmod(0o600)
    add_server(link, "web", {"url": "https://x.example/mcp"})
    assert link.is_symlink()
    assert "  web:\n" in real.read_text()
    assert real.stat().st_mode & 0o777 == 0o600


def test_a_rewrite_that_would_not_read_back_as_intended_is_refused(tmp_path):
    # After a document-end marker the appended block would start a second document.
    original = "providers: {}\n...\n"
    path = write(tmp_path, original)
    with pytest.raises(ConfigError, match=r"could not change the mcp_servers: block of .* safely; edit the file"):
        add_server(path, "time", {"command": "uvx"})
    assert path.read_text() == original


def test_the_cli_adds_lists_gets_and_removes(tmp_path, capsys):
    path = write(tmp_path, HEAD + AGENTS)
    status, out, _ = run(capsys, "mcp", "add", "echo", "--url", "http://127.0.0.1:8000/mcp",
                         "--header", "Authorization=Bearer ${env:TOKEN}", "-c", str(path))
    assert status == 0
    assert out == f"Added MCP server echo to {path} (HTTP: http://127.0.0.1:8000/mcp); it starts with the next chat\n"
    status, _, _ = run(capsys, "-c", str(path), "mcp", "add", "time", "--env", "TZ=UTC", "--",
                         "uvx", "mcp-server-time", "--local-timezone", "UTC")
    assert status == 0
    _, out, _ = run(capsys, "-c", str(path), "mcp", "list")
    assert out == ("MCP servers:\n"
                   "  echo  http · http://127.0.0.1:8000/mcp\n"
                   "  time  stdio · uvx mcp-server-time --local-timezone UTC\n")
    _, out, _ = run(capsys, "-c", str(path), "mcp", "get", "time")
    assert out == (f"time\n  type     stdio\n  command  uvx\n  args     mcp-server-time --local-timezone UTC\n"
                   f"  env TZ   UTC\n  from     {path}\n")
    _, out, _ = run(capsys, "-c", str(path), "mcp", "get", "echo")
    assert out == (f"echo\n  type                  http\n  url                   http://127.0.0.1:8000/mcp\n"
                   f"  header Authorization  Bearer ${{env:TOKEN}}\n  from                  {path}\n")
    status, out, _ = run(capsys, "-c", str(path), "mcp", "remove", "echo")
    assert (status, out) == (0, f"Removed MCP server echo from {path}\n")
    run(capsys, "-c", str(path), "mcp", "remove", "time")
    assert path.read_text() == HEAD + AGENTS + "\nmcp_servers:\n"
    _, out, _ = run(capsys, "-c", str(path), "mcp", "list")
    assert out.startswith("MCP servers:\n  (none: add one with `iota mcp add NAME -- COMMAND…`")


@pytest.mark.parametrize(("argv", "message"), [
    (["mcp", "add", "time", "--", "uvx"], 'Error: MCP server "time" already exists in'),
    (["mcp", "remove", "nope"], 'Error: no MCP server "nope" in'),
    (["mcp", "get", "nope"], 'Error: unknown MCP server "nope" (configured: time, docs)'),
    (["mcp", "add", "x"], "Error: iota mcp add needs a command or a URL"),
    (["mcp", "add", "x", "--url", "http://h/mcp", "--", "uvx"], "Error: iota mcp add takes a command after -- or"),
    (["mcp", "add", "x", "--url", "http://h/mcp", "--header", "nonsense"],
     'Error: --header wants NAME=VALUE, got "nonsense"'),
    (["mcp", "add", "x", "--env", "A=1", "--url", "http://h/mcp"], "Error: --env is for stdio servers"),
])
def test_refusals_are_one_line(tmp_path, capsys, argv, message):
    path = write(tmp_path, SERVERS)
    status, out, err = run(capsys, "-c", str(path), *argv)
    assert status == 1 and out == ""
    assert err.startswith(message) and err.count("\n") == 1
    assert path.read_text() == SERVERS


def test_add_with_no_config_anywhere_writes_the_starter_first(fake_home, capsys):
    status, _, err = run(capsys, "mcp", "add", "time", "--", "uvx", "mcp-server-time")
    assert status == 0
    assert err.startswith(f"Wrote {fake_home / '.iota.yaml'} (a starter config")
    loaded = settings.load(fake_home)
    assert "default" in loaded.agents and loaded.mcp_servers["time"].args == ("mcp-server-time",)
