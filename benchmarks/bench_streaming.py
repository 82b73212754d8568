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

# `iota` from this tree (the screen measurement sets PYTHONPATH to it), plain or under cProfile.
CHAT = "import sys; from ui.cli import main; sys.argv[0] = 'iota'; sys.exit(main())"
PROFILED_CHAT = "import cProfile, sys; from ui.cli import main; sys.argv[0] = 'iota'; cProfile.run('main()', {profile!r})"
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
        asked = ASK.search(str(body))
        words = int(asked.group(1)) if asked else 10
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

    env = {key: value for key, value in os.environ.items() if key not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))  # the code of this tree, whatever is installed
    chat = CHAT if profile is None else PROFILED_CHAT.format(profile=profile)
    terminals = Terminals(directory)
    try:
        screen = terminals.start([sys.executable, "-c", chat, "run", "writer-openai"], cols=110, rows=32, env=env,
                                 cwd=project)
        screen.wait_for(READY, timeout=30)
        chat = chat_pid(screen)
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
    parser.add_argument("--profile-screen", metavar="FILE", help="write a cProfile of the chat in tmux showing "
                        "one reply of --screen-words to FILE and stop")
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
            if args.profile_screen:
                shown = screen_time(Path(scratch), home, project, args.screen_words, [],
                                    os.path.abspath(args.profile_screen))
                print(f"{args.screen_words} words on screen in {shown:.2f} s (profiled); the profile is in "
                      f"{args.profile_screen}")
                return
            cases = [(dialect, size) for dialect in dialects for size in sizes]
            chat: dict[tuple[str, int], list[float]] = {case: [] for case in cases}
            floor: list[float] = []   # the fake sending to a client that only reads
            sent: list[float] = []    # the fake sending to the chat in tmux
            shown: list[float] = []
            shown_cpu: list[float] = []  # the chat's CPU time meanwhile
            chat_turn(dialects[0], min(sizes), project)  # warm up: imports, the first connection
            for round_ in range(args.rounds):
                shift = round_ % len(cases)
                for dialect, size in cases[shift:] + cases[:shift]:
                    chat[dialect, size].append(chat_turn(dialect, size, project) / (size / 1000))
                if screen:
                    read_only(model.url, args.screen_words)
                    floor.append(model.last_send_time())
                    shown.append(screen_time(Path(scratch), home, project, args.screen_words, shown_cpu))
                    sent.append(model.last_send_time())
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
        print(f"  the fake sending it to a client that only reads   {spread(floor, 1, 2)}")
        print(f"  the fake sending it to the chat                   {spread(sent, 1, 2)}")
        print(f"  Enter to the last word on the chat's screen       {spread(shown, 1, 2)}")
        print(f"  the chat's CPU time meanwhile                     {spread(shown_cpu, 1, 2)}")
        if ("openai", args.screen_words) in chat:
            alone = statistics.median(chat["openai", args.screen_words]) * args.screen_words / 1000
            print(f"  the chat without a screen, its CPU time for such a reply (openai, median)  {alone:8.2f}")
        shown_median = statistics.median(shown)
        print(f"  on screen over the fake's send time to the chat (medians):   {shown_median / statistics.median(sent):5.2f}x")
        print(f"  on screen over its send time to a reading client (medians):  {shown_median / statistics.median(floor):5.2f}x")


if __name__ == "__main__":
    main()
