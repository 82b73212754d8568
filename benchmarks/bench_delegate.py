"""Helpers side by side: one turn that hands out four tasks against one that hands out one.

A lead agent's turn delegates to helpers whose replies stream slowly from the fake model server
(`--pieces` pieces, `--drip` seconds apart: the model's time, which helpers side by side should
overlap). Each case is the whole turn, in-process: the lead's request, the helpers' turns (each
with its child session written record by record), and the lead's closing request. Four helpers
run in about the time of one when they truly run at once: the ratio four / one is printed
(goal: near 1, far from 4). Also printed: the idle cost of the toolset, the characters the
`delegate` tool adds to every request and the time to open a chat's tools with and without it.

    .venv/bin/python benchmarks/bench_delegate.py [--runs N] [--pieces N] [--drip S]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.figures import SPREAD_HEADER, interleaved, parser, ratio, spread  # noqa: E402
from tests.support.fake_model import FakeModel, tool_call  # noqa: E402

CONFIG = """\
providers:
  fake: {{type: openai, url: '{url}', key: k}}
models:
  m: {{provider: fake, id: fake-model}}
agents:
  lead: {{model: m, system: You are the lead., tools: {{code: {{read_only: true}}, delegate: {{agents: [helper]}}}}}}
  plain: {{model: m, system: You are the lead., tools: {{code: {{read_only: true}}}}}}
  helper: {{model: m, system: You are the helper., tools: {{code: {{read_only: true}}}}}}
"""


def responder(pieces: int, drip: float):
    def respond(body: dict) -> dict:
        system = body["messages"][0]["content"]
        if "You are the helper." in system:
            return {"text": "x" * pieces * 8, "pieces": pieces, "drip": drip}
        if any(message["role"] == "tool" for message in body["messages"]):
            return {"text": "Done."}
        wanted = int(body["messages"][-1]["content"])
        return {"tool_calls": [tool_call("delegate", {"agent": "helper", "task": f"Part {n}."}) for n in range(wanted)]}
    return respond


async def one_turn(project: Path, helpers: int) -> float:
    from iota.agent import Approvals, NoRecorder, Turn, run_turn
    from iota.chat import prepare_chat
    from iota.config import settings
    from iota.messages import USER, Message

    loaded = settings.load(project)
    setup = prepare_chat(loaded, loaded.agents["lead"], project, interactive=False)
    session = setup.new_session()
    setup.caller_session = lambda: session
    user = Message(USER, str(helpers))
    start = time.perf_counter()
    async with setup.open_tools() as toolbox:
        await run_turn(Turn(), setup.provider(), setup.request([user], toolbox), toolbox, Approvals(None),
                       recorder=NoRecorder())
    elapsed = time.perf_counter() - start
    await setup.aclose()
    session.close()
    return elapsed


async def idle_cost(project: Path, agent: str) -> tuple[float, int]:
    from iota.chat import prepare_chat
    from iota.config import settings

    loaded = settings.load(project)
    setup = prepare_chat(loaded, loaded.agents[agent], project, interactive=False)
    start = time.perf_counter()
    async with setup.open_tools() as toolbox:
        opened = time.perf_counter() - start
        spec = [tool for tool in toolbox.specs() if tool.name == "delegate"]
        size = len(json.dumps([s.__dict__ for s in spec]))
    return opened, size


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--runs", type=int, default=5)
    options.add_argument("--pieces", type=int, default=10)
    options.add_argument("--drip", type=float, default=0.05)
    args = options.parse_args()
    with tempfile.TemporaryDirectory() as home, FakeModel() as model:
        os.environ["HOME"] = home
        project = Path(home) / "project"
        (project / ".git").mkdir(parents=True)
        Path(home, ".iota.yaml").write_text(CONFIG.format(url=model.openai_url))
        model.respond_with(responder(args.pieces, args.drip))
        times: dict[int, list[float]] = {1: [], 4: []}
        for _, helpers in interleaved([1, 4], args.runs):
            times[helpers].append(trio.run(one_turn, project, helpers))
            model.clear_requests()
        opened = {agent: [] for agent in ("plain", "lead")}
        size = 0
        for _, agent in interleaved(list(opened), args.runs):
            seconds, chars = trio.run(idle_cost, project, agent)
            opened[agent].append(seconds)
            size = max(size, chars)
    print(f"a helper's reply: {args.pieces} pieces, {args.drip}s apart; {args.runs} runs")
    print(f"{'turn (ms)':30} {SPREAD_HEADER}")
    for helpers, values in times.items():
        print(f"  {helpers} helper{'s' if helpers > 1 else '':1} {'':19} {spread(values, 1000, 1)}")
    print(f"{'opening the tools (ms)':30} {SPREAD_HEADER}")
    for agent, values in opened.items():
        label = "with delegate" if agent == "lead" else "without"
        print(f"  {label:28} {spread(values, 1000, 2)}")
    print(f"  the delegate tool's definition: {size} characters on every request")
    print(ratio("four helpers / one helper (turn time)", statistics.median(times[4]), statistics.median(times[1]),
                "about 1"))


if __name__ == "__main__":
    main()
