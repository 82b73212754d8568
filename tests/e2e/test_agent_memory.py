"""An agent's own memory (`~/.iota/agents/<name>/memory/*.md`, iota.memory.agent) end to end,
against the fake model's recorded requests: it reaches the system prompt, in the bots' order;
`include-session` / `exclude-session` match a session's id and title, exclude winning; a link
out of the directory is not read; `iota agents show`."""

from __future__ import annotations

import os

from iota import paths
from iota.sessions import bundle as session

CODER = "  coder:\n    mode: agent\n    model: m\n"


def memory_dir(iota):
    directory = iota.home / ".iota" / "agents" / "coder" / "memory"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def system_of(request) -> str:
    return request.body["messages"][0]["content"]


def test_an_agents_memory_reaches_the_system_prompt_in_the_bots_order(iota):
    iota.write_config(CODER)
    memory = memory_dir(iota)
    (memory / "NOTES.md").write_text("The build is make all.\n")
    (memory / "SOUL.md").write_text("Answer tersely.\n")
    (memory / "SCOPED.md").write_text("---\ninclude-session: '*'\n---\nOnly in a saved session.\n")
    iota.model.reply("Ok.")
    result = iota("run", "coder", "-m", "hi")
    assert result.returncode == 0, result.stderr
    system = system_of(iota.model.requests[0])
    soul = system.index('<memory_file path="memory/SOUL.md">\nAnswer tersely.\n</memory_file>')
    notes = system.index('<memory_file path="memory/NOTES.md">\nThe build is make all.\n</memory_file>')
    assert soul < notes and system.index("your agent's memory") < soul
    assert "Only in a saved session." not in system   # a plain -m run is in no session
    assert "Call remember" not in system and "with remember" not in system


def test_a_chat_mode_agent_and_an_agent_without_memory_send_none(iota):
    iota.write_config(CODER + "  plain: {model: m}\n")
    (iota.home / ".iota" / "agents" / "plain" / "memory").mkdir(parents=True)
    (iota.home / ".iota" / "agents" / "plain" / "memory" / "X.md").write_text("not for chat mode\n")
    iota.model.reply("Ok.")
    iota.model.reply("Ok.")
    assert iota("run", "plain", "-m", "hi").returncode == 0
    assert iota("run", "coder", "-m", "hi").returncode == 0
    assert "not for chat mode" not in system_of(iota.model.requests[0])
    assert "memory_file" not in system_of(iota.model.requests[1])


def saved_session(iota, title: str) -> str:
    bucket = paths.project_sessions_dir(iota.cwd)
    with session.Session.create(bucket, provider="fake", model="fake-model", agent="coder", cwd=str(iota.cwd),
                                title=title) as saved:
        return saved.id


def test_session_scopes_match_the_id_and_the_title_and_exclude_wins(iota):
    iota.write_config(CODER)
    fixing = saved_session(iota, "fix the login")
    other = saved_session(iota, "write docs")
    memory = memory_dir(iota)
    files = {
        "BY_ID.md": f"---\ninclude-session: [{fixing}]\n---\nby id\n",
        "BY_TITLE.md": "---\ninclude-session: 'fix *'\n---\nby title\n",
        "EXCLUDED.md": f"---\ninclude-session: 'fix *'\nexclude-session: {fixing}\n---\nexclude wins\n",
        "NOT_DOCS.md": "---\nexclude-session: ['write *']\n---\nnot in docs\n",
        "EVERYWHERE.md": "everywhere\n",
    }
    for name, text in files.items():
        (memory / name).write_text(text)
    for _ in range(2):
        iota.model.reply("Ok.")
    assert iota("resume", fixing, "-m", "hi").returncode == 0
    assert iota("resume", other, "-m", "hi").returncode == 0
    in_fixing, in_other = (system_of(request) for request in iota.model.requests)
    assert [text in in_fixing for text in ("by id", "by title", "exclude wins", "not in docs", "everywhere")] \
        == [True, True, False, True, True]
    assert [text in in_other for text in ("by id", "by title", "exclude wins", "not in docs", "everywhere")] \
        == [False, False, False, False, True]


def test_a_memory_file_linked_out_of_the_directory_is_not_read(iota, tmp_path):
    iota.write_config(CODER)
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN PRIVATE KEY----- hunter2\n")
    bot_memory = iota.home / ".iota" / "bots" / "main" / "MEMORY.md"
    bot_memory.parent.mkdir(parents=True)
    bot_memory.write_text("# main memory\n- the bot's private line\n")
    memory = memory_dir(iota)
    os.symlink(secret, memory / "KEY.md")
    os.symlink(bot_memory, memory / "BOT.md")
    (memory / "REAL.md").write_text("kept here\n")
    os.symlink(memory / "REAL.md", memory / "ALIAS.md")   # a link inside the directory is fine
    iota.model.reply("Ok.")
    result = iota("run", "coder", "-m", "hi")
    assert result.returncode == 0
    system = system_of(iota.model.requests[0])
    assert "hunter2" not in system and "private line" not in system
    assert '<memory_file path="memory/ALIAS.md">\nkept here' in system
    assert f"memory/KEY.md: {memory / 'KEY.md'} leads out of {memory}" in result.stderr
    assert "memory/BOT.md:" in result.stderr


def test_agents_show_lists_the_files_sizes_and_scopes(iota):
    iota.write_config(CODER + "  plain: {model: m}\n")
    memory = memory_dir(iota)
    (memory / "SOUL.md").write_text("Answer tersely.\n")
    (memory / "FIX.md").write_text("---\ninclude-session: 'fix *'\n---\nFor fixes.\n")
    (memory / "HERE.md").write_text("---\ninclude-project: [project]\n---\nHere.\n")
    result = iota("agents", "show", "coder")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"memory     {memory}" in out
    assert "own  memory/SOUL.md  0.0 / 8 KiB" in out
    assert "memory/FIX.md   not sent: include-session (fix *) does not match this chat" in out
    assert "memory/HERE.md  0.0 / 8 KiB   include-project: project" in out
    assert "in all 0.0 / 24 KiB" in out
    plain = iota("agents", "show", "plain")
    assert plain.returncode == 0 and "memory     none (only mode: agent has a memory of its own)" in plain.stdout
    for child in memory.iterdir():
        child.unlink()
    empty = iota("agents", "show", "coder")
    assert f"No memory files. Every *.md file in {memory} goes out" in empty.stdout
    unknown = iota("agents", "show", "nobody")
    assert unknown.returncode == 1 and 'Error: unknown agent "nobody" (agents: coder, plain)' in unknown.stderr


def test_an_agent_named_like_a_path_reads_no_memory(iota):
    iota.write_config("  '../bots/main':\n    mode: agent\n    model: m\n")
    bot_memory = iota.home / ".iota" / "bots" / "main" / "memory"
    bot_memory.mkdir(parents=True)
    (bot_memory / "SOUL.md").write_text("the bot's own persona\n")
    (iota.home / ".iota" / "agents").mkdir()   # so that agents/../bots/main would resolve
    iota.model.reply("Ok.")
    result = iota("run", "../bots/main", "-m", "hi")
    assert result.returncode == 0, result.stderr
    assert "the bot's own persona" not in system_of(iota.model.requests[0])
    shown = iota("agents", "show", "../bots/main")
    assert "memory     none (the name cannot be a directory under ~/.iota/agents" in shown.stdout
