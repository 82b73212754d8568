"""The `shell` toolset: one tool, `shell(command, cwd?, timeout?, background?)`, running a bash
command line in the project root, inside the OS sandbox when there is one (see `sandbox.py`) and
through the job table (see `jobs.py`), which owns every process.

Who is asked: a self-call that changes iota's configuration (`iota mcp add …`, see self_call.py)
always, whatever `auto_run` says. Otherwise nobody with `auto_run`; without it an unsandboxed set
asks before every call, and a sandboxed set only before a self-call. A self-call runs outside the
sandbox, because what iota does (write its config in $HOME, reach a model's API from a child
agent) is what the sandbox refuses; so the sandbox no longer stands in for the user's yes, and the
call says `(outside the sandbox)`. It is executed as its words, never through bash, so what runs
is what was checked. The question shows the whole command line, exactly, with where and how it
runs (`approval_detail`), and "Allow for this session" allows that exact command again, never
every later one.

A sandboxed set hands its confinement (confinement.py) to every command it runs, so an iota that
one of them starts — a self-call outside the sandbox above all — keeps the parent's project and
policy, and cannot ask.
"""

from __future__ import annotations

import math
import os
import shlex
import signal
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from iota.config.limits import show_size
from iota.tools.base import ApprovalRequest, Tool, ToolResult
from iota.errors import ToolError
from iota.sandbox.confinement import Confinement
from iota.sandbox.environment import EnvironmentPolicy
from iota.tools.jobs import (
    LET_GO_SECONDS,
    MAX_JOBS,
    CommandSpec,
    Ended,
    JobInfo,
    JobTable,
    LetGo,
    Outcome,
    command_name,
)
from iota.sandbox.reaper import reaper_argv
from iota.sandbox.bwrap import Sandbox, find_bash
from iota.sandbox.self_call import SelfCall, read_self_call, writable_code

OUTSIDE_SANDBOX = "(outside the sandbox)"

SANDBOXED = (
    "Commands run inside an OS sandbox: file writes are confined to the project root, /tmp (private to "
    "this session) and the cache directory (writes elsewhere fail with permission errors), git's hooks, "
    "config and info/ are read-only, and network access is {network}. Each process may use up to "
    "{memory} of memory, write files up to {file_size} and the command may run {processes} processes "
    "at once: past that, allocations fail (MemoryError, \"Cannot allocate memory\"), a write stops the "
    "writer (\"File size limit exceeded\") and forks fail (\"Resource temporarily unavailable\")."
)
# What the model reads after a command a limit stopped, where the command itself may have said
# nothing: a process killed by SIGXFSZ dies silently (bash reports 128 + 25).
FILE_SIZE_EXIT = 128 + signal.SIGXFSZ
FILE_SIZE_NOTE = "[stopped: a file reached the sandbox's file size limit of {file_size}]"
UNSANDBOXED = "Commands run WITHOUT a sandbox on this system, with the user's full permissions — be conservative."

DESCRIPTION = (
    "Run a bash command line on the user's machine and return its combined stdout/stderr. The full shell "
    "is available: pipes, redirects, globbing, && chaining, heredocs. The working directory defaults to "
    'the project root (override with "cwd"). Each call runs in a FRESH shell: environment variables, '
    "shell functions, aliases and `cd` do not carry over to the next call. \"timeout\": kill the command "
    "after N seconds; leave it out and the command runs until it exits (or iota exits). A call returns "
    "when the command exits, or after {let_go} — a command still running then continues as a background "
    "job, and a notice with its exit status and output comes to you when it ends; do not poll for it. "
    'Set "background": true only for what should not be waited on at all (servers, watchers, a child '
    "agent); such a call returns at once with the job id and its output file. Up to {max_jobs} background "
    "jobs at a time. Nothing a command starts outlives it: whatever it leaves running (`cmd &`, nohup, "
    "setsid) is killed when its shell exits, and background jobs are killed when iota exits. Commands get "
    "only a few environment variables (PATH, HOME, the locale, toolchain locations, and those the user keeps "
    "with env_keep); API keys, tokens and passwords are never passed. "
)

TIMEOUT_ERROR = "timeout must be a positive number of seconds"

CONFIG_CHANGE_REFUSAL = (
    "{tool} was not executed: `iota {subcommand}` changes iota's configuration, so it needs the user's "
    "approval every time, and this non-interactive run cannot ask. Tell the user the exact command to run."
)


