"""The OS sandbox `shell` commands run in: bubblewrap on Linux, decided once at start-up.

A sandboxed command sees the whole filesystem read-only, except the project root, the temp
directories, the user's cache directory and any `write:` paths the config adds; with `network`
off it also gets a network namespace of its own, where only `lo` exists. Reads are not
restricted. Inside the writable root, `.git/hooks` and `.git/config` are bound back read-only
(as Codex does): a command that could write a hook or `core.hooksPath` would run code outside
the sandbox the next time the user runs git.

Whether the sandbox works is not knowable from the binary's presence: containers without
CAP_SYS_ADMIN refuse plain namespaces (`Creating new namespace failed: Operation not permitted`,
fixed by `--unshare-user`), some kernels forbid user namespaces, Ubuntu's AppArmor refuses the
uid map. So `probe_sandbox` runs bwrap once with the exact arguments every command will get,
retries once with `--unshare-user` when only plain namespaces were refused, and otherwise
reports why it cannot sandbox, in one line the start-up card shows.

The probe is async (trio.run_process) because iota starts inside `trio.run`; it costs one
short-lived process, two on the `--unshare-user` path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace

import trio

from iota import paths
from iota.errors import IotaError
from iota.tools.protected import protected_paths

# The bwrap arguments every command starts with: the root read-only, devices and a fresh /proc,
# and the sandbox dies with iota.
BWRAP_BASE = ("--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc", "--die-with-parent")

# What bwrap says where only a user namespace lets it create the others.
NAMESPACE_REFUSED = "Creating new namespace failed: Operation not permitted"

# A probe is one `true`; a bwrap that has not answered by then is not going to be usable.
PROBE_SECONDS = 10.0


@dataclass(frozen=True)
class Sandbox:
    """How to wrap a command in bwrap. Built once by `probe_sandbox`; `argv` is called per command."""

    bwrap: str
    bash: str
    # Candidates in order; each is bound only if it is a directory when the command starts, so a
    # `write:` path created later is picked up and one removed later does not break every call.
    writable: tuple[str, ...]
    # `protected_paths(root)`, each bound read-only over the writable root when present.
    protected: tuple[str, ...]
    network: bool
    # Set by the probe where plain namespaces are refused but a user namespace makes them work.
    unshare_user: bool = False

    def argv(self, script: str) -> list[str]:
        argv = [self.bwrap, *BWRAP_BASE]
        for path in self.writable:
            if os.path.isdir(path):
                argv += ["--bind", path, path]
        # After the binds, so the read-only mounts land on top of the writable root.
        for path in self.protected:
            if os.path.lexists(path):
                argv += ["--ro-bind", path, path]
        if not self.network:
            argv.append("--unshare-net")
        if self.unshare_user:
            argv.append("--unshare-user")
        return [*argv, "--", self.bash, "-c", script]


@dataclass(frozen=True)
class SandboxUnavailable:
    """Why commands cannot be sandboxed here, in one line (`bwrap not found`)."""

    reason: str


def find_bash() -> str:
    return shutil.which("bash") or "/bin/bash"


def user_cache_dir() -> str | None:
    """`$XDG_CACHE_HOME` when it is absolute, else `~/.cache`; None without a home."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return xdg
    try:
        return str(paths.home() / ".cache")
    except IotaError:
        return None


def writable_paths(root: os.PathLike[str] | str, write: Sequence[str] = ()) -> tuple[str, ...]:
    """The project root, the OS temp dir, /tmp, the user cache dir (created if missing), then each
    `write:` path (`~` expanded, made absolute against the process cwd, cleaned); empties and
    duplicates dropped, first wins."""
    cache = user_cache_dir()
    if cache:
        try:
            os.makedirs(cache, exist_ok=True)
        except OSError:
            pass  # Not bound then: `argv` binds existing directories only.
    candidates = [os.fspath(root), tempfile.gettempdir(), "/tmp", cache or ""]
    candidates += [os.path.expanduser(path.strip()) if path.strip() else "" for path in write]
    cleaned = (os.path.normpath(os.path.abspath(path)) for path in candidates if path)
    return tuple(dict.fromkeys(cleaned))


async def probe_sandbox(
    root: os.PathLike[str] | str,
    *,
    network: bool = False,
    write: Sequence[str] = (),
    bwrap: str = "bwrap",
) -> Sandbox | SandboxUnavailable:
    """The sandbox every command will run in, proven by running `true` in it, or why there is none.

    `bwrap` is a name looked up on PATH or a path (tests point it at a fake)."""
    if sys.platform != "linux":
        return SandboxUnavailable(f"no sandbox on {sys.platform} (bubblewrap needs Linux)")
    found = shutil.which(bwrap)
    if found is None:
        return SandboxUnavailable("bwrap not found")
    sandbox = Sandbox(
        bwrap=found,
        bash=find_bash(),
        writable=writable_paths(root, write),
        protected=protected_paths(root),
        network=network,
    )
    failure = await _run_probe(sandbox, root)
    if failure is not None and NAMESPACE_REFUSED in failure:
        sandbox = replace(sandbox, unshare_user=True)
        failure = await _run_probe(sandbox, root)
    return sandbox if failure is None else SandboxUnavailable(failure)


async def _run_probe(sandbox: Sandbox, root: os.PathLike[str] | str) -> str | None:
    """None when `true` ran in the sandbox, else what went wrong in one line."""
    with trio.move_on_after(PROBE_SECONDS):
        try:
            result = await trio.run_process(
                sandbox.argv("true"),
                cwd=os.fspath(root),
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                deliver_cancel=_kill,
            )
        except OSError as error:
            return f"cannot run {sandbox.bwrap}: {error.strerror or error}"
        if result.returncode == 0:
            return None
        lines = result.stderr.decode(errors="replace").strip().splitlines()
        return lines[-1].strip() if lines else f"bwrap exited with status {result.returncode}"
    return f"bwrap did not answer within {PROBE_SECONDS:g}s"


async def _kill(process: trio.Process) -> None:
    process.kill()


def startup_warnings(sandbox: Sandbox | SandboxUnavailable | None, *, auto_run: bool) -> list[str]:
    """The one-line warnings the start-up card shows for a shell set; `sandbox` is the probe's
    answer, or None when the config says `sandbox: off`."""
    warnings = []
    if isinstance(sandbox, SandboxUnavailable):
        asks = "" if auto_run else "; shell commands will ask before running"
        warnings.append(f"sandbox unavailable: {sandbox.reason}{asks}")
    if auto_run and not isinstance(sandbox, Sandbox):
        warnings.append("shell auto_run is on without a sandbox: commands run unconfined, without asking")
    return warnings
