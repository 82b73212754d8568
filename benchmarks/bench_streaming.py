"""What one long streamed reply costs: is the 80,000th word as cheap as the 5,000th, and how soon
after the model has sent the last word is it on the screen?

The model is the project's fake server, run in a child process of its own (so its CPU is not
counted, as a real model's is not), answering "Write N words." with a Markdown reply of N words
(headings, paragraphs with emphasis and inline code, lists, code blocks) streamed one word a
piece, as a model streams tokens.

Two measurements, their cases interleaved round by round so a busy moment of the machine hits
them all alike:

  chat      the real chat (supervisor, lane, provider streaming, session writes with the
            partial flushes of a streaming reply) in this process, with a face that only
            reads the events, for a reply of 5k, 20k and 80k words on each wire protocol. The
            figure is the process's CPU time from sending the message to the end of the turn,
            per 1,000 words; flat means each size costs the same per word.
  screen    the real `iota` of this tree in a tmux terminal (110x32): from pressing Enter on
            "Write 20000 words." until the reply's last word is on the screen (after a short
            reply, so that what a first reply loads is not counted), and the chat's CPU time
            meanwhile; beside it the fake's own send time, from the request's arrival
            to its last byte: to the chat, and to a client that only reads the socket; and
            the time the provider alone (OpenAI-compatible, in this process, the text
            handed to nothing) takes to read the same reply: the floor under the chat.

It prints min / median / max per case and the ratios of the medians: per-word cost at the
largest size over the smallest (goal: within 1.2x), the screen time over the fake's send time
(goal: at most 2x), and the provider alone and the chat's own CPU (no screen) over that send
time — what reading the reply costs before anything is drawn.

To find what grows, `--profile FILE` writes a cProfile of one chat turn of the largest size and
`--profile-screen FILE` one of the chat in tmux showing the screen's reply (read either with
`python -m pstats FILE`). The screen measurement needs tmux; without it only the chat runs.

    .venv/bin/python benchmarks/bench_streaming.py [--rounds N] [--sizes 5000,20000,80000]
        [--screen-words 20000] [--no-screen] [--dialects openai,anthropic] [--profile FILE]
        [--profile-screen FILE]
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

from benchmarks.figures import SPREAD_HEADER, environment_without_keys, interleaved, parser, ratio, spread  # noqa: E402

# `iota` from this tree (the screen measurement sets PYTHONPATH to it), plain or under cProfile.
CHAT = "import sys; from ui.cli import main; sys.argv[0] = 'iota'; sys.exit(main())"
PROFILED_CHAT = "import cProfile, sys; from ui.cli import main; sys.argv[0] = 'iota'; cProfile.run('main()', {profile!r})"
DIALECTS = ("openai", "anthropic")
ASK = re.compile(r"Write (\d+) words\.")
END = "That is the end of reply {words}."
# The chat is ready for keys when its card shows the mode row (as tests/e2e/conftest.py waits).
READY = re.compile(r"│ ([^│ ]+ · )?(chat|agent|bot) · ")
SCREEN_TIMEOUT = 120.0
WARM_UP_WORDS = 300

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
    """`--serve`: run the fake model until stdin closes; its address goes out on stdout. Each
    line read from stdin is answered with the send time of the last reply: from the request's
    arrival to the last byte written."""
    import threading

    from tests.support.fake_model import FakeModel

    replies: dict[int, str] = {}
    send_times: list[float] = []

    def answer(body) -> dict:
        arrived = time.perf_counter()
        send_times.clear()  # only this reply's time is asked for from now on
        request = model.requests[-1]  # recorded before the responder is asked

        def time_it() -> None:
            request.wait_done(SCREEN_TIMEOUT)
            send_times.append(time.perf_counter() - arrived)

        threading.Thread(target=time_it, daemon=True).start()
        asked = ASK.findall(str(body))  # the last message's ask: the conversation holds the earlier ones
        words = int(asked[-1]) if asked else 10
        text = replies.setdefault(words, reply_text(words))
        return {"text": text, "pieces": len(text.split()), "output_tokens": words}

    with FakeModel() as model:
        model.respond_with(answer)
        print(model.url, flush=True)
        for _ in sys.stdin:
            while not send_times:
                time.sleep(0.01)
            print(send_times.pop(), flush=True)


class ModelProcess:
    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.url = self.process.stdout.readline().strip()

    def last_send_time(self) -> float:
        """How long the fake took to send its last reply (it waits for the reply to end)."""
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(10)


def read_only(url: str, words: int) -> None:
    """Ask for the reply as a client that only reads the socket, as fast as the fake can send."""
    body = ('{"model": "fake", "stream": true, "messages": [{"role": "user", "content": "Write %d words."}]}'
            % words).encode()
    host, port = url.removeprefix("http://").split(":")
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(body), body))
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(request)
        while connection.recv(1 << 16):
            pass


def provider_time(url: str, words: int) -> float:
    """Seconds the OpenAI-compatible provider alone takes to read the reply, from sending the
    request to the reply's end, handing its text to nothing: the floor under the chat."""
    import trio

    from iota.messages import Message
    from iota.providers import Request, make_provider

    async def read() -> float:
        provider = make_provider("bench", "openai", "key", url + "/v1")
        start = time.perf_counter()
        await provider.stream(Request("fake", "", [Message("user", f"Write {words} words.")]), lambda text: None)
        elapsed = time.perf_counter() - start
        await provider.aclose()
        return elapsed

    return trio.run(read)


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

