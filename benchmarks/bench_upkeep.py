"""What a bot's upkeep costs: model calls and tokens per 100 turns at the default throttle.

Runs the real chat (supervisor, lane, journal, upkeep) in-process against the fake model server,
with a scripted face: N turns of a person working with the bot (with --remember-every N, one
message in N asks it to remember something, which is wrapped up at once, beside the every-5-turns
throttle).
The model answers each turn in a few sentences, a third of the turns after a tool call; the
upkeep answers with one `remember candidates` call, then a closing line, as a model with
something to note would (the worst usual case: two calls a run).

The fake model's own usage figures are scripted, so tokens are counted here, locally, with the
estimate iota's meter uses (iota.tokens): each request's system prompt, messages and
tool definitions as sent, and each reply's text and tool calls. The conversation's own requests
are counted the same way, to put the upkeep's share in proportion. These are counts, the same on
every run, so there is nothing to repeat or interleave.

    .venv/bin/python benchmarks/bench_upkeep.py [turns] [--remember-every N]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.events import Leave, Status, Submit, TurnEnded  # noqa: E402
from actors.supervisor import run_chat  # noqa: E402
from benchmarks.figures import parser  # noqa: E402
from iota import tokens  # noqa: E402
from iota.config import settings as config  # noqa: E402
from tests.support.fake_model import FakeModel, tool_call  # noqa: E402
from ui.chat_parts import open_chat  # noqa: E402
from ui.cli import build_parser  # noqa: E402

TOPICS = ["the billing service", "the flaky checkout test", "staging deploys", "the release notes",
          "the payments retry logic", "the on-call runbook", "the database migration", "the CI cache"]
REPLY = ("I looked at {topic}: the change is in place, the tests pass, and the one open question is whether "
         "to backport it. I would keep it on main for now and revisit after the release.")


def message(turn: int, remember_every: int) -> str:
    topic = TOPICS[turn % len(TOPICS)]
    if remember_every and turn % remember_every == 0:
        return f"Remember that {topic} is owned by the platform team, and I review its changes on Fridays."
    return f"Next, have a look at {topic} and tell me what you would change (turn {turn})."


def respond(body: dict) -> dict:
    """The conversation's model: a tool call every third turn, else a short answer."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": REPLY.format(topic="it")}
    text = last["content"] if isinstance(last["content"], str) else ""
    if "(turn" in text and int(text.rsplit("turn ", 1)[1].rstrip(").")) % 3 == 0:
        return {"tool_calls": [tool_call("remember", {"action": "candidates"})]}
    return {"text": REPLY.format(topic=TOPICS[len(body["messages"]) % len(TOPICS)])}


def respond_upkeep(body: dict) -> dict:
    """The upkeep's model: note one candidate, then close."""
    if body["messages"][-1]["role"] == "tool":
        return {"text": "Noted one candidate."}
    return {"tool_calls": [tool_call("remember", {"action": "candidates", "items": [
        {"text": f"Reviews changes on Fridays ({time.monotonic_ns()})", "keywords": ["review", "friday"]}]})]}


def request_tokens(body: dict) -> int:
    """A request as sent: its messages (the system prompt among them) and its tool definitions."""
    texts = [json.dumps(message.get("content"), ensure_ascii=False) for message in body["messages"]]
    texts += [json.dumps(message.get("tool_calls"), ensure_ascii=False) for message in body["messages"]
              if message.get("tool_calls")]
    texts.append(json.dumps(body.get("tools") or [], ensure_ascii=False))
    return tokens.estimate(texts)


def reply_tokens(reply: dict) -> int:
    calls = [{"name": call.name, "arguments": call.arguments} for call in reply.get("tool_calls", [])]
    return tokens.estimate([reply.get("text", ""), json.dumps(calls, ensure_ascii=False) if calls else ""])


async def drive(parts, turns: int, remember_every: int) -> None:
    async def face(events: trio.MemoryReceiveChannel, inputs: trio.MemorySendChannel) -> None:
        for turn in range(1, turns + 1):
            await inputs.send(Submit(message(turn, remember_every)))
            ended = False
            async for event in events:
                ended = ended or isinstance(event, TurnEnded)
                if ended and isinstance(event, Status) and not event.running and not event.queued:
                    break
        await inputs.send(Leave(0))
        async for _ in events:
            pass

    await run_chat(parts, face)


def main() -> None:
    arguments = parser(__doc__)
    arguments.add_argument("turns", nargs="?", type=int, default=100, help="turns of the conversation (default 100)")
    arguments.add_argument("--remember-every", type=int, default=0, help="one message in N asks to remember (0: none)")
    options = arguments.parse_args()
    with tempfile.TemporaryDirectory() as home, FakeModel() as model:
        os.environ["HOME"] = home
        project = Path(home, "project")
        project.mkdir()
        os.chdir(project)
        Path(home, ".iota.yaml").write_text(
            f"providers:\n  fake: {{type: openai, url: '{model.openai_url}', key: k}}\n"
            "models:\n  m: {provider: fake, id: fake, context_window: 200k}\n"
            "agents:\n  coder: {mode: bot, model: m}\n")
        model.respond_with(respond)
        model.respond_to_upkeep(respond_upkeep)
        with ExitStack() as cleanup:
            parts = open_chat(build_parser().parse_args(["run", "coder"]), config.load(project), cleanup)
            parts.write_terminal = None
            started = time.perf_counter()
            trio.run(drive, parts, options.turns, options.remember_every)
            seconds = time.perf_counter() - started
        model.assert_no_unexpected()
        upkeeps = model.upkeep_requests
        runs = sum(1 for request in upkeeps if request.body["messages"][-1]["role"] == "user")
        upkeep_in = sum(request_tokens(request.body) for request in upkeeps)
        upkeep_out = sum(reply_tokens(respond_upkeep(request.body)) for request in upkeeps)
        chat_in = sum(request_tokens(request.body) for request in model.requests)
        scale = 100 / options.turns
        print(f"{options.turns} turns in {seconds:.1f} s (one message in {options.remember_every or '∞'} asks to "
              f"remember); per 100 turns at upkeep_every: 5:")
        print(f"  upkeep runs        {runs * scale:8.1f}")
        print(f"  upkeep model calls {len(upkeeps) * scale:8.1f}")
        print(f"  upkeep tokens in   {upkeep_in * scale:8.0f}  ({upkeep_in / max(len(upkeeps), 1):.0f} a call)")
        print(f"  upkeep tokens out  {upkeep_out * scale:8.0f}")
        print(f"  conversation       {len(model.requests) * scale:8.1f} calls, {chat_in * scale:.0f} tokens in "
              f"— the upkeep adds {100 * upkeep_in / max(chat_in, 1):.1f}% to the tokens sent")


if __name__ == "__main__":
    main()
