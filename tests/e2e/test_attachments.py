"""`/file` and `/edit` end to end: the real `iota` in tmux against the fake model server."""

from __future__ import annotations

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.api_rules import images_in
from tests.support.images import png
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

CHAT = "  chat: {model: m}\n"

# An editor that shows it has the terminal, waits for a line typed at it (the keys must reach it,
# not the chat), and rewrites the draft.
EDITOR = """\
#!/bin/sh
printf 'EDITOR OPEN\\n'
IFS= read -r line
sed -i 's/rough draft/polished words/' "$1"
"""


def start(iota, terminal, *args: str, **env: str):
    screen = terminal.start([IOTA, *args], cols=120, rows=36, env=iota.env(**env), cwd=iota.cwd)
    screen.wait_for(READY)
    return screen


def enter(screen, text: str) -> None:
    screen.type(text)
    screen.send_keys("Enter")


def test_a_png_and_a_text_file_reach_the_model_and_a_resume_shows_them(iota, terminal):
    (iota.cwd / "shot.png").write_bytes(png())
    (iota.cwd / "notes.md").write_text("the square is red\n")
    iota.write_config(CHAT)
    iota.model.reply("It is red.")
    screen = start(iota, terminal, "run", "chat")
    enter(screen, "/file shot.png")
    screen.wait_for("Attached shot.png (image/png)")
    enter(screen, "/file")                       # the picker, narrowed by typing
    screen.wait_for("Attach which file?")
    screen.type("notes")
    screen.wait_for("1 of 3")  # shot.png, attached, is listed first
    screen.send_keys("Enter")
    screen.wait_for("2 files go with your next message")
    enter(screen, "What colour?")
    screen.wait_for("It is red.")
    screen.wait_for("📎 shot.png (image/png), notes.md (text/plain)")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0

    (request,) = iota.model.requests
    assert images_in("openai", request.body) == [("image/png", png())]
    assert request.body["messages"][-1]["content"][1:] == [
        {"type": "text", "text": '<attachment filename="notes.md">\nthe square is red\n</attachment>'},
        {"type": "text", "text": "What colour?"}]
    (bundle,) = [p for p in paths.sessions_dir().iterdir() if (p / "meta.json").exists()]
    stored = sorted(p.name for p in (bundle / "attachments").iterdir())
    assert len(stored) == 2

    resumed = start(iota, terminal, "resume", bundle.name)
    resumed.wait_for(f"Resumed session {bundle.name}")
    assert "📎 shot.png (image/png), notes.md (text/plain)" in resumed.capture()
    resumed.send_keys("C-d")
    assert resumed.wait_for_exit() == 0


def test_edit_writes_the_message_in_the_editor_and_brings_it_back(iota, terminal, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    iota.write_config(CHAT)
    iota.model.reply("Thanks.")
    screen = start(iota, terminal, "run", "chat", EDITOR=str(editor), VISUAL="")
    enter(screen, "/edit a rough draft")
    handed = screen.wait_for("EDITOR OPEN")
    assert not READY.search(handed)            # the chat let go of the screen
    screen.send_keys("Enter")
    back = screen.wait_for("❯ a polished words")  # back in the composer, not sent
    assert iota.model.requests == []
    assert READY.search(back)
    screen.send_keys("Enter")
    screen.wait_for("Thanks.")
    assert iota.model.requests[0].body["messages"][-1] == {"role": "user", "content": "a polished words"}
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
