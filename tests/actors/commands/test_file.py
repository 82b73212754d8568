"""`/file`: attaching a project file to the next message, through the code tools' jail, and what
the model, the log, a resume and `/export` make of it."""

from __future__ import annotations

import json
import os

import trio

from actors.commands.registry import resume_opening
from actors.events import Choose, Notice, TurnEnded, UserEcho
from iota.sessions.bundle import Session
from iota.sessions.conversation import Conversation
from tests.actors.test_lane import BOUND, all_records, open_lane  # noqa: F401  (the fixture)
from tests.support.api_rules import images_in
from tests.support.images import png


async def attach(chat, argument: str) -> Notice:
    chat.command("file", argument)
    return (await chat.until(Notice))[-1]


async def test_a_png_and_a_text_file_go_with_the_next_message_and_come_back_on_resume(
        open_lane, fake_model, session, project):
    (project / "shots").mkdir()
    (project / "shots" / "red.png").write_bytes(png())
    (project / "notes.md").write_text("the square is red\n")
    fake_model.reply("It is red.")
    fake_model.reply("Nothing attached this time.")
    async with open_lane(Conversation(session=session)) as chat:
        first = await attach(chat, "shots/red.png")
        assert first == Notice(f"Attached shots/red.png (image/png), {len(png())} B; 1 file goes with your next message")
        await attach(chat, str(project / "notes.md"))  # absolute works too
        chat.submit("What colour?")
        shown = await chat.until(TurnEnded)
        assert Notice("📎 shots/red.png (image/png), notes.md (text/plain)") in shown
        chat.submit("And now?")
        await chat.until(TurnEnded)
    first_request, second_request = fake_model.requests
    assert images_in("openai", first_request.body) == [("image/png", png())]
    assert images_in("openai", second_request.body) == [("image/png", png())]  # the history keeps it
    assert second_request.body["messages"][-1] == {"role": "user", "content": "And now?"}
    (record,) = [r for r in all_records(session) if r.get("attachments")]
    assert [a["filename"] for a in record["attachments"]] == ["shots/red.png", "notes.md"]
    sha = record["attachments"][0]["data_ref"].removeprefix("sha256:")
    assert (session.dir / "attachments" / sha).read_bytes() == png()
    session.close()
    resumed = Session.open(session.dir)
    opening, _ = resume_opening(resumed, Conversation.from_session(resumed))
    echoed = list(opening[0].events)  # the newest page of the history
    assert echoed[:2] == [UserEcho("What colour?"), Notice("📎 shots/red.png (image/png), notes.md (text/plain)")]
    assert resumed.view.messages[0].attachments[0].read() == png()
    resumed.close()


async def test_a_link_out_of_the_project_is_refused_not_sent(open_lane, fake_model, project, tmp_path):
    """What a command the model ran can plant: `notes.md` a link to a secret outside the project."""
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY\n")
    os.symlink(secret, project / "notes.md")
    fake_model.reply("ok")
    async with open_lane() as chat:
        refusal = await attach(chat, "notes.md")
        chat.submit("hi")
        await chat.until(TurnEnded)
    assert refusal.warning
    assert refusal.text == (f"Cannot attach: path is outside the project root ({project}): {project / 'notes.md'} "
                            f"(a symlink leads to {secret})")
    assert "PRIVATE KEY" not in json.dumps(fake_model.requests[0].body)
    assert fake_model.requests[0].body["messages"][-1] == {"role": "user", "content": "hi"}


async def test_a_fifo_is_refused_without_being_opened(open_lane, project):
    os.mkfifo(project / "pipe")
    async with open_lane() as chat:
        with trio.fail_after(BOUND):  # opening a FIFO to read would wait for a writer forever
            refusal = await attach(chat, "pipe")
        assert chat.lane.attachments == []
    assert refusal == Notice("Cannot attach: pipe is not a regular file", warning=True)


async def test_what_is_not_text_or_an_image_is_refused(open_lane, project):
    (project / "doc.pdf").write_bytes(b"%PDF-1.7\n\x00binary")
    async with open_lane() as chat:
        refusal = await attach(chat, "doc.pdf")
    assert refusal == Notice("Cannot attach: doc.pdf is neither text nor a PNG, JPEG, GIF or WebP image", warning=True)


async def test_the_picker_lists_the_projects_files_as_the_code_tools_see_them(open_lane, project, tmp_path):
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    (project / "build" / "out.txt").write_text("ignored")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]")
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("print(1)\n")
    os.symlink(tmp_path, project / "outside")
    async with open_lane() as chat:
        chat.command("file")
        picker = (await chat.until(Choose))[-1]
        assert picker.title == "Attach which file?"
        assert picker.search == (".gitignore", "src/a.py")
        picker.reply.send_nowait(1)
        added = (await chat.until(Notice))[-1]
        assert added.text.startswith("Attached src/a.py (text/plain)")
        chat.command("file")
        picker = (await chat.until(Choose))[-1]
        assert picker.options[0] == "✓ src/a.py (text/plain) — attached; Enter takes it off"
        picker.reply.send_nowait(0)
        removed = (await chat.until(Notice))[-1]
        assert removed == Notice("src/a.py taken off; nothing is attached")
        assert chat.lane.attachments == []


async def test_export_names_the_files_and_the_page_shows_the_images(open_lane, fake_model, project):
    (project / "red.png").write_bytes(png())
    fake_model.reply("Red.")
    async with open_lane() as chat:
        await attach(chat, "red.png")
        chat.submit("colour?")
        await chat.until(TurnEnded)
        chat.command("export", "out.md")
        await chat.until(Notice)
        chat.command("export", "out.html")
        await chat.until(lambda event: isinstance(event, Notice) and "out.html" in event.text)
    assert "## You\n\ncolour?\n📎 red.png (image/png)\n" in (project / "out.md").read_text()
    page = (project / "out.html").read_text()
    assert 'alt="red.png"' in page and "data:image/png;base64," in page
