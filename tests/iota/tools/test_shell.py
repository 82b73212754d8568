"""The `shell` tool and the job table, with real processes and the real bwrap: results and caps,
timeouts and cancellation killing whole process groups, background jobs and their notices, the
let-go, the job cap, and who is asked before a command runs."""

from __future__ import annotations

import os
import re
import shutil
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from iota.tools.base import Toolbox
from iota.errors import ToolError
from iota.text import format_elapsed
from iota.tools.jobs import MAX_JOBS, TooManyJobs, command_name, open_job_table, read_capped
from iota.sandbox.bwrap import Sandbox
from iota.sandbox.environment import EnvironmentPolicy
from iota.tools.shell import ShellTool, go_duration
from tests.iota.sandbox.test_bwrap import outside_dir  # noqa: F401  (a fixture)
from tests.support.sandbox import real_sandbox

LET_GO = 0.5


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    return root


@asynccontextmanager
async def open_shell(root: Path, *, sandboxed: bool = True, **options):
    """A shell tool over a fresh job table; yields the tool and the receiving end of its notices."""
    sandbox = await real_sandbox(root) if sandboxed else None
    send, receive = trio.open_memory_channel(100)
    async with open_job_table(send, log_dir=root.parent / "logs") as jobs:
        yield ShellTool(root=root, jobs=jobs, sandbox=sandbox, let_go_after=options.pop("let_go_after", LET_GO),
                        **options), receive


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (the init here may be slow to reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry))
    return members


def running(cmdline: str) -> list[int]:
    """The pids of live processes whose command line is `cmdline` (words joined by spaces): a
    sandboxed command's `$!` is a pid in its own namespace, so tests find its processes so."""
    wanted = cmdline.replace(" ", "\0").encode() + b"\0"
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes() == wanted and alive(int(entry)):
                    pids.append(int(entry))
            except OSError:
                continue
    return pids


async def assert_none_running(cmdline: str) -> None:
    with trio.move_on_after(5):
        while running(cmdline):
            await trio.sleep(0.02)
    assert running(cmdline) == []


async def assert_gone(pids: list[int], groups: list[int] = ()) -> None:
    """Every pid and every process group is gone within a generous bound."""
    with trio.move_on_after(5):
        while any(alive(pid) for pid in pids) or any(group_members(group) for group in groups):
            await trio.sleep(0.02)
    assert [pid for pid in pids if alive(pid)] == []
    assert [group for group in groups if group_members(group)] == []


# --- results ----------------------------------------------------------------------------------------


async def test_results_in_the_references_shapes(root):
    async with open_shell(root) as (shell, _):
        result = await shell.run({"command": "echo out; echo err >&2"})
        assert (result.content, result.is_error) == ("out\nerr\n", False)
        result = await shell.run({"command": "echo partial; exit 3"})
        assert (result.content, result.is_error) == ("partial\n\n[exit code 3]", True)
        result = await shell.run({"command": "true"})
        assert (result.content, result.is_error) == ("[command produced no output]", False)
        result = await shell.run({"command": "cat"})  # stdin is /dev/null, so cat ends at once
        assert result.content == "[command produced no output]"
        result = await shell.run({"command": "pwd; echo $PWD"})
        assert result.content == f"{root}\n{root}\n"


async def test_cwd_is_relative_to_the_root_or_absolute(root, tmp_path):
    (root / "sub").mkdir()
    async with open_shell(root) as (shell, _):
        assert (await shell.run({"command": "pwd", "cwd": "sub"})).content == f"{root / 'sub'}\n"
        assert (await shell.run({"command": "pwd", "cwd": str(tmp_path)})).content == f"{tmp_path}\n"
        result = await shell.run({"command": "pwd", "cwd": "nope"})
        assert (result.content, result.is_error) == (f"failed to run: No such file or directory: {root / 'nope'}", True)
    assert not list((tmp_path / "logs").iterdir()), "a foreground call leaves no log behind"


async def test_bad_arguments_are_refused(root):
    async with open_shell(root, sandboxed=False) as (shell, _):
        for timeout in (0, -1, "soon", True, float("inf")):
            with pytest.raises(ToolError, match="^timeout must be a positive number of seconds$"):
                await shell.run({"command": "true", "timeout": timeout})
        with pytest.raises(ToolError, match="^missing required argument: command$"):
            await shell.run({"command": "  "})
        assert (await shell.run({"command": "echo ok", "timeout": "2.5"})).content == "ok\n"


def test_go_durations_and_timers():
    assert [go_duration(s) for s in (600, 20, 0.5, 1.5, 3600, 3661.25, 0.0015, 0)] == [
        "10m0s", "20s", "500ms", "1.5s", "1h0m0s", "1h1m1.25s", "1.5ms", "0s"
    ]
    assert [format_elapsed(s) for s in (0.4, 6.009, 42, 72, 7500)] == ["<1s", "6s", "42s", "1m 12s", "2h 5m"]


