"""`/debug`: the round trips recorded in the bundle's debug.jsonl — their sizes, names and timings,
never what was said and never a key — and shown by bare `/debug`."""

from __future__ import annotations

import json
import stat

from actors.events import Notice, Panel, Status, TurnEnded
from iota.sessions.conversation import Conversation
from tests.actors.test_lane import open_lane  # noqa: F401  (the fixture)
from tests.support.fake_model import tool_call

KEY = "test-key"  # the project fixture's provider key


def debug_lines(session) -> list[dict]:
    path = session.dir / "debug.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_each_round_trip_is_recorded_as_metadata_only(open_lane, fake_model, session, project):
    (project / "a.txt").write_text("secret file text\n")
    fake_model.reply("Let me read it.", tool_calls=[tool_call("read_file", {"path": "a.txt"})], input_tokens=120)
    fake_model.reply("The file says something private.", output_tokens=9)
    async with open_lane(Conversation(session=session), agent="coder") as chat:
        chat.lane.setup.instructions = "my private instructions"
        chat.command("debug", "on")
        notice = (await chat.until(Notice))[-1]
        assert notice == Notice(f"Debug on: each round trip is recorded in {session.dir / 'debug.jsonl'}")
        assert [e for e in chat.pending() if isinstance(e, Status)][-1].debug
        chat.submit("please read a.txt, my password is hunter2")
        await chat.until(TurnEnded)
        chat.command("debug")
        panel = (await chat.until(Panel))[-1]
    first, second = debug_lines(session)
    assert first["model"] == "fake-model" and first["provider"] == "fake"
    assert first["request"]["messages"] == 1 and first["request"]["tools"] > 0
    assert first["request"]["bytes"] == len("please read a.txt, my password is hunter2")
    assert first["response"]["stop_reason"] == "tool_use"
    assert first["response"]["tool_calls"] == [{"name": "read_file", "arguments_bytes": len('{"path": "a.txt"}')}]
    assert first["response"]["usage"]["in"] == 120
    assert second["request"]["messages"] == 3 and second["response"]["usage"]["out"] == 9
    text = (session.dir / "debug.jsonl").read_text()
    for private in ("hunter2", "secret file text", "something private", "my private instructions", "a.txt", KEY):
        assert private not in text
    assert stat.S_IMODE((session.dir / "debug.jsonl").stat().st_mode) == 0o600
    assert panel.text.startswith(f"Recording: on → {session.dir / 'debug.jsonl'}\n")
    assert "fake-model  1 msgs" in panel.text and "→ tool_use, 15 B, 1 call  in 120" in panel.text
    session.close()


async def test_a_key_the_server_echoes_back_is_redacted(open_lane, fake_model, session):
    """A 401 whose message quotes the key it was sent (OpenAI's does, partly masked)."""
    fake_model.fail(401, message=f"Incorrect API key provided: {KEY}. You can find your API key at …")
    async with open_lane(Conversation(session=session)) as chat:
        chat.command("debug", "on")
        await chat.until(Notice)
        chat.submit("hi")
        await chat.until(TurnEnded)
    (entry,) = debug_lines(session)
    assert "Incorrect API key provided: [redacted]." in entry["error"]
    assert KEY not in (session.dir / "debug.jsonl").read_text()
    session.close()


async def test_off_stops_recording_and_an_unsaved_chat_keeps_them_in_memory(open_lane, fake_model):
    fake_model.reply("one")
    fake_model.reply("two")
    async with open_lane() as chat:
        chat.command("debug", "on")
        notice = (await chat.until(Notice))[-1]
        assert notice.text.startswith("Debug on: this chat is not saved, so round trips are kept in memory only")
        chat.submit("first")
        await chat.until(TurnEnded)
        chat.command("debug", "off")
        await chat.until(Notice)
        chat.submit("second")
        await chat.until(TurnEnded)
        assert len(chat.lane.setup.debug.recent) == 1
        chat.command("debug", "sideways")
        refusal = (await chat.until(Notice))[-1]
    assert refusal == Notice('/debug takes on or off, not "sideways"', warning=True)
