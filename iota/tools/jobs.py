"""Running `shell` commands: one process group per command, a log file per command, and the job
table that keeps commands running after their call has returned.

    async with open_job_table(notices_send) as jobs:      # opened once, at start-up
        ended_or_let_go = await jobs.run(spec, let_go_after=20)
        job = await jobs.start_background(spec)
        jobs.running()                                    # for /jobs and the status row
        jobs.kill("b3")                                   # /jobs' Kill: the job ends as killed

Every command, foreground or background, is a task in the table's nursery that owns the process
from spawn to reaping. Its cancel scope is the only way a command is stopped: a timeout is the
scope's deadline, a cancelled call or a closing table cancels it, and the task then stops the
command (SIGTERM to its leader, bwrap or the reaper, each of which takes down everything the
command started, then SIGKILL to the whole process group) and reaps it. Because the process
belongs to the table and not to the call, a foreground call that runs past the let-go threshold
simply stops waiting: the command becomes a background job where it stands, with nothing handed
over. When a job ends its slot is freed and a `JobNotice` goes to the chat through the channel;
when the table closes (iota exits) every command still running is killed.

How a process is spawned, waited for, stopped, and its log kept small is in `processes.py`.

Output goes to one log file (stdout and stderr merged, in write order), never to a pipe: a
grandchild that keeps the file open cannot hold up the call, and a runaway writer's log is cut
back as it grows. `read_capped` reads it back under the caps in one pass without holding more
than the caps.
"""

from __future__ import annotations

import codecs
import enum
import io
import math
import os
import shutil
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import trio

from iota.text import format_elapsed
from iota.errors import ToolError
from iota.sandbox.leftovers import JOBS_PREFIX, TMP_PREFIX, remove_dead_directories
from iota.sandbox.processes import run_to_end, spawn

MAX_JOBS = 16
# A foreground call still running after this many seconds lets go of its command (v0.5.0).
LET_GO_SECONDS = 20.0
# How long a cancelled call waits for its killed command to be reaped before answering anyway
# (a process stuck in the kernel cannot be hurried; the table still owns and reaps it).
KILL_GRACE_SECONDS = 3.0

# The output caps: the line cap first, then the byte cap on what it left.
MAX_LINES, HEAD_LINES, TAIL_LINES = 512, 128, 384
MAX_BYTES, HEAD_BYTES, TAIL_BYTES = 32 * 1024, 8 * 1024, 22 * 1024
LINES_OMITTED = "\n[... {} lines omitted — pipe through head/tail/grep to narrow the output ...]\n"
BYTES_OMITTED = "\n[... {} bytes omitted ...]\n"

NAME_CHARS = 64
ENDED_KEPT = 64


class TooManyJobs(ToolError):
    def __init__(self) -> None:
        super().__init__(f"too many background jobs running ({MAX_JOBS}); wait for one to finish")


@dataclass(frozen=True)
class CommandSpec:
    """One command to run: the argv (bwrap, or the reaper, around bash or a checked iota
    self-call), where, the model's command line (what the command is called by), its deadline
    in seconds (None: none), its environment (None: iota's own; a sandboxed shell's adds its
    confinement, for the iotas it starts), and what it holds from before it starts until it has
    ended (the sandbox's placeholders)."""

    argv: list[str]
    cwd: Path
    command: str
    timeout: float | None = None
    env: Mapping[str, str] | None = None
    hold: Callable[[], AbstractContextManager[object]] = nullcontext


class Outcome(enum.Enum):
    EXITED = "exited"
    TIMED_OUT = "timed out"
    KILLED = "killed"  # a cancelled call, or the table closing


@dataclass(frozen=True)
class Ended:
    """A command that ended while its call waited. `exit_code` is -1 for a death by signal."""

    output: str
    outcome: Outcome
    exit_code: int | None = None
    # True when the call ran past the let-go threshold but the table was full, so it was waited for.
    waited: bool = False


@dataclass(frozen=True)
class JobInfo:
    """A running background job, as /jobs and the status row list it."""

    id: str
    pid: int
    command: str
    started: float  # time.monotonic() when the command started (the call's start, for a let-go)
    log_path: Path

    @property
    def name(self) -> str:
        return command_name(self.command)


@dataclass(frozen=True)
class LetGo:
    """A foreground call that let go of its command: it runs on as `job`; `output` is what it had
    written so far, under the caps."""

    job: JobInfo
    output: str


@dataclass(frozen=True)
class JobNotice:
    """Sent on the table's channel when a job ends; the chat turns `text` into a user-role notice."""

    job: JobInfo
    text: str


