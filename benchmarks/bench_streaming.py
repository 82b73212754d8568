"""What one long streamed reply costs: is the 80,000th word as cheap as the 5,000th, and how soon
after the model has sent the last word is it on the screen?

The model is the project's fake server, run in a child process of its own (so its CPU is not
counted, as a real model's is not), answering "Write N words." with a Markdown reply of N words
(headings, paragraphs with emphasis and inline code, lists, code blocks) streamed one word a
piece, as a model streams tokens.

Two measurements, each case interleaved round by round so a busy moment of the machine hits
them all alike:

  chat      the real chat (supervisor, lane, provider streaming, session writes with the
            partial flushes of a streaming reply) in this process, with a face that only
            reads the events, for a reply of 5k, 20k and 80k words on each wire protocol. The
            figure is the process's CPU time from sending the message to the end of the turn,
            per 1,000 words; flat means each size costs the same per word.
  screen    the real `iota` in a tmux terminal (110×32): from pressing Enter on "Write 20000
            words." until the reply's last word is on the screen, against the fake's own send
            time — the same reply sent to a client that only reads the socket.

It prints min / median / max per case and the ratios: the per-word cost at the largest size
over the smallest, and the screen time over the send time. `--profile FILE` writes a cProfile
of one chat turn at the largest size instead (read it with `python -m pstats FILE`).

    .venv/bin/python benchmarks/bench_streaming.py [--rounds N] [--sizes 5000,20000,80000]
        [--screen-words 20000] [--no-screen] [--profile FILE]

The screen measurement needs tmux; without it only the chat measurement runs.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

IOTA = str(Path(sys.executable).with_name("iota"))
DIALECTS = ("openai", "anthropic")
ASK = re.compile(r"Write (\d+) words\.")
END = "That is the end of reply {words}."
# The chat is ready for keys when its card shows the mode row (as tests/e2e/conftest.py waits).
READY = re.compile(r"│ ([^│ ]+ · )?(chat|agent|bot) · ")
SCREEN_TIMEOUT = 120.0

# --- the reply --------------------------------------------------------------------------------

SECTION = """## Part {n}: the cache and the build

