"""Which command lines are iota calling itself: the grammar a self-call must be written in, and
the commands that may leave the sandbox (the attacks themselves are in tests/security)."""

from __future__ import annotations

import os

import pytest

from iota.sandbox.self_call import SelfCall, changes_config, only_reads, read_self_call, simple_command_words


def test_one_simple_command_is_read_into_its_words():
    assert simple_command_words("iota mcp add x --url u") == ["iota", "mcp", "add", "x", "--url", "u"]
    assert simple_command_words("  iota\tmcp list ") == ["iota", "mcp", "list"]
    assert simple_command_words("/opt/bin/iota mcp list") == ["/opt/bin/iota", "mcp", "list"]
    assert simple_command_words("'io'\"ta\" run x") == ["iota", "run", "x"]
    assert simple_command_words("iota run coder -m 'fix; then test | tail && report $(x) `y`'") == [
        "iota", "run", "coder", "-m", "fix; then test | tail && report $(x) `y`"]
    assert simple_command_words('iota run coder -m "a | b; c && d > e"') == [
        "iota", "run", "coder", "-m", "a | b; c && d > e"]
    assert simple_command_words("iota run x -m 'two\nlines' -s \"it's\"") == [
        "iota", "run", "x", "-m", "two\nlines", "-s", "it's"]
    assert simple_command_words("iota run x -m ''") == ["iota", "run", "x", "-m", ""]


@pytest.mark.parametrize("line", [
    # lists, pipes, background, newlines
    "iota mcp list | head", "iota mcp list || true", "iota mcp list && echo ok", "iota mcp list; echo ok",
    "iota mcp list &", "iota mcp list\necho ok", "iota version\r", "iota version\x1b[2K",
    # redirections and here-docs
    "iota version > ~/.bashrc", "iota version >> f", "iota version 2>&1", "iota mcp list &> log", "iota>out",
    "iota version < f", "iota run x -m hi <<EOF\nid\nEOF", "iota run x -m hi <<< text",
    # substitutions and expansions
    'iota run x -m "$(cat task)"', "iota run x -m `cat task`", 'iota run x -m "`cat task`"', "iota run x -m $HOME",
    'iota run x -m "$HOME"', "iota run x -m $'\\x41'", "iota run x -m ~", "iota run x -m *", "iota {run,list}",
    "iota run x -m a?b", "iota run x -m [ab]", "iota run x -m <(id)",
    # escapes, comments, groups and keywords
    "io\\ta run", "iota version \\\n; id", "iota version #; id", "(iota version)", "{ iota version; }",
    "! iota version",
    # not a whole line
    "", "   ", "iota run x -m 'unterminated", 'iota run x -m "unterminated',
])
def test_anything_else_is_not_read_at_all(line):
    assert simple_command_words(line) is None


@pytest.mark.parametrize("arguments", [
    "version", "list", "list models", "list models coder", "config check", "config path",
    "mcp list", "mcp get time", "run -m hi", "run coder -m hi", "run coder --message hi", "run coder --message=hi",
    "run -m hi coder", "run coder -m hi -M fast -s terse --max-turns 3 --output-format json",
    "run coder -m hi --model=fast --max-turns=3",
])
def test_what_may_leave_the_sandbox_unasked(arguments):
    words = tuple(arguments.split())
    assert only_reads(words) and not changes_config(words)


@pytest.mark.parametrize("arguments", [
    "", "-c evil.yaml run coder -m hi", "--config=evil.yaml run coder -m hi", "-cevil.yaml run coder -m hi",
    "run coder -m hi -c evil.yaml", "run coder -m hi --config evil.yaml", "run coder -m hi --config=evil.yaml",
    "run coder -m hi -cx", "run coder -m hi --conf x", "run coder -m hi --mcp x", "run coder -m hi --mcp=x",
    "run coder -m hi --no-save", "run coder", "run coder -M fast", "run coder -m", "run coder -m -c",
    "run coder -m hi other", "run coder -mhi", "run coder -m hi --", "run coder --mess hi",
    "resume abc -m hi", "list sessions", "list sessions --all", "--version", "-V", "version --help", "list -c x", "list things", "list models a b",
    "config", "config check -c x", "mcp list -c x", "mcp get", "mcp get -c", "mcp", "version extra",
])
def test_what_stays_in_the_sandbox(arguments):
    words = tuple(arguments.split())
    assert not only_reads(words) and not changes_config(words)


@pytest.mark.parametrize("arguments", [
    "mcp add helper -- sh -c x", "mcp add helper --url http://x", "mcp remove helper", "mcp login helper",
    "mcp logout helper", "mcp add -c other.yaml helper -- x", "config init",
])
def test_what_changes_the_configuration(arguments):
    assert changes_config(tuple(arguments.split()))


def test_iota_is_the_running_executable_by_any_name_or_path_but_not_a_copy(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    iota = bin_dir / "iota"
    iota.write_text("#!/bin/sh\n")
    iota.chmod(0o755)
    (bin_dir / "alias").symlink_to(iota)
    copy = tmp_path / "copy"
    copy.write_bytes(iota.read_bytes())
    copy.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    running = os.path.realpath(iota)
    reads = SelfCall(("version",), changes_config=False)
    assert read_self_call("iota version", tmp_path, running) == reads
    assert read_self_call("alias version", tmp_path, running) == reads
    assert read_self_call("bin/iota version", tmp_path, running) == reads
    assert read_self_call("./copy version", tmp_path, running) is None
    assert read_self_call("iota mcp add x -- y", tmp_path, running) == SelfCall(("mcp", "add", "x", "--", "y"), True)
    assert read_self_call("iota -c x.yaml version", tmp_path, running) is None
    for prefixed in ("FOO=1 iota version", "exec iota version", "command iota version", "env iota version",
                     "time iota version", "nohup iota version"):
        assert read_self_call(prefixed, tmp_path, running) is None, prefixed
