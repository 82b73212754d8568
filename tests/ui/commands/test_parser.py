"""A command line that starts with its command is read by that command's parser alone
(ui.cli.build_parser(only=…)): it must read every such line exactly as the whole tree does."""

from __future__ import annotations

import pytest

from ui.cli import COMMANDS, build_parser, parse

LINES = [
    ["run"], ["run", "coder", "-m", "hi", "--max-turns", "3", "--output-format", "json", "--mode", "plan"],
    ["run", "coder", "-M", "work:gpt", "-s", "be brief", "--mcp", "npx srv", "--mcp", "http://x", "--no-save"],
    ["run", "-c", "/tmp/cfg.yaml", "coder"],
    ["resume", "abc", "--fork", "-m", "-"], ["resume", "--all"],
    ["list", "models", "coder"], ["list", "sessions", "--tree", "--all"],
    ["config", "path"], ["version"], ["search", "some words", "--since", "7d"],
    ["bots", "show", "helper"], ["bots", "rm", "helper", "--sessions", "-y"], ["bots", "new", "helper"],
    ["mcp", "list"], ["sessions", "archive", "abc"],
]


@pytest.mark.parametrize("argv", LINES, ids=" ".join)
def test_a_commands_own_parser_reads_a_line_as_the_whole_tree_does(argv):
    assert argv[0] in COMMANDS
    assert parse(argv) == build_parser().parse_args(argv)
    assert vars(build_parser(only=argv[0]).parse_args(argv)) == vars(build_parser().parse_args(argv))


def test_every_command_of_the_tree_is_one_the_short_path_knows():
    tree = build_parser()
    subparsers = next(action for action in tree._actions if action.dest == "command")
    assert set(subparsers.choices) == set(COMMANDS)


@pytest.mark.parametrize("argv", [["run", "--bogus"], ["bots", "show"], ["list", "nothing"]], ids=" ".join)
def test_a_bad_line_fails_the_same_way(argv, capsys):
    with pytest.raises(SystemExit) as whole:
        build_parser().parse_args(argv)
    expected = capsys.readouterr().err
    with pytest.raises(SystemExit) as short:
        parse(argv)
    assert short.value.code == whole.value.code == 2
    assert capsys.readouterr().err == expected
