"""A bot's memory in layers end to end: the real `iota` in tmux against the fake model server. The
blocks in the request, in order; hand edits reloading; the Anthropic request's cached prefix
holding still across a turn that changes no memory; `inherit:` refused when it is wrong."""

from __future__ import annotations

import datetime
import re

import pytest

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.fake_model import tool_call
from tests.support.terminal import say, terminal  # noqa: F401  (terminal: the fixture)

TODAY = datetime.date.today().isoformat()
BOTS = ("  main:\n    mode: bot\n    model: m\n"
        "  coder:\n    mode: bot\n    model: m\n    inherit: [main]\n")


def write(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def own(name: str):
    return paths.bots_dir() / "coder" / name


@pytest.fixture
def bot(iota, terminal):
    """Start `iota run coder`; the card is up when it returns."""

    def start(dialect: str = "openai", **env: str):
        iota.write_config(BOTS, dialect=dialect)
        screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40, env=iota.env(**env), cwd=iota.cwd)
        screen.wait_for(READY)
        return screen

    start.terminals = terminal
    return start


def system_of(request) -> str:
    body = request.body
    return body["system"] if "system" in body else body["messages"][0]["content"]


def blocks_in(system: str) -> list[str]:
    return [match.group(1) or "<memory>" for match in
            re.finditer(r'^<memory_file path="([^"]*)"|^<memory bot=', system, re.MULTILINE)]


def test_every_layer_reaches_the_model_in_order_and_only_where_it_applies(iota, bot):
    write(paths.app_home() / "memory" / "00_SYSTEM.md", "Every bot signs its commits.\n")
    write(paths.app_home() / "memory" / "reviewers.md", "---\ninclude-bot: [reviewer]\n---\nReview rules.\n")
    write(paths.bots_dir() / "main" / "MEMORY.md", "---\nbot: main\n---\n## User\n- [user] Uses fish (2026-01-01)\n")
    write(own("memory/SOUL.md"), "## Style\nBe terse.\n")
    write(own("memory/BRIEF.md"), "## Goals\n- Ship the importer\n")
    write(own("memory/CLIENT.md"), "---\nexclude-project: [project]\n---\nThe other client's notes.\n")
    iota.model.reply("hello")
    screen = bot()
    say(screen, "hi", "hello")
    system = system_of(iota.model.requests[0])
    assert blocks_in(system) == ["~/.iota/memory/00_SYSTEM.md", "main/MEMORY.md", "memory/SOUL.md",
                                 "memory/BRIEF.md", "<memory>"]
    assert '<memory_file path="main/MEMORY.md" bot="main" inherited="true">\n## User\n- [user] Uses fish' in system
    assert "Review rules" not in system and "CLIENT.md" not in system and "other client" not in system


def test_a_hand_edit_reloads_its_file_and_the_tools_writes_land_beside_it(iota, bot):
    write(own("memory/SOUL.md"), "## Style\nBe thorough.\n")
    iota.model.reply(tool_calls=[tool_call("remember", {"file": "BRIEF.md", "action": "add", "section": "Goals",
                                                         "text": "Ship the importer by Friday", "source": "user"})])
    iota.model.reply("Noted.")
    iota.model.reply("Terse it is.")
    screen = bot()
    say(screen, "our goal: ship the importer by Friday", "Noted.")
    screen.wait_for(f"memory: memory/BRIEF.md ## Goals +1 line: [user] Ship the importer by Friday ({TODAY})")
    assert (own("memory/BRIEF.md").read_text() ==
            f"---\nbot: coder\nupdated: {TODAY}\n---\n# coder brief\n\n## Goals\n"
            f"- [user] Ship the importer by Friday ({TODAY})\n")
    write(own("memory/SOUL.md"), "## Style\nBe terse.\n")
    say(screen, "next", "Terse it is.")
    screen.wait_for("memory/SOUL.md reloaded")
    assert "memory/BRIEF.md reloaded" not in screen.capture()    # the tool's own write is no outside edit
    system = system_of(iota.model.requests[-1])
    assert "Be terse." in system and "Be thorough." not in system


def test_the_cached_prefix_holds_across_a_turn_that_changes_no_memory(iota, bot):
    write(paths.app_home() / "memory" / "00_SYSTEM.md", "Every bot signs its commits.\n")
    write(own("memory/SOUL.md"), "## Style\nBe terse.\n")
    write(own("memory/USER.md"), "## Profile\n- Works at Acme\n")
    iota.model.reply(tool_calls=[tool_call("remember", {"file": "BRIEF.md", "action": "add", "section": "Goals",
                                                         "text": "Ship the importer", "source": "user"})])
    iota.model.reply("Noted.")
    iota.model.reply("Still here.")
    iota.model.reply("Acme no more.")
    screen = bot("anthropic")
    say(screen, "ship the importer", "Noted.")
    say(screen, "anything else?", "Still here.")
    requests = iota.model.requests

    def prefix(request) -> bytes:
        """Everything the Anthropic request sends before the conversation: model, cache_control,
        system, tools — the part the API's cache serves."""
        body = request.raw_body
        return body[:body.index(b'"messages":')]

    first, within_turn, next_turn = (prefix(request) for request in requests[:3])
    assert b'"system":' in first and b'"tools":' in first and b'"cache_control":' in first
    assert first == within_turn == next_turn      # the remember write changed no byte of it
    # A hand edit of one file changes that file's block and nothing else of the prompt.
    write(own("memory/USER.md"), "## Profile\n- Works at Initech\n")
    say(screen, "I moved jobs", "Acme no more.")
    requests = iota.model.requests
    before, after = system_of(requests[2]), system_of(requests[3])
    old_block = before[before.index('<memory_file path="memory/USER.md">'):]
    old_block = old_block[:old_block.index("</memory_file>")]
    new_block = old_block.replace("Acme", "Initech")
    assert after == before.replace(old_block, new_block)
    assert requests[3].raw_body.replace(b"Initech", b"Acme").startswith(prefix(requests[2]))


@pytest.mark.parametrize("agents, message", [
    ("  coder: {mode: bot, model: m, inherit: [coder]}\n", "agents.coder.inherit: inheritance cycle: coder → coder"),
    ("  coder: {mode: bot, model: m, inherit: [mian]}\n", 'agents.coder.inherit: unknown bot "mian" (configured '
                                                          "bots: coder)"),
])
def test_a_wrong_inherit_fails_config_check_and_the_start(iota, agents, message):
    path = iota.write_config(agents)
    for args in (["config", "check"], ["run", "coder"]):
        result = iota(*args)
        assert (result.returncode, result.stderr) == (1, f"Error: config {path}: {message}\n")
    assert not paths.bots_dir().exists()
