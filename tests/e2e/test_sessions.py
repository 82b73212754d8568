"""Sessions people can find again, end to end: the real `iota` in tmux against the fake model —
generated titles, /rename, /fork and `iota resume --fork`, the tree, archive and --all."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from iota import paths
from iota.sessions.bundle import read_meta
from tests.e2e.conftest import IOTA, READY
from tests.e2e.test_chat import age, make_chat_session
from tests.support.fake_model import DEFAULT_TITLE, Gate
from tests.support.terminal import say, terminal  # noqa: F401  (the fixture)

CHAT = "  chat: {model: m}\n"
FIRST = "help me plan my vegetable garden for spring"


@pytest.fixture
def chat(iota, terminal):
    """Start `iota <args>` in a terminal; the card is up when it returns."""

    def start(*args: str, cols: int = 120, rows: int = 36):
        screen = terminal.start([IOTA, *args], cols=cols, rows=rows, env=iota.env(), cwd=iota.cwd)
        screen.wait_for(READY)
        return screen

    start.terminals = terminal
    return start


def only_session() -> Path:
    bundles = [path for path in paths.sessions_dir().iterdir() if (path / "meta.json").exists()]
    assert len(bundles) == 1, bundles
    return bundles[0]


def wait_for_meta(bundle: Path, key: str, value, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        meta = read_meta(bundle)
        if meta.get(key) == value:
            return meta
        assert time.monotonic() < deadline, f"meta.json {key} is {meta.get(key)!r}, not {value!r}"
        time.sleep(0.02)


def snapshot(bundle: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(bundle.iterdir()) if path.is_file()}


# -- titles ---------------------------------------------------------------------------------------


def test_the_title_pass_names_the_session_after_its_first_exchange(iota, chat):
    iota.write_config(CHAT)
    iota.model.reply("Start with the soil.")
    iota.model.title("Spring vegetable garden")
    screen = chat("run", "chat")
    say(screen, FIRST, "Start with the soil.")
    asked = iota.model.wait_for_title_request()
    assert asked.body["model"] == "fake-model"
    [message] = asked.body["messages"]
    assert FIRST in message["content"] and "Start with the soil." in message["content"]
    bundle = only_session()
    wait_for_meta(bundle, "title", "Spring vegetable garden")
    assert re.search(rf"{bundle.name}  Spring vegetable garden · fake-model · just now · \d+ msgs",
                     iota("list", "sessions").stdout)
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert len(iota.model.title_requests) == 1  # one pass, after the first exchange only
    assert [len(r.body["messages"]) for r in iota.model.requests] == [1]


def test_a_failing_title_pass_leaves_the_opening_words(iota, chat):
    iota.write_config(CHAT)
    iota.model.reply("Start with the soil.")
    iota.model.fail_title(400, message="no titles today")
    screen = chat("run", "chat")
    say(screen, FIRST, "Start with the soil.")
    assert iota.model.wait_for_title_request().body["messages"]
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert read_meta(only_session())["title"] == "help me plan my vegetable garden for…"
    assert "help me plan my vegetable garden for… · fake-model" in iota("list", "sessions").stdout


def test_title_model_is_asked_instead_of_the_chats_model(iota, chat):
    iota.write_config("  chat: {model: m, title_model: small}\n")
    config = iota.home / ".iota.yaml"
    config.write_text(config.read_text().replace("models:\n", "models:\n  small: {provider: fake, id: small-model}\n"))
    iota.model.reply("Sure.")
    screen = chat("run", "chat")
    say(screen, "name this", "Sure.")
    assert iota.model.wait_for_title_request().body["model"] == "small-model"
    assert iota.model.requests[0].body["model"] == "fake-model"
    wait_for_meta(only_session(), "title", DEFAULT_TITLE)


def test_the_title_pass_never_delays_the_chat(iota, chat):
    """A title request the model sits on gives way to the person's next message at once, and is
    asked again once the chat rests."""
    iota.model.title(gate=Gate())  # never answers on its own
    iota.model.title("Garden plans")
    iota.write_config(CHAT)
    iota.model.reply("Start with the soil.")
    iota.model.reply("Tomatoes need sun.")
    screen = chat("run", "chat")
    say(screen, FIRST, "Start with the soil.")
    held = iota.model.wait_for_title_request()
    say(screen, "and tomatoes?", "Tomatoes need sun.")  # not behind the held title request
    assert held.wait_done() and held.disconnected
    retried = iota.model.wait_for_title_request(2)
    assert FIRST in retried.body["messages"][0]["content"]
    wait_for_meta(only_session(), "title", "Garden plans")


def test_a_headless_resume_names_an_untitled_session_by_its_first_words(iota):
    iota.write_config(CHAT)
    untitled = make_chat_session("", "why is the sky blue at noon and red at dusk", "Rayleigh scattering.")
    iota.model.reply("Longer path at dusk.")
    done = iota("resume", untitled, "-m", "and at dusk?")
    assert done.returncode == 0, done.stderr
    assert read_meta(paths.sessions_dir() / untitled)["title"] == "why is the sky blue at noon and red at…"
    assert iota.model.title_requests == []  # a -m run makes no title pass


def test_a_title_the_model_writes_cannot_reach_the_terminal_as_escapes(iota, chat):
    """The model is untrusted: a title pass answering with escape sequences (retitle the window,
    clear the screen) and a second line is stored, and listed, as one line of plain text."""
    iota.write_config(CHAT)
    iota.model.reply("ok")
    iota.model.title("\x1b]0;owned\x07Evil\x1b[2J title\u202e\x9b31m\nrm -rf ~")
    screen = chat("run", "chat")
    say(screen, "hello", "ok")
    iota.model.wait_for_title_request()
    bundle = only_session()
    wait_for_meta(bundle, "title", "]0;ownedEvil[2J title31m")
    listed = iota("list", "sessions", "--tree").stdout + iota("list", "sessions").stdout
    assert "\x1b" not in listed and "\x9b" not in listed and "\u202e" not in listed and "rm -rf" not in listed


# -- rename -----------------------------------------------------------------------------------------


def test_rename_in_the_chat_and_from_the_command_line(iota, chat):
    iota.write_config(CHAT)
    iota.model.reply("ok")
    screen = chat("run", "chat")
    say(screen, "hello", "ok")
    bundle = only_session()
    wait_for_meta(bundle, "title", DEFAULT_TITLE)
    screen.type("/rename Garden plans")
    screen.send_keys("Enter")
    screen.wait_for(f"Renamed session {bundle.name}: Garden plans")
    refused = iota("sessions", "rename", bundle.name, "Elsewhere")
    assert refused.returncode == 1
    assert refused.stderr == (f"Error: session {bundle.name} is open in another iota process (pid {iota_pid(screen)}); "
                              "cannot rename it from here\n")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert read_meta(bundle)["title"] == "Garden plans"
    renamed = iota("sessions", "rename", bundle.name[:4], "Autumn", "plans")
    assert renamed.stdout == f"Renamed session {bundle.name}: Autumn plans\n"
    assert read_meta(bundle)["title"] == "Autumn plans"


# -- fork -------------------------------------------------------------------------------------------


def test_fork_keeps_the_original_byte_identical_and_the_fork_starts_from_what_the_model_saw(iota, chat):
    iota.write_config(CHAT)
    iota.model.reply("Beds of one metre.")
    iota.model.reply("Tomatoes by the wall.")
    iota.model.reply("Paths of gravel.")
    iota.model.reply("SUMMARY: beds, tomatoes")  # the compaction's summary
    screen = chat("run", "chat")
    say(screen, "how wide should beds be?", "Beds of one metre.")
    parent = only_session()
    wait_for_meta(parent, "title", DEFAULT_TITLE)
    say(screen, "where do tomatoes go?", "Tomatoes by the wall.")
    say(screen, "and the paths?", "Paths of gravel.")
    screen.type("/compact")
    screen.send_keys("Enter")
    screen.wait_for("Context compacted")
    before = snapshot(parent)

    iota.model.reply("Try raised beds.")
    screen.type("/fork Raised beds instead")
    screen.send_keys("Enter")
    child_id = re.search(rf"Forked session {parent.name} as ([0-9a-z]{{12}})",
                         screen.wait_for("Forked session")).group(1)
    say(screen, "what about raised beds?", "Try raised beds.")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0

    assert snapshot(parent) == before  # the original, byte for byte
    first = iota.model.requests[-1].body["messages"]
    summary = "[Earlier conversation summary]\nSUMMARY: beds, tomatoes\n\n———\n\n"
    assert [(m["role"], m["content"]) for m in first] == [
        ("user", summary + "and the paths?"), ("assistant", "Paths of gravel."), ("user", "what about raised beds?")]
    child = read_meta(paths.sessions_dir() / child_id)
    assert (child["parent"], child["title"], child["agent"]) == (parent.name, "Raised beds instead", "chat")
    tree = iota("list", "sessions", "--tree").stdout.splitlines()
    assert tree[1].startswith(f"  {parent.name}  {DEFAULT_TITLE} · fake-model")
    assert tree[2].startswith(f"  {child_id}  └─ Raised beds instead · fake-model")


def test_resume_fork_from_the_command_line(iota, chat):
    iota.write_config(CHAT)
    original = make_chat_session("Garden", "how wide should beds be?", "One metre.")
    before = snapshot(paths.sessions_dir() / original)
    iota.model.reply("Raised ones, then.")
    screen = chat("resume", "--fork", original[:5])
    screen.wait_for(f"Forked from session {original}; the original is unchanged.")
    say(screen, "and raised?", "Raised ones, then.")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert [m["content"] for m in iota.model.requests[0].body["messages"]] == [
        "how wide should beds be?", "One metre.", "and raised?"]
    assert snapshot(paths.sessions_dir() / original) == before
    [child] = [p for p in paths.sessions_dir().iterdir() if p.name != original]
    assert read_meta(child)["parent"] == original and read_meta(child)["title"] == "Garden (fork)"

    iota.model.reply("Headless too.")
    done = iota("resume", "--fork", original, "-m", "once more")
    assert done.returncode == 0 and done.stdout == "Headless too.\n"
    assert "Forked session " + original in done.stderr
    assert snapshot(paths.sessions_dir() / original) == before


# -- the tree, archive, --all ---------------------------------------------------------------------


def test_the_tree_filter_archive_unarchive_and_all(iota, chat):
    iota.write_config(CHAT)
    root = make_chat_session("Garden plans", "q", "a")
    age(root, 5)
    ids = {}
    for hours, title in ((2, "Tomatoes by the wall"), (1, "Raised beds")):
        ids[title] = make_chat_session(title, "q", "a")
        _set_meta(ids[title], parent=root)
        age(ids[title], hours)
    loner = make_chat_session("Kitchen shelves", "q", "a")
    age(loner, 3)
    iota.model.reply("Back to the tomatoes.")

    screen = chat("run", "chat")
    screen.type("/session")
    screen.send_keys("Enter")
    screen.wait_for("Archive")
    screen.send_keys("Enter")  # Resume
    shown = screen.wait_for("Resume which session?")
    rows = [line for line in shown.splitlines() if "· fake-model ·" in line]
    assert [row[2:].split(" · ")[0] for row in rows] == [
        "Garden plans", "├─ Raised beds", "└─ Tomatoes by the wall", "Kitchen shelves"]
    screen.type("tomat")
    screen.wait_for("1 of 4")
    screen.send_keys("Enter")
    screen.wait_for(f"Resumed session {ids['Tomatoes by the wall']} (2 messages)")

    screen.type("/session archive")
    screen.send_keys("Enter")
    screen.wait_for(f"Archived session {ids['Tomatoes by the wall']} (this chat's")
    listed = iota("list", "sessions").stdout
    assert "Tomatoes by the wall" not in listed and "Raised beds" in listed
    everything = iota("list", "sessions", "--all").stdout
    assert re.search(r"Tomatoes by the wall · fake-model · .* · archived", everything)
    prefix = ids["Tomatoes by the wall"][:6]
    hidden = iota("resume", prefix, "-m", "hi")
    assert hidden.returncode == 1
    assert hidden.stderr == f'Error: no session matches "{prefix}" (an archived session does: add --all)\n'
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0

    reached = iota("resume", "--all", prefix, "-m", "still there?")
    assert reached.returncode == 0 and reached.stdout == "Back to the tomatoes.\n"

    screen = chat("run", "chat")
    screen.type("/session unarchive")
    screen.send_keys("Enter")
    shown = screen.wait_for("Unarchive which session?")
    assert "└─ Tomatoes" not in shown and "Tomatoes by the wall · fake-model" in shown
    screen.send_keys("Enter")
    screen.wait_for(f"Unarchived session {ids['Tomatoes by the wall']}")
    assert "Tomatoes by the wall" in iota("list", "sessions").stdout
    tree = iota("list", "sessions", "--tree").stdout
    assert f"{ids['Tomatoes by the wall']}  ├─ Tomatoes by the wall" in tree  # back in its place, newest first


def test_parent_and_unparent_move_a_session_in_the_tree(iota, chat):
    iota.write_config(CHAT)
    garden = make_chat_session("Garden", "q", "a")
    shed = make_chat_session("Shed", "q", "a")
    screen = chat("resume", shed)
    screen.type(f"/session parent {garden[:5]}")
    screen.send_keys("Enter")
    screen.wait_for(f"Session {shed} is now under {garden} (Garden)")
    assert f"{shed}  └─ Shed" in iota("list", "sessions", "--tree").stdout
    screen.type(f"/session parent {shed}")
    screen.send_keys("Enter")
    screen.wait_for(f"session {shed} cannot sit under itself")
    screen.type("/session unparent")
    screen.send_keys("Enter")
    screen.wait_for(f"Session {shed} is now at the top of the tree")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert "parent" not in read_meta(paths.sessions_dir() / shed)
    moved = iota("sessions", "parent", garden, shed)
    assert moved.stdout == f"Session {garden} is now under {shed} (Shed)\n"
    loop = iota("sessions", "parent", shed, garden)
    assert loop.stderr == f"Error: session {garden} is under {shed}; putting {shed} under it would make a loop\n"


def test_deleting_a_session_with_children_asks_and_moves_them_up(iota, chat):
    iota.write_config(CHAT)
    top = make_chat_session("Top", "q", "a")
    middle = make_chat_session("Middle", "q", "a")
    _set_meta(middle, parent=top)
    children = [make_chat_session(f"Child {n}", "q", "a") for n in (1, 2)]
    for child in children:
        _set_meta(child, parent=middle)
    screen = chat("run", "chat")
    screen.type("/session")
    screen.send_keys("Enter")
    screen.wait_for("Archive")
    screen.send_keys("Down", "Enter")  # Delete
    screen.wait_for("Delete which session?")
    screen.type("middle")
    screen.wait_for("1 of 4")
    screen.send_keys("Enter")
    screen.wait_for("Middle has 2 sessions under it — delete it?")
    screen.wait_for(f"Delete it and move them under {top}")
    screen.send_keys("Enter")
    screen.wait_for(f"Deleted session {middle}; the 2 under it moved under {top}")
    assert not (paths.sessions_dir() / middle).exists()
    assert [read_meta(paths.sessions_dir() / child)["parent"] for child in children] == [top, top]


def _set_meta(session_id: str, **changes) -> None:
    from iota.sessions.bundle import render_meta, write_atomically

    bundle = paths.sessions_dir() / session_id
    meta = read_meta(bundle)
    meta.update(changes)
    write_atomically(bundle / "meta.json", render_meta(meta))


def iota_pid(screen) -> int:
    from tests.e2e.test_chat import iota_pid as pid_under_pane

    return pid_under_pane(screen)


# -- one writer: refusals across processes ----------------------------------------------------------


def test_a_session_open_elsewhere_is_never_archived_moved_or_deleted_from_another_process(iota, chat):
    iota.write_config(CHAT)
    parent = make_chat_session("Parent", "q", "a")
    child = make_chat_session("Child", "q", "a")
    _set_meta(child, parent=parent)
    other = make_chat_session("Other", "q", "a")
    holder = chat("resume", child)
    pid = iota_pid(holder)
    meta_before = (paths.sessions_dir() / child / "meta.json").read_bytes()
    held = f"session {child} is open in another iota process (pid {pid})"
    for args, doing in ((("archive", child), "archive it"), (("parent", child, other), "move it"),
                        (("unparent", child), "move it")):
        refused = iota("sessions", *args)
        assert (refused.returncode, refused.stderr) == (1, f"Error: {held}; cannot {doing} from here\n")

    # Another chat deleting the parent would have to move the child out from under it: refused whole.
    screen = chat("run", "chat", cols=200)
    screen.type("/session")
    screen.send_keys("Enter")
    screen.wait_for("Archive")
    screen.send_keys("Down", "Enter")  # Delete
    screen.wait_for("Delete which session?")
    screen.type("parent")
    screen.wait_for("1 of ")
    screen.send_keys("Enter")
    screen.wait_for("Parent has 1 session under it — delete it?")
    screen.send_keys("Enter")
    screen.wait_for(f"{held}; cannot move it out from under {parent} from here, so {parent} was not deleted")
    screen.type("/session")  # and archiving it from there
    screen.send_keys("Enter")
    screen.wait_for("Archive")
    screen.send_keys("Down", "Down", "Enter")  # Archive
    screen.wait_for("Archive which session?")
    screen.type("child")
    screen.wait_for("1 of ")
    screen.send_keys("Enter")
    screen.wait_for(f"{held}; cannot archive it from here")
    assert (paths.sessions_dir() / parent / "meta.json").exists()
    assert (paths.sessions_dir() / child / "meta.json").read_bytes() == meta_before

    holder.send_keys("C-d")
    assert holder.wait_for_exit() == 0
    assert iota("sessions", "archive", child).returncode == 0  # once it is closed, it can be filed
    assert read_meta(paths.sessions_dir() / child)["archived"] is True


def test_a_bot_keeps_its_name_and_cannot_fork_or_be_forked(iota, chat):
    iota.write_config("  coder:\n    mode: bot\n    model: m\n    tools:\n      code:\n")
    iota.model.reply("Hello.")
    screen = chat("run", "coder")
    say(screen, "hello bot", "Hello.")
    screen.type("/fork")
    screen.send_keys("Enter")
    screen.wait_for("/fork is not available in a bot: a bot has one conversation")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    pointer = json.loads((paths.bots_dir() / "coder" / "bot.json").read_text())["session"]
    refused = iota("resume", "--fork", pointer, "-m", "hi")
    assert refused.stderr == (f"Error: session {pointer} is bot coder's one conversation; "
                              "a bot's session cannot be forked\n")
    assert iota("sessions", "rename", pointer, "x").returncode == 1
    assert read_meta(paths.sessions_dir() / pointer)["title"] == "coder"  # a bot keeps its name: no title pass
    assert iota.model.title_requests == []