class ShellTool(Tool):
    name = "shell"
    # Calls side by side are the model's own choice (it wrote both command lines); a call that
    # needs a yes takes the serial path anyway.
    parallel = True

    def __init__(
        self,
        *,
        root: os.PathLike[str] | str,
        jobs: JobTable,
        sandbox: Sandbox | None,
        auto_run: bool = False,
        iota_executable: os.PathLike[str] | str | None = None,
        confinement: Confinement | None = None,
        let_go_after: float = LET_GO_SECONDS,
        environment: EnvironmentPolicy = EnvironmentPolicy(),
    ):
        """`sandbox` is the probe's Sandbox, or None (`sandbox: off`, or none available);
        `iota_executable` is the running iota, which a sandboxed set lets out; `confinement` is
        what every command's environment carries for the iotas it starts; `environment` says
        which of iota's variables a command sees."""
        self.root = Path(os.path.normpath(os.path.abspath(root)))
        self.jobs = jobs
        self.sandbox = sandbox
        self.auto_run = auto_run
        self.iota_executable = os.path.realpath(iota_executable) if iota_executable else None
        # Where a sandboxed command could change iota's own code, nothing of iota's may leave the sandbox.
        self.writable_code = writable_code(self.iota_executable, sandbox.writable) \
            if sandbox is not None and self.iota_executable else None
        if self.writable_code is not None:
            self.iota_executable = None
        self.confinement = confinement
        self.let_go_after = let_go_after
        self.environment = environment
        self.bash = sandbox.bash if sandbox else find_bash()
        suffix = UNSANDBOXED if sandbox is None else SANDBOXED.format(
            network="allowed" if sandbox.network else "BLOCKED", memory=show_size(sandbox.limits.memory),
            file_size=show_size(sandbox.limits.file_size), processes=sandbox.limits.processes)
        self.description = DESCRIPTION.format(let_go=go_duration(let_go_after), max_jobs=MAX_JOBS) + suffix
        self.parameters = {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "Bash command line to execute, e.g. 'pytest -x 2>&1 | tail -20'.",
                },
                "cwd": {"type": "string", "description": "Working directory (defaults to the project root)."},
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Kill the command after this many seconds. Leave it out and the command "
                    "runs until it exits (or iota exits).",
                },
                "background": {
                    "type": "boolean",
                    "description": "Do not wait for the command at all: return at once with its job id and "
                    f"output file (default false). A foreground call still running after "
                    f"{go_duration(let_go_after)} becomes a background job by itself.",
                },
            },
            "required": ["command"],
        }

    def approval(self, args: dict[str, Any]) -> str | None:
        call = self._self_call(args)
        if (call is not None and call.changes_config) or (
                not self.auto_run and (self.sandbox is None or call is not None)):
            return f"{self.name} {self.target(args)}"
        return None

    def approval_detail(self, args: dict[str, Any]) -> str:
        """The whole command line, exactly, then a line of where and how it runs."""
        command = args.get("command")
        conditions = []
        cwd = args.get("cwd")
        if isinstance(cwd, str) and cwd.strip():
            conditions.append(f"cwd: {os.path.normpath(self.root / cwd.strip())}")
        if args.get("timeout") is not None:
            try:
                conditions.append(f"timeout: {go_duration(_timeout_arg(args) or 0)}")
            except ToolError:
                conditions.append(f"timeout: {args.get('timeout')!r} (invalid)")
        if args.get("background") is True:
            conditions.append("in the background")
        call = self._self_call(args)
        if call is not None and self.sandbox is not None:
            conditions.append("outside the sandbox")
        if call is not None and call.changes_config:
            conditions.append("changes iota's configuration")
        detail = command.strip() if isinstance(command, str) else repr(command)
        return f"{detail}\n\n{' · '.join(conditions)}" if conditions else detail

    def approval_request(self, args: dict[str, Any]) -> ApprovalRequest | None:
        label = self.approval(args)
        if label is None:
            return None
        call = self._self_call(args)
        refusal = ""
        if call is not None and call.changes_config:
            refusal = CONFIG_CHANGE_REFUSAL.format(tool=self.name, subcommand=" ".join(call.arguments[:2]))
        # The exact command in the exact directory: the same yes allows nothing else.
        grant = repr((args.get("command"), args.get("cwd")))
        return ApprovalRequest(self.name, label, self.approval_detail(args), action="run a command",
                               grant=grant, refusal=refusal, covers="exactly this command in this directory")

    def target(self, args: dict[str, Any]) -> str:
        """`(background) cd sub && make test …`, marked `(outside the sandbox)` for a self-call."""
        command = args.get("command")
        summary = command_name(command if isinstance(command, str) else "")
        cwd = args.get("cwd")
        if isinstance(cwd, str) and cwd.strip():
            summary = f"cd {cwd.strip()} && {summary}"
        if args.get("background") is True:
            summary = f"(background) {summary}"
        if self.sandbox is not None and self._self_call(args) is not None:
            summary = f"{summary} {OUTSIDE_SANDBOX}"
        return summary

    async def run(self, args: dict[str, Any]) -> ToolResult:
        command = _command_arg(args)
        cwd = self._working_dir(args)
        timeout = _timeout_arg(args)
        call = self._self_call(args)
        if call is not None:
            # iota itself, run as the words that were checked (never through bash), with the
            # provider keys it needs to reach its model.
            argv, hold = reaper_argv([self.iota_executable, *call.arguments]), nullcontext
            env = dict(os.environ)
        elif self.sandbox is not None:
            launch = self.sandbox.launch(command, cwd)
            argv, hold = launch.argv, launch.hold
            env = self.environment.environment()
        else:
            argv, hold = reaper_argv([self.bash, "-c", command]), nullcontext
            env = self.environment.environment()
        if self.confinement is not None:
            env.update(self.confinement.environment())
        spec = CommandSpec(argv, cwd, command, timeout, env, hold)
        try:
            if args.get("background") is True:
                return _started_receipt(await self.jobs.start_background(spec))
            end = await self.jobs.run(spec, let_go_after=self.let_go_after)
        except OSError as error:
            detail = f"{error.strerror}: {error.filename}" if error.filename else (error.strerror or str(error))
            return ToolResult(f"failed to run: {detail}", is_error=True)
        if isinstance(end, LetGo):
            return self._let_go_receipt(end)
        result = _ended_result(end, timeout)
        if self.sandbox is not None and call is None and end.exit_code == FILE_SIZE_EXIT:
            note = FILE_SIZE_NOTE.format(file_size=show_size(self.sandbox.limits.file_size))
            result = ToolResult(f"{result.content}\n{note}", result.is_error)
        return result

    def _working_dir(self, args: dict[str, Any]) -> Path:
        """The `cwd` argument: relative to the root, absolute as it is (no jail: the sandbox decides
        what may be written, not where a command starts)."""
        cwd = args.get("cwd") or ""
        if not isinstance(cwd, str):
            raise ToolError("cwd must be a string")
        return Path(os.path.normpath(self.root / cwd.strip())) if cwd.strip() else self.root

    def _self_call(self, args: dict[str, Any]) -> SelfCall | None:
        """The iota self-call this call is, if it is one."""
        command = args.get("command")
        if self.iota_executable is None or not isinstance(command, str):
            return None
        try:
            cwd = self._working_dir(args)
        except ToolError:
            return None
        return read_self_call(command.strip(), cwd, self.iota_executable)

    def _let_go_receipt(self, let_go: LetGo) -> ToolResult:
        job = let_go.job
        output = let_go.output.rstrip("\n")
        so_far = f" Output so far:\n{output}\n" if output.strip() else " No output so far.\n"
        return ToolResult(
            f"Still running after {go_duration(self.let_go_after)} as background job {job.id} (pid {job.pid})."
            f"{so_far}A notice with its exit status and output arrives when it finishes; do not poll "
            f"(`{_tail_command(job)}` only if you need progress)."
        )