def screen_time(directory: Path, home: Path, project: Path, words: int, chat_cpu: list[float],
                profile: str | None = None) -> float:
    """Seconds from Enter to the reply's last words on the screen of a real chat in tmux (the CPU
    seconds the chat spent meanwhile go to `chat_cpu`); with `profile`, the chat runs under
    cProfile and leaves (Ctrl+D) once the words are shown."""
    from tests.support.terminal import Terminals

    env = {**environment_without_keys(home), "PYTHONPATH": str(ROOT)}  # the code of this tree, whatever is installed
    chat = CHAT if profile is None else PROFILED_CHAT.format(profile=profile)
    terminals = Terminals(directory)
    try:
        screen = terminals.start([sys.executable, "-c", chat, "run", "writer-openai"], cols=110, rows=32, env=env,
                                 cwd=project)
        screen.wait_for(READY, timeout=30)
        chat = chat_pid(screen)
        # A short reply first, so what is measured is streaming and not what a first reply loads
        # (the lexers of its code blocks, the parser's tables).
        screen.type(f"Write {WARM_UP_WORDS} words.")
        screen.send_keys("Enter")
        screen.wait_for(END.format(words=WARM_UP_WORDS), timeout=SCREEN_TIMEOUT)
        screen.type(f"Write {words} words.")
        end = END.format(words=words)
        cpu = cpu_seconds(chat)
        start = time.perf_counter()
        screen.send_keys("Enter")
        screen.wait_for(end, timeout=SCREEN_TIMEOUT)
        shown = time.perf_counter() - start
        chat_cpu.append(cpu_seconds(chat) - cpu)
        if profile:
            screen.send_keys("C-d")
            screen.wait_for_exit(timeout=30)
        return shown
    finally:
        terminals.kill_all()


def chat_pid(screen) -> int:
    """The chat's process: the child of the shell that the pane runs (see tests.support.terminal)."""
    shell = screen._tmux("display-message", "-p", "-t", "=test:", "#{pane_pid}").strip()
    children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
    return int(children[0])


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- the run -------------------------------------------------------------------------------------

class Figures:
    """What the rounds measured: per chat case, CPU ms per 1,000 words; for the screen, seconds."""

    def __init__(self) -> None:
        self.chat: dict[tuple[str, int], list[float]] = {}
        self.floor: list[float] = []      # the fake sending the reply to a client that only reads
        self.sent: list[float] = []       # the fake sending it to the chat in tmux
        self.provider: list[float] = []   # the provider alone reading it
        self.shown: list[float] = []      # Enter to the last word on the chat's screen
        self.shown_cpu: list[float] = []  # the chat's CPU time meanwhile


def measure(case: tuple, figures: Figures, model: ModelProcess, scratch: Path, home: Path, project: Path) -> None:
    if case[0] == "chat":
        _, dialect, size = case
        figures.chat.setdefault((dialect, size), []).append(chat_turn(dialect, size, project) / (size / 1000))
        return
    words = case[1]
    read_only(model.url, words)
    figures.floor.append(model.last_send_time())
    figures.provider.append(provider_time(model.url, words))
    figures.shown.append(screen_time(scratch, home, project, words, figures.shown_cpu))
    figures.sent.append(model.last_send_time())