def test_command_names():
    assert command_name("make test") == "make test"
    assert command_name("npm run build\nnpm test") == "npm run build …"
    assert command_name("x" * 100) == "x" * 62 + " …"
    assert len(command_name("x" * 100)) == 64
    assert command_name("x" * 64) == "x" * 64


# --- the caps ---------------------------------------------------------------------------------------


def reference_caps(data: bytes) -> str:
    """§2.16's caps, written as plainly as the spec states them, over the whole text in memory."""
    text = data.decode()
    lines = text.split("\n")
    if len(lines) > 512:
        text = ("\n".join(lines[:128])
                + f"\n[... {len(lines) - 512} lines omitted — pipe through head/tail/grep to narrow the output ...]\n"
                + "\n".join(lines[-384:]))
    encoded = text.encode()
    if len(encoded) > 32768:
        head = encoded[:8192].decode(errors="ignore")  # a cut character is dropped
        tail = encoded[-22528:].decode(errors="ignore")
        omitted = len(encoded) - len(head.encode()) - len(tail.encode())
        text = f"{head}\n[... {omitted} bytes omitted ...]\n{tail}"
    return text


@pytest.mark.parametrize("data", [
    b"",
    b"short\n",
    b"\n".join(b"%d" % i for i in range(512)),  # exactly 512 lines: no cap
    b"\n".join(b"%d" % i for i in range(513)),
    b"".join(b"line %d\n" % i for i in range(100_000)),  # the line cap alone
    "é".encode() * 40_000,  # one long line of two-byte characters: the byte cap cuts between them
    ("€" * 50 + "\n").encode() * 3000,  # both caps, three-byte characters
    b"x" * 3_000_000,  # several read chunks
])
def test_read_capped_matches_the_spec(tmp_path, data):
    path = tmp_path / "log"
    path.write_bytes(data)
    assert read_capped(path) == reference_caps(data)


async def test_huge_output_is_capped_with_both_markers(root):
    # Short lines first, so the line marker falls inside the byte cap's head; long lines after, so
    # what the line cap keeps is still over 32 KiB.
    async with open_shell(root) as (shell, _):
        result = await shell.run({"command": "seq 1 1000; for i in $(seq 1001 2000); do printf '%099d\\n' $i; done"})
    data = b"".join(b"%d\n" % i for i in range(1, 1001)) + b"".join(b"%099d\n" % i for i in range(1001, 2001))
    assert result.content == reference_caps(data)
    head, rest = result.content.split(
        "\n[... 1489 lines omitted — pipe through head/tail/grep to narrow the output ...]\n"
    )
    assert head == "\n".join(str(i) for i in range(1, 129))
    assert re.search(r"\n\[\.\.\. \d+ bytes omitted \.\.\.\]\n", rest)
    assert result.content.endswith("0" * 95 + "2000\n")


# --- timeouts and cancellation ---------------------------------------------------------------------


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_timeout_kills_the_whole_group(root, sandboxed):
    async with open_shell(root, sandboxed=sandboxed) as (shell, _):
        with trio.fail_after(10):
            result = await shell.run({"command": "sleep 100.101 & echo $!; wait", "timeout": 0.3})
    child = int(result.content.split("\n")[0])
    assert result.content == f"{child}\n\n[command timed out after 300ms]" and result.is_error
    await assert_none_running("sleep 100.101")


async def test_cancelling_the_call_kills_the_group_and_says_so(root):
    async with open_shell(root) as (shell, _):
        with trio.move_on_after(0.3):
            result = await shell.run({"command": "sleep 100.102 & echo $!; wait"})
    child = int(result.content.split("\n")[0])
    assert result.content == f"{child}\n\n[command cancelled]" and result.is_error
    await assert_none_running("sleep 100.102")


async def test_a_sandboxed_command_outlives_trios_idle_worker_threads(root, monkeypatch):
    # --die-with-parent means "when the thread that spawned me exits": spawned from a trio worker
    # thread, a command died once that thread had been idle for IDLE_TIMEOUT (10 s; shortened here).
    monkeypatch.setattr(trio._core._thread_cache, "IDLE_TIMEOUT", 0.1)
    async with open_shell(root, let_go_after=10) as (shell, _):
        with trio.fail_after(10):
            await trio.to_thread.run_sync(lambda: None)  # a worker thread that goes idle now
            result = await shell.run({"command": "sleep 1.5; echo survived"})
    assert (result.content, result.is_error) == ("survived\n", False)


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_exit_status_and_signals_are_the_commands_own(root, sandboxed):
    async with open_shell(root, sandboxed=sandboxed) as (shell, _):
        # SIGPIPE has its default action (Python ignores it for itself), so `yes` ends quietly.
        assert (await shell.run({"command": "yes | head -n 2"})).content == "y\ny\n"
        # A shell killed by a signal: bwrap reports it as 128 + the signal, bash itself as a death.
        killed = await shell.run({"command": "kill -TERM $$"})
        assert killed.content == ("\n[exit code 143]" if sandboxed else "\n[exit code -1]")
        assert (await shell.run({"command": "exit 7"})).content == "\n[exit code 7]"


