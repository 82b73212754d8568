"""The slash commands of actors/commands/registry.py as the turn lane runs them: /status, /save
and /export, and the echo of a resumed session (`resume_opening`, also used by /session).

They run in test_lane's lane, with a real ChatSetup from a config in the tmp HOME that points
at the fake model server (tests/actors/conftest.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actors.events import Notice, Panel, TextDelta, TurnEnded
from iota import paths
from iota.messages import Message
from iota.sessions.bundle import Session
from iota.sessions.conversation import Conversation
from tests.actors.test_lane import open_lane, records  # noqa: F401  (the fixture)


# ---- slash commands ---------------------------------------------------------------------------


def panel_rows(panel: Panel) -> dict[str, str]:
    return dict(re.split(r"\s{2,}", line, maxsplit=1) for line in panel.text.splitlines())


async def test_status_shows_the_model_context_and_that_nothing_is_saved(open_lane, fake_model, project):
    fake_model.reply("hi", input_tokens=1200, output_tokens=34)
    async with open_lane() as chat:
        chat.submit("hello")
        await chat.until(TurnEnded)
        chat.command("status")
        panel = (await chat.until(Panel))[-1]
    assert panel.title == "Status"
    rows = panel_rows(panel)
    assert rows["Model"] == "m (fake:fake-model)"
    assert rows["Context"] == "1.2k / 200k"
    assert rows["Project"] == str(project)
    assert rows["Tools"] == "(none)"
    assert rows["Mode"] == "chat"
    assert rows["Session"] == "not saved · /save keeps it"
    assert rows["Title"] == "(untitled)"


async def test_status_of_a_saving_chat_names_its_session_and_tools(open_lane, session):
    async with open_lane(Conversation(session=session), agent="coder") as chat:
        chat.command("status")
        rows = panel_rows((await chat.until(Panel))[-1])
    assert rows["Session"] == session.id
    assert "write_file" in rows["Tools"] and "read_file" in rows["Tools"]


async def test_save_writes_the_backlog_and_saves_from_then_on(open_lane, fake_model):
    fake_model.reply("first answer")
    fake_model.reply("second answer")
    async with open_lane() as chat:
        chat.submit("first")
        await chat.until(TurnEnded)
        assert not paths.sessions_dir().exists()
        chat.command("save", "my title")
        notice = (await chat.until(Notice))[-1]
        session = chat.conversation.session
        assert session is not None
        assert notice == Notice(f"Session saved: {session.id} — auto-saving from now on.")
        assert session.dir.parent == paths.sessions_dir()
        assert session.meta["title"] == "my title"
        assert [r["content"] for r in records(session)] == ["first", "first answer"]
        chat.submit("second")
        await chat.until(TurnEnded)
        assert [r["content"] for r in records(session)] == ["first", "first answer", "second", "second answer"]
        chat.command("save")
        again = (await chat.until(Notice))[-1]
        assert again == Notice(f"Session already saving ({session.id}).")
        session.close()


@pytest.mark.parametrize("saving", [False, True], ids=["no session", "session"])
async def test_export_writes_html_by_default_and_markdown_for_md(open_lane, fake_model, session, project, saving):
    fake_model.reply("Answer with <b>tags</b>")
    async with open_lane(Conversation(session=session if saving else None)) as chat:
        chat.submit("question & more")
        await chat.until(TurnEnded)
        chat.command("export")
        html_notice = (await chat.until(Notice))[-1]
        chat.command("export", "chat.md")
        md_notice = (await chat.until(Notice))[-1]
    # by default outside the project: the session's bundle, or (not saved, no ~/Downloads) the home directory
    default = session.dir / f"iota-{session.id}.html" if saving else Path.home() / "iota-chat.html"
    assert html_notice == Notice(f"Exported 2 messages to {default}")
    html = default.read_text()
    assert html.startswith("<!doctype html>")
    assert "question &amp; more" in html and "Answer with &lt;b&gt;tags&lt;/b&gt;" in html
    assert md_notice == Notice(f"Exported 2 messages to {project / 'chat.md'}")
    assert (project / "chat.md").read_text() == (
        "# iota conversation\n\n## You\n\nquestion & more\n\n## Assistant\n\nAnswer with <b>tags</b>\n")


async def test_export_never_overwrites(open_lane, project):
    (project / "taken.md").write_text("keep me")
    async with open_lane() as chat:
        chat.command("export", "taken.md")
        notice = (await chat.until(Notice))[-1]
    assert notice.warning
    assert notice.text == f"{project / 'taken.md'} already exists; /export never overwrites — name another file"
    assert (project / "taken.md").read_text() == "keep me"


async def test_export_of_a_compacted_session_writes_the_whole_log(open_lane, fake_model, session, project):
    session.append([Message("user", "old question"), Message("assistant", "old answer")])
    session.append([Message("compaction", "summary", compacted_through=2)])
    session.close()
    resumed = Session.open(session.dir)
    try:
        conversation = Conversation.from_session(resumed)
        assert len(conversation.messages) == 0 or conversation.messages[0].content != "old question"
        async with open_lane(conversation) as chat:
            chat.command("export", "all.md")
            notice = (await chat.until(Notice))[-1]
    finally:
        resumed.close()
    assert notice.text.startswith("Exported 2 messages")
    text = (project / "all.md").read_text()
    assert "old question" in text and "old answer" in text and "summary" not in text


# ---- the echo of a resumed session (actors.commands.registry.resume_opening, also used by /session) ----


def test_the_echo_of_a_resumed_round_keeps_replies_around_a_tool_call_apart(session):
    from actors.commands.registry import resume_opening
    from iota.messages import ToolCall

    call = ToolCall("c1", "read_file", {"path": "a.py"})
    session.append([Message("user", "look at a.py"), Message("assistant", "Let me look.", tool_calls=[call]),
                    Message("tool", "print(1)", tool_call_id="c1", tool_call_name="read_file"),
                    Message("assistant", "Done.")])
    session.close()
    resumed = Session.open(session.dir)
    try:
        opening, _ = resume_opening(resumed, Conversation.from_session(resumed))
        events = list(opening[0].events)  # the newest page of the history
    finally:
        resumed.close()
    first = events.index(TextDelta("Let me look."))
    assert events[first + 1] != TextDelta("Done.")