def command_name(command: str) -> str:
    """A command as headers and notices name it: its first line, at most 64 characters, ` …` when cut."""
    lines = command.strip().splitlines() or [""]
    first = lines[0].rstrip()
    if len(first) > NAME_CHARS:
        return first[: NAME_CHARS - 2].rstrip() + " …"
    return first + " …" if len(lines) > 1 else first


class _Command:
    """One command from spawn to reaping, owned by its supervising task in the table's nursery."""

    def __init__(self, spec: CommandSpec, log_path: Path):
        self.spec = spec
        self.log_path = log_path
        self.scope = trio.CancelScope()
        self.finished = trio.Event()
        self.process: subprocess.Popen[bytes] | None = None
        self.spawned_at = 0.0  # trio.current_time(), for the deadline and the let-go
        self.started = 0.0  # time.monotonic(), for what users read
        self.outcome = Outcome.KILLED
        self.exit_code: int | None = None
        self.killed = False
        self.job_id: str | None = None

    def kill(self) -> None:
        self.killed = True
        self.scope.cancel()

    def info(self) -> JobInfo:
        assert self.job_id is not None and self.process is not None
        return JobInfo(self.job_id, self.process.pid, self.spec.command, self.started, self.log_path)


class JobTable:
    """The commands of one iota process. Made by `open_job_table`, which owns its nursery."""

    def __init__(self, nursery: trio.Nursery, notices: trio.MemorySendChannel[JobNotice], log_dir: Path,
                 scratch_dir: Path):
        self._nursery = nursery
        self._notices = notices
        self.log_dir = log_dir
        self.scratch_dir = scratch_dir
        self._jobs: dict[str, _Command] = {}
        self._job_count = 0
        self._call_count = 0
        # How the last jobs ended (`exit 0 after 1m 12s`, `killed`), by id, for a /jobs page still
        # open on one; the oldest are forgotten past ENDED_KEPT.
        self.ended: dict[str, str] = {}

    def running(self) -> list[JobInfo]:
        """The jobs still running, oldest first."""
        jobs = [command.info() for command in self._jobs.values() if command.process is not None]
        return sorted(jobs, key=lambda job: job.started)

    def kill(self, job_id: str) -> bool:
        """Stop a running job (its whole process group); its notice says `killed` when it has
        ended. False when no such job runs."""
        command = self._jobs.get(job_id)
        if command is None:
            return False
        command.kill()
        return True

    async def run(self, spec: CommandSpec, *, let_go_after: float = LET_GO_SECONDS) -> Ended | LetGo:
        """Runs a command until it ends or `let_go_after` seconds pass, whichever is first; then it
        either has ended, or runs on as a background job (or, with the table full, is waited for).

        Spawn failures raise OSError. A cancelled call kills the command and returns it as ended
        `KILLED`: trio's cancellation is level-triggered, so answering instead of raising loses
        nothing — the caller's next checkpoint raises Cancelled again — and the caller gets what
        the command printed before it was stopped.
        """
        self._call_count += 1
        command = _Command(spec, self.log_dir / f"call-{self._call_count}.log")
        try:
            await self._start(command)
            let_go_at = command.spawned_at + let_go_after
            # The timeout and the let-go are two marks on one clock: a command due to be killed
            # by then is waited for, so it ends as timed out rather than as a job about to die.
            if spec.timeout is not None and spec.timeout <= let_go_after:
                let_go_at = math.inf
            if await self._wait(command, let_go_at):
                return await self._ended(command)
            if len(self._jobs) >= MAX_JOBS:
                await self._wait(command, math.inf)
                return await self._ended(command, waited=True)
            return await self._let_go(command)
        except trio.Cancelled:
            command.kill()
            with trio.CancelScope(shield=True):
                with trio.move_on_after(KILL_GRACE_SECONDS):
                    await command.finished.wait()
                return await self._ended(command)

    async def start_background(self, spec: CommandSpec) -> JobInfo:
        """Starts a command as a job at once. Raises TooManyJobs at the cap (nothing is started)
        and OSError when the command cannot be spawned."""
        command = _Command(spec, self.log_dir / "unnamed.log")
        job_id = self._claim_slot(command)
        command.log_path = self.log_dir / f"{job_id}.log"
        try:
            await self._start(command)
        except BaseException:
            # A slot claimed by a job that never started would be lost until iota exits.
            del self._jobs[job_id]
            raise
        return command.info()

    def _claim_slot(self, command: _Command) -> str:
        """Names the command as the next job and takes a slot — one step, no checkpoint between the
        count and the claim, so two calls cannot both take the last slot."""
        if len(self._jobs) >= MAX_JOBS:
            raise TooManyJobs()
        self._job_count += 1
        command.job_id = f"b{self._job_count}"
        self._jobs[command.job_id] = command
        return command.job_id

    async def _start(self, command: _Command) -> None:
        os.makedirs(self.log_dir, exist_ok=True)
        try:
            await self._nursery.start(self._supervise, command)
        except OSError:
            _remove(command.log_path)
            raise

    async def _wait(self, command: _Command, until: float) -> bool:
        """Waits for the command to end, or until `until` (trio time); True if it ended."""
        with trio.move_on_at(until):
            await command.finished.wait()
        return command.finished.is_set()

    async def _let_go(self, command: _Command) -> LetGo:
        job_id = self._claim_slot(command)
        # The log takes the job's name; the process keeps writing to the same file.
        named = self.log_dir / f"{job_id}.log"
        try:
            os.replace(command.log_path, named)
            command.log_path = named
        except OSError:
            pass  # The call's name stays on it; the path the model is told is the one listed.
        # The command is a job now: a cancel arriving during this read must not kill it as if
        # the call still owned it.
        with trio.CancelScope(shield=True):
            output = await read_output(command.log_path)
        return LetGo(command.info(), output)

    async def _ended(self, command: _Command, *, waited: bool = False) -> Ended:
        """A foreground command's result. Its log is removed: no job lists it, nothing would find it."""
        output = await read_output(command.log_path)
        _remove(command.log_path)
        return Ended(output, command.outcome, command.exit_code, waited)

    async def _supervise(self, command: _Command, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        spec = command.spec
        try:
            with open(command.log_path, "a+b") as log, spec.hold(), command.scope:
                command.spawned_at = trio.current_time()
                command.started = time.monotonic()
                if spec.timeout is not None:
                    command.scope.deadline = command.spawned_at + spec.timeout
                command.process = spawn(spec.argv, spec.cwd, spec.env, log)
                task_status.started()
                returncode = await run_to_end(command.process, log)
                command.outcome = Outcome.EXITED
                command.exit_code = returncode if returncode >= 0 else -1
            if command.scope.cancelled_caught and not command.killed:
                command.outcome = Outcome.TIMED_OUT
        finally:
            command.finished.set()
        # Only a job is announced; a foreground call answers for its own command. Nothing can
        # adopt the command between `finished` being set and this check: no checkpoint lies between.
        if command.job_id is not None:
            del self._jobs[command.job_id]
            await self._announce(command)

    async def _announce(self, command: _Command) -> None:
        job = command.info()
        elapsed = format_elapsed(time.monotonic() - job.started)
        if command.outcome is Outcome.TIMED_OUT:
            status = f"timed out after {elapsed}"
        elif command.outcome is Outcome.KILLED:
            status = "killed"
        else:
            status = f"exit {command.exit_code} after {elapsed}"
        self.ended[job.id] = status
        while len(self.ended) > ENDED_KEPT:
            del self.ended[next(iter(self.ended))]
        text = f"[background job {job.id} finished: {status}] {job.name}"
        output = await read_output(job.log_path)
        if output.strip():
            text += "\n" + output
        try:
            await self._notices.send(JobNotice(job, text))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # Nobody is listening any more: the chat has gone.


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


@asynccontextmanager
async def open_job_table(
    notices: trio.MemorySendChannel[JobNotice], *, log_dir: os.PathLike[str] | str | None = None
) -> AsyncIterator[JobTable]:
    """The job table of one iota process. Logs go to `log_dir`, or to a fresh private temp dir
    that is removed when the table closes; the commands' own /tmp (`scratch_dir`, see the
    sandbox) is always a fresh private one, removed then too. Closing it kills every command
    still running."""
    own_dir = log_dir is None
    remove_dead_directories()  # an iota killed by `kill -9` could not remove its own
    directory = Path(tempfile.mkdtemp(prefix=f"{JOBS_PREFIX}{os.getpid()}-")) if own_dir else Path(log_dir)
    scratch = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
    try:
        async with trio.open_nursery() as nursery:
            yield JobTable(nursery, notices, directory, scratch)
            nursery.cancel_scope.cancel()
    finally:
        if own_dir:
            shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


async def read_output(path: Path) -> str:
    """A log read back under the caps, off the event loop; "" when it cannot be read (the model
    may have removed it)."""
    try:
        return await trio.to_thread.run_sync(read_capped, path)
    except OSError:
        return ""


def read_capped(path: os.PathLike[str] | str) -> str:
    """The file's text under the caps, as if the whole text were capped in memory:

    more than 512 lines → the first 128, `LINES_OMITTED`, the last 384; then more than 32 KiB →
    the first 8 KiB, `BYTES_OMITTED`, the last 22 KiB, both cut at UTF-8 character boundaries.

    It reads the file once to find the line boundaries, keeping only the positions of the first
    128 and last 384 newlines, then reads the at most 32 KiB it returns. A file still growing is
    read as it was when this started."""
    with open(path, "rb") as log:
        return _capped(log, os.fstat(log.fileno()).st_size)


def cap_text(text: str) -> str:
    """`text` under the same caps as a command's output (what an MCP tool returns is capped so)."""
    data = text.encode()
    return _capped(io.BytesIO(data), len(data))


def _capped(log: BinaryIO, size: int) -> str:
    spans = _line_capped(log, size)
    total = sum(_span_length(span) for span in spans)
    if total <= MAX_BYTES:
        return _read_spans(log, spans, 0, total).decode(errors="replace")
    head = _cut_back_to_character(_read_spans(log, spans, 0, HEAD_BYTES))
    tail = _cut_forward_to_character(_read_spans(log, spans, total - TAIL_BYTES, total))
    omitted = total - len(head) - len(tail)
    return head.decode(errors="replace") + BYTES_OMITTED.format(omitted) + tail.decode(errors="replace")


# The line-capped text as a list of spans: (start, end) byte ranges of the file, and the marker.
Span = tuple[int, int] | bytes
CHUNK_BYTES = 1 << 20


def _line_capped(log: BinaryIO, size: int) -> list[Span]:
    newlines = 0
    head_end = 0  # where the 128th line ends
    last_newlines: deque[int] = deque(maxlen=TAIL_LINES)
    position = 0
    while position < size:
        chunk = log.read(min(CHUNK_BYTES, size - position))
        if not chunk:
            break  # The file shrank under us: cap what was there.
        if newlines < HEAD_LINES:
            found = _newline_offsets(chunk, HEAD_LINES - newlines)
            if newlines + len(found) == HEAD_LINES:
                head_end = position + found[-1]
        last_newlines.extend(position + offset for offset in _newline_offsets(chunk, TAIL_LINES, from_end=True))
        newlines += chunk.count(b"\n")
        position += len(chunk)
    lines = newlines + 1
    if lines <= MAX_LINES:
        return [(0, position)]
    # The last 384 lines start after the newline that ends line number `lines - 384`.
    tail_start = last_newlines[0] + 1
    return [(0, head_end), LINES_OMITTED.format(lines - MAX_LINES).encode(), (tail_start, position)]


def _newline_offsets(chunk: bytes, limit: int, *, from_end: bool = False) -> list[int]:
    """The offsets of the first (or last) `limit` newlines in `chunk`, in order."""
    offsets: list[int] = []
    if from_end:
        end = len(chunk)
        while len(offsets) < limit and (offset := chunk.rfind(b"\n", 0, end)) != -1:
            offsets.append(offset)
            end = offset
        offsets.reverse()
    else:
        start = 0
        while len(offsets) < limit and (offset := chunk.find(b"\n", start)) != -1:
            offsets.append(offset)
            start = offset + 1
    return offsets


def _span_length(span: Span) -> int:
    return len(span) if isinstance(span, bytes) else span[1] - span[0]


def _read_spans(log: BinaryIO, spans: list[Span], start: int, end: int) -> bytes:
    """Bytes `start:end` of the text the spans make up."""
    out = bytearray()
    offset = 0
    for span in spans:
        length = _span_length(span)
        low, high = max(start, offset), min(end, offset + length)
        if low < high:
            if isinstance(span, bytes):
                out += span[low - offset : high - offset]
            else:
                log.seek(span[0] + low - offset)
                out += log.read(high - low)
        offset += length
    return bytes(out)


def _cut_back_to_character(data: bytes) -> bytes:
    """`data` without a character cut in half at its end."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    decoder.decode(data, final=False)
    pending = decoder.getstate()[0]
    return data[: len(data) - len(pending)]


def _cut_forward_to_character(data: bytes) -> bytes:
    """`data` without the continuation bytes of a character cut in half at its start."""
    start = 0
    while start < min(3, len(data)) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]