async def test_a_cancelled_call_still_raises_at_the_next_checkpoint(root):
    # Answering "[command cancelled]" must not swallow the cancellation itself.
    async with open_shell(root, sandboxed=False) as (shell, _):
        reached = False
        with trio.move_on_after(0.2) as scope:
            await shell.run({"command": "sleep 100"})
            await trio.sleep(0)
            reached = True
        assert scope.cancelled_caught and not reached


# --- background jobs --------------------------------------------------------------------------------


async def test_background_job_reports_when_it_finishes(root, tmp_path):
    async with open_shell(root) as (shell, notices):
        result = await shell.run({"command": "echo started; sleep 0.2; echo done; exit 4", "background": True})
        log = tmp_path / "logs" / "b1.log"
        match = re.fullmatch(
            rf"Started background job b1 \(pid (\d+)\)\. Output: {log}\nA notice with its exit status and output "
            rf"arrives when it finishes; run `tail -n 50 {log}` to see progress meanwhile\.",
            result.content,
        )
        assert match and not result.is_error
        [job] = shell.jobs.running()
        assert (job.id, job.pid, job.name, job.log_path) == ("b1", int(match[1]), job.command, log)
        with trio.fail_after(10):
            notice = await notices.receive()
        assert notice.text == (
            "[background job b1 finished: exit 4 after <1s] echo started; sleep 0.2; echo done; exit 4\n"
            "started\ndone\n"
        )
        assert notice.job.id == "b1" and shell.jobs.running() == []
        assert log.read_text() == "started\ndone\n", "a job's log stays for the model to read"


async def test_a_long_foreground_call_lets_go_and_carries_on(root, tmp_path):
    async with open_shell(root) as (shell, notices):
        with trio.fail_after(10):
            result = await shell.run({"command": "echo first; sleep 1; echo second > marker; echo last"})
        log = tmp_path / "logs" / "b1.log"
        pid = shell.jobs.running()[0].pid
        assert result.content == (
            f"Still running after 500ms as background job b1 (pid {pid}). Output so far:\nfirst\n"
            "A notice with its exit status and output arrives when it finishes; do not poll "
            f"(`tail -n 50 {log}` only if you need progress)."
        )
        assert not (root / "marker").exists()
        with trio.fail_after(10):
            notice = await notices.receive()
        assert re.fullmatch(
            r"\[background job b1 finished: exit 0 after (<1s|1s|2s)\] echo first; sleep 1; echo second > marker; "
            r"echo last\nfirst\nlast\n",
            notice.text,
        )
        assert (root / "marker").read_text() == "second\n"


async def test_a_background_job_keeps_its_timeout(root):
    async with open_shell(root, sandboxed=False) as (shell, notices):
        await shell.run({"command": "sleep 100", "background": True, "timeout": 0.3})
        with trio.fail_after(10):
            notice = await notices.receive()
    assert notice.text == "[background job b1 finished: timed out after <1s] sleep 100"


async def test_sixteen_jobs_at_most_and_all_killed_when_the_table_closes(root):
    async with open_shell(root, sandboxed=False) as (shell, notices):
        toolbox = Toolbox([shell])
        for _ in range(MAX_JOBS):
            await shell.run({"command": "sleep 100 & wait", "background": True})
        jobs = shell.jobs.running()
        assert [job.id for job in jobs] == [f"b{n}" for n in range(1, MAX_JOBS + 1)]

        with pytest.raises(TooManyJobs):
            await shell.run({"command": "sleep 1", "background": True})
        refused = await toolbox.call("shell", {"command": "sleep 1", "background": True})
        assert (refused.content, refused.is_error) == (
            "too many background jobs running (16); wait for one to finish", True
        )
        # A foreground call past the let-go with the table full is waited for, and says why.
        result = await shell.run({"command": "sleep 0.8; echo slow"})
        assert result.content == "(16 background jobs already running, so this one was waited for.)\nslow\n"
        assert len(shell.jobs.running()) == MAX_JOBS
    await assert_gone([job.pid for job in jobs], groups=[job.pid for job in jobs])
    assert notices.statistics().current_buffer_used == 0, "no notices for killed jobs"


