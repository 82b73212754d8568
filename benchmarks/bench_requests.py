"""Per-request cost of a provider as the conversation grows: does the ten-thousandth message cost
what the fortieth did?

For each provider (Anthropic Messages and OpenAI-compatible Chat Completions) and each history
length, one provider is kept for the whole run, as a chat keeps it, and every round sends it the
conversation grown by one exchange at its end (the steady state of a long chat), against the
project's fake model server, which answers each request with a short reply. The cases take turns
round by round (interleaved), so a slow moment of the machine hits them all alike.

Two figures per request:
  harness  CPU time of the thread that runs the provider (`time.thread_time`): converting the
           conversation, serialising the body, sending it and reading the reply. The fake server
           runs in another thread of the process and is not counted.
  wall     from `stream()` to its return, the fake server's own reading of the body included.

It prints min / median / max per case, the body size, and the ratios that matter: each
provider's cost at the longest history over its cost at the shortest, and Anthropic over
OpenAI-compatible.

    .venv/bin/python benchmarks/bench_requests.py [--rounds N] [--sizes 40,1000,10000]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.figures import SPREAD_HEADER, interleaved, parser, ratio, spread  # noqa: E402
from iota.messages import Message, ToolCall  # noqa: E402
from iota.providers import Request, make_provider  # noqa: E402
from tests.support.fake_model import FakeModel  # noqa: E402

PROVIDERS = ("anthropic", "openai")
WORDS = "the quick brown fox jumps over the lazy dog while the model reads another file of the project".split()


def text(n: int, words: int) -> str:
    return " ".join(WORDS[(n + i) % len(WORDS)] for i in range(words))


def exchange(n: int) -> list[Message]:
    """Four messages of a working conversation: a question, a tool call, its result, an answer
    (about 200 bytes a message on the wire)."""
    call = ToolCall(f"call_{n}", "read_file", {"path": f"src/module_{n}.py"})
    return [Message("user", text(n, 25)),
            Message("assistant", text(n + 1, 8), tool_calls=[call]),
            Message("tool", text(n + 2, 60), tool_call_id=call.id, tool_call_name=call.name),
            Message("assistant", text(n + 3, 30))]


def conversation(size: int) -> list[Message]:
    messages: list[Message] = []
    while len(messages) < size:
        messages += exchange(len(messages))
    return messages[:size]


class Case:
    def __init__(self, kind: str, size: int, model: FakeModel):
        self.kind, self.size = kind, size
        self.provider = make_provider("bench", kind, "key", model.url if kind == "anthropic" else model.openai_url)
        self.messages = conversation(size)
        self.harness: list[float] = []
        self.wall: list[float] = []
        self.body_bytes = 0

    @property
    def name(self) -> str:
        return f"{self.kind:9} {self.size:>6} messages"

    async def send(self, model: FakeModel, record: bool) -> None:
        # The conversation grows at its end, as a chat's does; its length stays about `size`.
        self.messages = self.messages + [Message("user", text(len(self.messages), 20))]
        model.reply("Fine.")
        request = Request("bench-model", "You are a helpful assistant.", self.messages)
        wall, cpu = time.perf_counter(), time.thread_time()
        await self.provider.stream(request, lambda piece: None)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        self.messages.append(Message("assistant", "Fine."))
        self.body_bytes = len(model.requests[-1].raw_body)
        model.clear_requests()
        if record:
            self.harness.append(cpu)
            self.wall.append(wall)


async def run(rounds: int, sizes: list[int]) -> None:
    with FakeModel() as model:
        cases = [Case(kind, size, model) for kind in PROVIDERS for size in sizes]
        for case in cases:  # the first request converts the whole conversation: not the steady state
            await case.send(model, record=False)
        for _, case in interleaved(cases, rounds):
            await case.send(model, record=True)
        for case in cases:
            await case.provider.aclose()

    print(f"per-request cost, {rounds} interleaved rounds")
    print(f"{'case':28} {'harness CPU, ms':^29}   {'wall, ms':^29}   {'body':>9}")
    print(f"{'':28} {SPREAD_HEADER}   {SPREAD_HEADER}")
    for case in cases:
        print(f"{case.name:28} {spread(case.harness, 1e3, 2)}   {spread(case.wall, 1e3, 2)}   "
              f"{case.body_bytes / 1e6:7.2f}MB")
    median = {(case.kind, case.size): statistics.median(case.harness) for case in cases}
    wall = {(case.kind, case.size): statistics.median(case.wall) for case in cases}
    shortest, longest = min(sizes), max(sizes)
    print("\nratios of the medians")
    for kind in PROVIDERS:
        print(ratio(f"{kind}, {longest} over {shortest} messages, harness CPU", median[kind, longest],
                    median[kind, shortest], "≤ 5x at 10000 over 40"))
        print(ratio(f"{kind}, {longest} over {shortest} messages, wall", wall[kind, longest], wall[kind, shortest]))
    for size in sizes:
        print(ratio(f"anthropic over openai at {size} messages, harness CPU", median["anthropic", size],
                    median["openai", size]))


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--rounds", type=int, default=15, help="requests per case (default 15)")
    options.add_argument("--sizes", default="40,1000,10000", help="history lengths, comma-separated (default 40,1000,10000)")
    args = options.parse_args()
    trio.run(run, args.rounds, [int(size) for size in args.sizes.split(",")])


if __name__ == "__main__":
    main()
