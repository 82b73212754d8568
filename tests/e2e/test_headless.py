"""`iota run <agent> -m "…"` and `iota resume <id> -m "…"` end to end, against the fake model."""

from __future__ import annotations

import json
import signal
import shutil

import pytest

from iota import paths
from iota.sessions import bundle as session
from iota.messages import ASSISTANT, USER, Message
from tests.support.fake_model import tool_call

CHAT = "  chat: {model: m}\n"


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_one_turn_prints_the_reply_and_saves_nothing(iota, dialect):
    iota.write_config(CHAT + "  default: {model: m, system: Be brief.}\n", dialect=dialect)
    iota.model.reply("Hello there, friend.")
    result = iota("run", "chat", "-m", "hi")
    assert (result.returncode, result.stdout, result.stderr) == (0, "Hello there, friend.\n", "")
    body = iota.model.requests[0].body
    assert body["model"] == "fake-model"
    last = body["messages"][-1]
    assert last["role"] == "user" and "hi" in json.dumps(last["content"])
    assert not (iota.home / ".iota" / "sessions").exists()


def test_message_from_stdin_and_json_output(iota):
    iota.write_config(CHAT)
    iota.model.reply("Done.", input_tokens=120, output_tokens=7)
    result = iota("run", "chat", "-m", "-", "--output-format", "json", input="from stdin\n")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["reply"] == "Done." and output["session"] is None and output["model_calls"] == 1
    assert output["usage"]["in"] == 120 and output["usage"]["out"] == 7
    assert iota.model.requests[0].body["messages"][-1]["content"] == "from stdin\n"


def test_system_override_reaches_the_model(iota):
    iota.write_config(CHAT)
    iota.model.reply("ok")
    assert iota("run", "chat", "-m", "hi", "-s", "You are terse.").returncode == 0
    assert iota.model.requests[0].body["messages"][0] == {"role": "system", "content": "You are terse."}


@pytest.mark.parametrize("dialect, variable", [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_missing_key_says_what_to_set(iota, dialect, variable):
    (iota.home / ".iota.yaml").write_text(
        f"providers:\n  main: {{type: {dialect}}}\nmodels:\n  m: main:x\nagents:\n  chat: {{model: m}}\n")
    result = iota("run", "chat", "-m", "hi")
    assert result.returncode == 1
    assert result.stderr == f"Error: API key is required: set {variable} or providers.main.key in your config\n"
    assert result.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["run", "chat", "-m", "  "], "--message must not be empty"),
    (["run", "chat", "-m", "x", "--no-save"], "flag --no-save is not supported in headless mode"),
    (["resume", "-m", "x"], "iota resume needs a session id with -m (the picker is interactive): "
                            "try `iota list sessions`"),
    (["resume", "abc", "--no-save"], "--no-save cannot be combined with iota resume"),
    (["run", "nobody", "-m", "x"], 'unknown agent "nobody"\n  configured agents: chat, bot1'),
    (["run", "bot1", "-m", "x"], "bot agents are interactive-only for now; run iota run bot1"),
    (["run", "chat"], "interactive mode requires a terminal; use -m/--message for piped input"),
    (["resume", "zzzz", "-m", "x"], 'no session matches "zzzz"'),
])
def test_refusals(iota, args, message):
    iota.write_config(CHAT + "  bot1: {model: m, mode: bot}\n")
    result = iota(*args)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"Error: {message}\n"


def test_agent_reads_edits_runs_a_sandboxed_command_and_loads_a_skill(iota):
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed (Debian: apt-get install bubblewrap)")
    (iota.cwd / ".git").mkdir()
    (iota.cwd / "notes.txt").write_text("colour: red\n")
    skill = iota.cwd / ".agents" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release\ndescription: How to cut a release.\n---\nTag it.\n")
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n"
                      "      code: {auto_write: true}\n      shell: {sandbox: auto}\n")
    iota.model.reply(tool_calls=[tool_call("read_file", {"path": "notes.txt"}), tool_call("load_skill", {"skill": "release"})])
    iota.model.reply(tool_calls=[tool_call("edit_file", {"path": "notes.txt", "old_string": "red", "new_string": "blue"})])
    iota.model.reply(tool_calls=[tool_call("shell", {"command": "cat notes.txt; touch /usr/escaped 2>&1; echo rc=$?"})])
    iota.model.reply("All done.")
    result = iota("run", "coder", "-m", "make it blue")
    assert (result.returncode, result.stdout) == (0, "All done.\n"), result.stderr
    assert (iota.cwd / "notes.txt").read_text() == "colour: blue\n"

    def tool_results(request):
        return [m for m in request.body["messages"] if m["role"] == "tool"]

    requests = iota.model.requests
    assert len(requests) == 4
    read, loaded = tool_results(requests[1])
    assert "colour: red" in read["content"] and loaded["content"].strip() == "Tag it."
    assert "1 replacement(s) in notes.txt" in tool_results(requests[2])[-1]["content"]
    shell_output = tool_results(requests[3])[-1]["content"]
    assert "colour: blue" in shell_output and "Read-only file system" in shell_output and "rc=1" in shell_output
    system = requests[0].body["messages"][0]["content"]
    assert "<available_skills>" in system and "<name>release</name>" in system
    assert f"project root: {iota.cwd}" in system
    tools = {t["function"]["name"] for t in requests[0].body["tools"]}
    assert tools == {"glob", "grep", "list_dir", "read_file", "edit_file", "write_file", "shell", "load_skill"}