# --- approval and the iota self-call ---------------------------------------------------------------


@pytest.fixture
def fake_iota(outside_dir, monkeypatch):
    """An `iota` on PATH that writes its arguments to $IOTA_TEST_MARK, and a look-alike that is not
    iota; both where no sandboxed command can change them."""
    bin_dir = outside_dir / "bin"
    bin_dir.mkdir()
    for name in ("iota", "iota-other"):
        (bin_dir / name).write_text('#!/bin/bash\necho "$@" > "$IOTA_TEST_MARK"\n')
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir / "iota"


async def test_who_is_asked(root, fake_iota):
    async with open_shell(root, iota_executable=fake_iota) as (sandboxed, _):
        assert sandboxed.approval({"command": "rm -rf build"}) is None
        assert sandboxed.approval({"command": "iota mcp list"}) == "shell iota mcp list (outside the sandbox)"
        by_path = f"{os.path.relpath(fake_iota, root)} run x -m 'a; b'"  # from the call's directory
        assert sandboxed.approval({"command": by_path}) == f"shell {command_name(by_path)} (outside the sandbox)"
        assert sandboxed.approval({"command": "iota mcp list | head"}) is None
        assert sandboxed.approval({"command": "iota-other mcp list"}) is None
        assert sandboxed.target({"command": "iota mcp list", "cwd": "sub", "background": True}) == (
            "(background) cd sub && iota mcp list (outside the sandbox)"
        )
    async with open_shell(root, iota_executable=fake_iota, auto_run=True) as (auto, _):
        assert auto.approval({"command": "iota mcp list"}) is None
    async with open_shell(root, sandboxed=False, iota_executable=fake_iota) as (unsandboxed, _):
        assert unsandboxed.approval({"command": "ls -la"}) == "shell ls -la"
        assert unsandboxed.approval({"command": "iota mcp list"}) == "shell iota mcp list"
    async with open_shell(root, sandboxed=False, auto_run=True) as (unsandboxed_auto, _):
        assert unsandboxed_auto.approval({"command": "ls -la"}) is None


async def test_a_self_call_runs_outside_the_sandbox(root, fake_iota, outside_dir, monkeypatch):
    # The look-alike is run from the project: the sandbox's /tmp, where tmp_path lies, is its own.
    shutil.copy(fake_iota.parent / "iota-other", root / "iota-other")
    # The sandboxed look-alike sees the mark only through env_keep (commands get an allow-list).
    async with open_shell(root, iota_executable=fake_iota,
                          environment=EnvironmentPolicy(keep=("IOTA_TEST_MARK",))) as (shell, _):
        monkeypatch.setenv("IOTA_TEST_MARK", str(outside_dir / "confined"))
        result = await shell.run({"command": "./iota-other version"})
        assert "Read-only file system" in result.content and result.is_error
        monkeypatch.setenv("IOTA_TEST_MARK", str(outside_dir / "free"))
        result = await shell.run({"command": "iota version"})
        assert result.content == "[command produced no output]"
    assert (outside_dir / "free").read_text() == "version\n" and not (outside_dir / "confined").exists()


async def test_sandbox_off_runs_unconfined(root, outside_dir):
    async with open_shell(root, sandboxed=False) as (shell, _):
        result = await shell.run({"command": f"echo free > {outside_dir}/written"})
    assert result.content == "[command produced no output]"
    assert (outside_dir / "written").read_text() == "free\n"


async def test_the_description_ends_with_the_sandbox_sentence(root):
    async with open_shell(root) as (blocked, _):
        assert blocked.description.startswith("Run a bash command line")
        assert (
            "Commands run inside an OS sandbox: file writes are confined to the project root, /tmp (private "
            "to this session) and the cache directory (writes elsewhere fail with permission errors), git's "
            "hooks, config and info/ are read-only, and network access is BLOCKED. Each process may use up to "
        ) in blocked.description
        assert blocked.description.endswith('forks fail ("Resource temporarily unavailable").')
        assert "Nothing a command starts outlives it" in blocked.description and "setsid" in blocked.description
        allowed = ShellTool(root=root, jobs=blocked.jobs, sandbox=Sandbox(
            bwrap="bwrap", bash="bash", root=str(root), writable=(), network=True))
        assert "and network access is allowed. " in allowed.description
        unsandboxed = ShellTool(root=root, jobs=blocked.jobs, sandbox=None)
        assert unsandboxed.description.endswith(
            "Commands run WITHOUT a sandbox on this system, with the user's full permissions — be conservative."
        )
        assert "after 500ms" in blocked.description and "after 20s" in unsandboxed.description