def _started_receipt(job: JobInfo) -> ToolResult:
    return ToolResult(
        f"Started background job {job.id} (pid {job.pid}). Output: {job.log_path}\nA notice with its exit "
        f"status and output arrives when it finishes; run `{_tail_command(job)}` to see progress meanwhile."
    )


def _tail_command(job: JobInfo) -> str:
    return f"tail -n 50 {shlex.quote(str(job.log_path))}"


def _ended_result(end: Ended, timeout: float | None) -> ToolResult:
    """What the model reads of a command that ended while its call waited, checked in this order."""
    if end.outcome is Outcome.TIMED_OUT:
        result = ToolResult(f"{end.output}\n[command timed out after {go_duration(timeout or 0)}]", is_error=True)
    elif end.outcome is Outcome.KILLED:
        result = ToolResult(f"{end.output}\n[command cancelled]", is_error=True)
    elif end.exit_code != 0:
        result = ToolResult(f"{end.output}\n[exit code {end.exit_code}]", is_error=True)
    elif not end.output.strip():
        result = ToolResult("[command produced no output]")
    else:
        result = ToolResult(end.output)
    if end.waited:
        note = f"({MAX_JOBS} background jobs already running, so this one was waited for.)\n"
        result = ToolResult(note + result.content, result.is_error)
    return result


def _command_arg(args: dict[str, Any]) -> str:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError("missing required argument: command")
    return command.strip()


def _timeout_arg(args: dict[str, Any]) -> float | None:
    """Absent or null: no deadline. Otherwise any positive number of seconds (a numeric string too)."""
    value = args.get("timeout")
    if value is None:
        return None
    if isinstance(value, bool):
        raise ToolError(TIMEOUT_ERROR)
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ToolError(TIMEOUT_ERROR) from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ToolError(TIMEOUT_ERROR)
    return seconds


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration prints it: `10m0s`, `1h0m5s`, `1.5s`, `500ms`, `0s`."""
    nanos = round(seconds * 1_000_000_000)
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_decimal(nanos, 3)}µs"
    if nanos < 1_000_000_000:
        return f"{sign}{_decimal(nanos, 6)}ms"
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = f"{hours}h{minutes}m" if hours else f"{minutes}m" if minutes else ""
    return f"{sign}{text}{_decimal(rest, 9)}s"


def _decimal(value: int, places: int) -> str:
    """`value / 10**places` with no trailing zeros: `_decimal(1500, 3)` is `1.5`."""
    whole, fraction = divmod(value, 10**places)
    digits = f"{fraction:0{places}d}".rstrip("0")
    return f"{whole}.{digits}" if digits else str(whole)