def test_gated_calls_are_refused_headless_with_the_setting_to_change(iota):
    (iota.cwd / "a.txt").write_text("x\n")
    iota.write_config("  coder:\n    model: m\n    tools:\n      code:\n      shell: {sandbox: off}\n")
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "new.txt", "content": "hi"}),
                                 tool_call("shell", {"command": "echo hi"})])
    iota.model.reply("I could not.")
    result = iota("run", "coder", "-m", "write")
    assert result.returncode == 0 and not (iota.cwd / "new.txt").exists()
    results = [m["content"] for m in iota.model.requests[1].body["messages"] if m["role"] == "tool"]
    assert results == [
        f"{name} was not executed: it requires interactive approval, which is unavailable in this non-interactive "
        "run. Set the toolset's auto-approve option (tools.code.auto_write / tools.shell.auto_run) to permit it here."
        for name in ("write_file", "shell")]


def test_max_turns_stops_the_loop(iota):
    iota.write_config("  coder:\n    model: m\n    tools:\n      code:\n")
    iota.model.reply("Looking.", tool_calls=[tool_call("list_dir", {})])
    result = iota("run", "coder", "-m", "look", "--max-turns", "1")
    assert (result.returncode, result.stdout) == (0, "Looking.\n")
    assert len(iota.model.requests) == 1


def test_a_provider_error_is_one_line_and_exit_1(iota):
    iota.write_config(CHAT)
    iota.model.fail(400, message="bad request: model not found")
    result = iota("run", "chat", "-m", "hi")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupted_run_exits_130(iota, number):
    iota.write_config(CHAT)
    iota.model.hang()
    process = iota.popen("run", "chat", "-m", "hi")
    iota.model.wait_for_request(1, timeout=20)
    process.send_signal(number)
    assert process.wait(timeout=20) == 130
    assert process.stdout.read() == ""


def make_session(iota, messages):
    """A saved chat session, written the way the chat writes one."""
    with session.Session.create(paths.sessions_dir(), provider="fake", model="fake-model", agent="chat") as saved:
        saved.append(messages)
        return saved.id, saved.dir


def test_resume_appends_the_turn_on_success_only(iota):
    iota.write_config(CHAT)
    session_id, bundle = make_session(iota, [Message(USER, content="my name is Ana"), Message(ASSISTANT, content="Hi Ana")])
    iota.model.reply("Your name is Ana.")
    result = iota("resume", session_id[:5], "-m", "what is my name?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Your name is Ana.\n"
    assert result.stderr == f"Resumed session {session_id} (2 messages)\n"
    sent = iota.model.requests[0].body["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"] == ["my name is Ana", "Hi Ana", "what is my name?"]
    log = (bundle / "messages.jsonl").read_text().splitlines()
    assert len(log) == 4 and json.loads(log[-1])["content"] == "Your name is Ana."
    size = (bundle / "messages.jsonl").stat().st_size

    iota.model.fail(400, message="nope")
    assert iota("resume", session_id, "-m", "again").returncode == 1
    assert (bundle / "messages.jsonl").stat().st_size == size


def test_resume_replays_the_sessions_own_system_prompt(iota):
    iota.write_config("  chat: {model: m, system: The config says this now.}\n")
    from iota.messages import SYSTEM

    session_id, _ = make_session(iota, [Message(SYSTEM, content="Recorded prompt."), Message(USER, content="hi"),
                                        Message(ASSISTANT, content="hello")])
    iota.model.reply("ok")
    assert iota("resume", session_id, "-m", "again").returncode == 0
    assert iota.model.requests[0].body["messages"][0] == {"role": "system", "content": "Recorded prompt."}


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_a_plain_turn_loads_none_of_what_it_does_not_use(iota, tmp_path, dialect):
    """A chat agent's `-m` turn, outside herdr and cmux, with no attachment, that neither fails
    nor saves: each of these loads where it is used, and costs a start-up ~1 ms or more."""
    spy = tmp_path / "spy"
    spy.mkdir()
    listing = tmp_path / "modules.txt"
    (spy / "sitecustomize.py").write_text(  # runs at the interpreter's start, and lists at its exit
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(listing)!r}, 'w').write('\\n'.join(sorted(sys.modules))))\n")
    iota.write_config(CHAT, dialect=dialect)
    iota.model.reply("Hello.")
    result = iota("run", "chat", "-m", "hi", PYTHONPATH=str(spy))
    assert (result.returncode, result.stdout) == (0, "Hello.\n"), result.stderr
    loaded = set(listing.read_text().split())
    assert {"iota.agent", f"iota.providers.{dialect}", "trio"} <= loaded   # the spy saw the turn
    unused = {"iota.memory", "actors.notifier", "trio_util", "iota.sessions.log", "iota.sessions.bundle",
              "iota.sessions.repair", "iota.providers._attachments", "iota.tools.ask", "iota.tools.skills",
              "iota.titles", "html", "ui.first_frame"}
    assert sorted(loaded & unused) == []