def report(figures: Figures, rounds: int, dialects: list[str], sizes: list[int], screen_words: int | None) -> None:
    print(f"one long streamed reply, {rounds} interleaved rounds")
    print(f"\nchat: CPU ms per 1,000 words, from the message to the end of the turn\n{'':25} {SPREAD_HEADER}")
    for (dialect, size), values in figures.chat.items():
        print(f"  {dialect:10} {size:>6} words {spread(values, 1e3, 1)}")
    print("\nratios of the medians")
    for dialect in dialects:
        print(ratio(f"{dialect}, per word at {max(sizes)} over {min(sizes)} words",
                    statistics.median(figures.chat[dialect, max(sizes)]),
                    statistics.median(figures.chat[dialect, min(sizes)]), "≤ 1.2x from 5k to 80k"))
    if screen_words is None:
        return
    print(f"\nscreen: a {screen_words}-word reply, seconds\n{'':51} {SPREAD_HEADER}")
    for label, values in (("the fake sending it to a client that only reads", figures.floor),
                          ("the provider alone reading it (no chat, no screen)", figures.provider),
                          ("the fake sending it to the chat", figures.sent),
                          ("Enter to the last word on the chat's screen", figures.shown),
                          ("the chat's CPU time meanwhile", figures.shown_cpu)):
        print(f"  {label:50}{spread(values, 1, 2)}")
    shown = statistics.median(figures.shown)
    print("\nratios of the medians")
    print(ratio("on screen over the fake's send time to the chat", shown, statistics.median(figures.sent), "≤ 2x"))
    print(ratio("on screen over its send time to a reading client", shown, statistics.median(figures.floor)))
    print(ratio("the provider alone over the send time to the chat", statistics.median(figures.provider),
                statistics.median(figures.sent)))
    if ("openai", screen_words) in figures.chat:  # what the chat costs without drawing anything
        alone = statistics.median(figures.chat["openai", screen_words]) * screen_words / 1000
        print(ratio("the chat's own CPU (no screen) over the send time", alone, statistics.median(figures.sent)))


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--rounds", type=int, default=5, help="measurements per case (default 5)")
    options.add_argument("--sizes", default="5000,20000,80000", help="reply sizes in words for the chat "
                         "measurement, comma-separated (default 5000,20000,80000)")
    options.add_argument("--screen-words", type=int, default=20000, help="reply size of the screen measurement "
                         "(default 20000)")
    options.add_argument("--no-screen", action="store_true", help="skip the screen measurement")
    options.add_argument("--dialects", default=",".join(DIALECTS), help="wire protocols of the chat measurement "
                         "(default openai,anthropic)")
    options.add_argument("--profile", metavar="FILE", help="write a cProfile of one chat turn of the largest size "
                         "(first dialect) to FILE and stop")
    options.add_argument("--profile-screen", metavar="FILE", help="write a cProfile of the chat in tmux showing "
                         "one reply of --screen-words to FILE and stop")
    options.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = options.parse_args()
    if args.serve:
        serve()
        return
    sizes = [int(size) for size in args.sizes.split(",")]
    dialects = args.dialects.split(",")
    screen_words: int | None = None if args.no_screen else args.screen_words
    if screen_words is not None and shutil.which("tmux") is None:
        print("tmux is not installed: the screen measurement is skipped")
        screen_words = None

    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        home = scratch / "home"
        project = home / "project"
        project.mkdir(parents=True)
        environment = environment_without_keys(home)  # no key, no tmux of the caller's: nothing real reached
        os.environ.clear()
        os.environ.update(environment)
        os.chdir(project)
        model = ModelProcess()
        try:
            write_config(home, model.url)
            if args.profile:
                chat_turn(dialects[0], max(sizes), project, profile=args.profile)
                print(f"profile of a {max(sizes)}-word turn ({dialects[0]}) written to {args.profile}")
                return
            if args.profile_screen:
                shown = screen_time(scratch, home, project, args.screen_words, [], os.path.abspath(args.profile_screen))
                print(f"{args.screen_words} words on screen in {shown:.2f} s (profiled); the profile is in "
                      f"{args.profile_screen}")
                return
            cases: list[tuple] = [("chat", dialect, size) for dialect in dialects for size in sizes]
            cases += [("screen", screen_words)] if screen_words is not None else []
            figures = Figures()
            chat_turn(dialects[0], min(sizes), project)  # warm up: imports, the first connection
            for done, (round_, case) in enumerate(interleaved(cases, args.rounds), 1):
                measure(case, figures, model, scratch, home, project)
                if done % len(cases) == 0:
                    print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
        finally:
            model.close()
    report(figures, args.rounds, dialects, sizes, screen_words)


if __name__ == "__main__":
    main()