The build reads **every module** once and keeps what it learnt in `cache/{n}.json`, so the second
run skips the parse entirely; see [the notes](https://example.com/notes/{n}) for the details of
why a stale entry is detected by its *hash* and never by its time.

- the parser keeps its tables between runs
- the checker reads only what changed since run {n}
  - and what depends on it
- the writer flushes once at the end

```python
def cached(path, table):
    key = digest(path.read_bytes())
    if key not in table:
        table[key] = parse(path)
    return table[key]
```

> A cache that cannot be trusted is worse than none: keep the hash.

"""


def reply_text(words: int) -> str:
    """A Markdown reply of about `words` words, its last paragraph naming the count."""
    sections, count, n = [], 0, 0
    while count < words:
        n += 1
        section = SECTION.format(n=n)
        sections.append(section)
        count += len(section.split())
    return "".join(sections) + END.format(words=words) + "\n"


# --- the fake model, in a process of its own ---------------------------------------------------

def serve() -> None:
    """`--serve`: run the fake model until stdin closes; its address goes out on stdout."""
    from tests.support.fake_model import FakeModel

    replies: dict[int, str] = {}

    def answer(body) -> dict:
        asked = ASK.search(str(body))
        words = int(asked.group(1)) if asked else 10
        text = replies.setdefault(words, reply_text(words))
        return {"text": text, "pieces": len(text.split()), "output_tokens": words}

    with FakeModel() as model:
        model.respond_with(answer)
        print(model.url, flush=True)
        sys.stdin.read()


class ModelProcess:
    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.url = self.process.stdout.readline().strip()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(10)


def send_time(url: str, words: int) -> float:
    """Seconds the fake takes to send the reply to a client that only reads the socket."""
    body = ('{"model": "fake", "stream": true, "messages": [{"role": "user", "content": "Write %d words."}]}'
            % words).encode()
    host, port = url.removeprefix("http://").split(":")
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(body), body))
    start = time.perf_counter()
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(request)
        while connection.recv(1 << 16):
            pass
    return time.perf_counter() - start


# --- the chat, in this process -------------------------------------------------------------------

def write_config(home: Path, url: str) -> None:
    Path(home, ".iota.yaml").write_text(
        f"providers:\n  oa: {{type: openai, url: '{url}/v1', key: k}}\n"
        f"  an: {{type: anthropic, url: '{url}', key: k}}\n"
        "models:\n  m-openai: {provider: oa, id: fake, context_window: 1m}\n"
        "  m-anthropic: {provider: an, id: fake, context_window: 1m}\n"
        "agents:\n  writer-openai: {mode: chat, model: m-openai}\n"
        "  writer-anthropic: {mode: chat, model: m-anthropic}\n")


def chat_turn(dialect: str, words: int, project: Path, profile: str | None = None) -> float:
    """CPU seconds of this process from sending "Write N words." to the end of the turn, in a
    fresh chat (opening it is not counted)."""
    import trio

    from actors.events import Leave, Submit, TurnEnded
    from actors.supervisor import run_chat
    from iota.config import settings as config
    from ui.chat_parts import open_chat
    from ui.cli import build_parser

    spent: list[float] = []
    profiler = cProfile.Profile() if profile else None

    async def face(events, inputs) -> None:
        start = time.process_time()
        if profiler:
            profiler.enable()
        await inputs.send(Submit(f"Write {words} words."))
        async for event in events:
            if isinstance(event, TurnEnded):
                break
        if profiler:
            profiler.disable()
        spent.append(time.process_time() - start)
        await inputs.send(Leave(0))
        async for _ in events:  # drain until the chat closes
            pass

    args = build_parser().parse_args(["run", f"writer-{dialect}"])
    with ExitStack() as cleanup:
        parts = open_chat(args, config.load(project), cleanup)
        parts.write_terminal = None
        trio.run(run_chat, parts, face)
    if profiler:
        profiler.dump_stats(profile)
    return spent[0]


# --- the screen ----------------------------------------------------------------------------------

def screen_time(directory: Path, home: Path, project: Path, words: int) -> float:
    """Seconds from Enter to the reply's last words on the screen of a real chat in tmux."""
    from tests.support.terminal import Terminals

    env = {key: value for key, value in os.environ.items() if key not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    terminals = Terminals(directory)
    try:
        screen = terminals.start([IOTA, "run", "writer-openai"], cols=110, rows=32, env={**env, "HOME": str(home)},
                                 cwd=project)
        screen.wait_for(READY, timeout=30)
        screen.type(f"Write {words} words.")
        end = END.format(words=words)
        start = time.perf_counter()
        screen.send_keys("Enter")
        screen.wait_for(end, timeout=SCREEN_TIMEOUT)
        return time.perf_counter() - start
    finally:
        terminals.kill_all()


# --- the run -------------------------------------------------------------------------------------

def spread(values: list[float], scale: float = 1e3, digits: int = 1) -> str:
    return " ".join(f"{value * scale:8.{digits}f}" for value in (min(values), statistics.median(values), max(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="See the module docstring for "
                                     "what is measured.", formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="measurements per case (default 5)")
    parser.add_argument("--sizes", default="5000,20000,80000", help="reply sizes in words for the chat "
                        "measurement, comma-separated (default 5000,20000,80000)")
    parser.add_argument("--screen-words", type=int, default=20000, help="reply size of the screen measurement "
                        "(default 20000)")
    parser.add_argument("--no-screen", action="store_true", help="skip the screen measurement")
    parser.add_argument("--dialects", default=",".join(DIALECTS), help="wire protocols of the chat measurement "
                        "(default openai,anthropic)")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of one chat turn of the largest size "
                        "(first dialect) to FILE and stop")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    sizes = [int(size) for size in args.sizes.split(",")]
    dialects = args.dialects.split(",")
    screen = not args.no_screen
    if screen and shutil.which("tmux") is None:
        print("tmux is not installed: the screen measurement is skipped")
        screen = False

    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch, "home")
        project = home / "project"
        project.mkdir(parents=True)
        os.environ["HOME"] = str(home)
        os.chdir(project)
        model = ModelProcess()
        try:
            write_config(home, model.url)
            if args.profile:
                chat_turn(dialects[0], max(sizes), project, profile=args.profile)
                print(f"profile of a {max(sizes)}-word turn ({dialects[0]}) written to {args.profile}")
                return
            cases = [(dialect, size) for dialect in dialects for size in sizes]
            chat: dict[tuple[str, int], list[float]] = {case: [] for case in cases}
            sent: list[float] = []
            shown: list[float] = []
            chat_turn(dialects[0], min(sizes), project)  # warm up: imports, the first connection
            for round_ in range(args.rounds):
                shift = round_ % len(cases)
                for dialect, size in cases[shift:] + cases[:shift]:
                    chat[dialect, size].append(chat_turn(dialect, size, project) / (size / 1000))
                if screen:
                    sent.append(send_time(model.url, args.screen_words))
                    shown.append(screen_time(Path(scratch), home, project, args.screen_words))
                print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
        finally:
            model.close()

    print(f"one streamed reply, {args.rounds} interleaved rounds; min / median / max")
    print(f"\nchat: CPU ms per 1,000 words from the message to the end of the turn")
    for dialect, size in cases:
        print(f"  {dialect:10} {size:>6} words  {spread(chat[dialect, size])}")
    print(f"\n  per-word cost at {max(sizes)} over {min(sizes)} words (medians):")
    for dialect in dialects:
        ratio = statistics.median(chat[dialect, max(sizes)]) / statistics.median(chat[dialect, min(sizes)])
        print(f"  {dialect:10} {ratio:5.2f}x")
    if screen:
        print(f"\nscreen: a {args.screen_words}-word reply, seconds")
        print(f"  the fake's send time      {spread(sent, 1, 2)}")
        print(f"  Enter to the last word    {spread(shown, 1, 2)}")
        print(f"  on screen over send time (medians): {statistics.median(shown) / statistics.median(sent):5.2f}x")


if __name__ == "__main__":
    main()
