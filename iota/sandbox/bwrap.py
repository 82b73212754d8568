"""The OS sandbox `shell` commands run in: bubblewrap on Linux, decided once at start-up.

What a sandboxed command gets (each point is a test in tests/security/test_sandbox_escapes.py or
test_sandbox_root_and_limits.py, run as root and again as an unprivileged user):

- No capability, whoever runs iota: a user namespace mapping the caller's uid to itself
  (`--unshare-user`) and `--cap-drop ALL` (bwrap leaves root its capabilities otherwise, and
  with CAP_SYS_ADMIN a command could `mount -o remount,rw /` and write anywhere). bwrap sets
  no_new_privs, so no setuid program gives any back. The probe checks CapEff inside is zero and
  refuses the sandbox in one line where it is not.
- The whole filesystem read-only, except the project root and any `write:` paths the config
  adds. Reads are not restricted.
- A cache directory of its own where the user's is (`~/.cache` or `$XDG_CACHE_HOME`), one per
  project: builds and package managers keep working, but the person's real cache stays read-only
  and out of sight, and one project's cache is not another's. Programs run code from their caches
  (pre-commit's hook environments, uv's hard-linked virtualenvs, build caches), so a shared cache
  would let one project's command plant code that runs for another, and the real one code that
  runs outside the sandbox. See `sandbox_cache`.
- Its own `/tmp`: a directory private to this iota process (kept across its commands, removed
  when iota exits, or at the next start after a `kill -9`, see leftovers.py), so the sockets and
  files other programs keep in /tmp (tmux, X11, ssh-agent) are out of sight. `/run/user` and
  `$XDG_RUNTIME_DIR` (D-Bus, Wayland, gpg-agent, Podman) are empty, and every other Unix socket
  of the machine has /dev/null bound over it (see `mounts.py`). A fresh /dev (no host
  terminals), its own IPC namespace (no other program's shared memory) and, with `network` off,
  its own network namespace: only `lo`, and no abstract Unix sockets. With `network: true` the
  network namespace is the host's, and with it the abstract sockets other programs listen on (an
  X server's `@/tmp/.X11-unix/X0`, some D-Bus setups): a networked sandbox can reach them.
- Git's files that make git run code or change what the person sees (hooks, config, commondir,
  info/) read-only, `.git` not renamable, `~/.iota` hidden, and `.iota.yaml`/`.iota.yml` not
  writable (see `mounts.py`).
- Its own PID namespace: it sees only its own processes (not iota's `/proc/<pid>/root`, which
  would lead back into the writable host), and when the command's shell exits, everything it
  left running is killed with it; `--die-with-parent` kills the lot if iota dies, even by
  `kill -9`.
- Limits (`tools.shell.limits`, iota.config.limits): RLIMIT_AS, RLIMIT_FSIZE and RLIMIT_NPROC,
  set by the shell bwrap starts before it becomes the command's. The kernel exempts root from
  RLIMIT_NPROC even in a user namespace, so root's commands each run in a pids cgroup
  (cgroups.py); where there is none to make, the start-up card says processes are not limited.

Whether the sandbox works is not knowable from the binary's presence: some kernels forbid user
namespaces, Ubuntu's AppArmor refuses the uid map, a setuid bwrap may refuse `--unshare-user`.
So `probe_sandbox` runs bwrap once with the arguments every command gets (its mounts worked out
the same way) and a command that fails unless it holds no capability. For a caller who is not
root a refused user namespace is retried without one (bwrap gives such a caller no capability,
and the probe checks it); for root there is no such retry. Otherwise it reports why it cannot
sandbox, in one line the start-up card shows.

The probe is async (trio.run_process) because iota starts inside `trio.run`; it costs one
short-lived process, two on the retry.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field, replace

import trio

from iota import paths
from iota.config.limits import ShellLimits
from iota.errors import IotaError
from iota.sandbox import cgroups
from iota.sandbox.placeholders import Protected, holding, remove_abandoned
from iota.sandbox.mounts import CONFIG_NAMES, overlay, runtime_dirs

# The bwrap arguments every command starts with: the root read-only, a fresh /dev and /proc,
# its own PID and IPC namespaces, no capability at all (bwrap leaves root's in place unless told),
# and the sandbox dies with iota.
BWRAP_BASE = (
    "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
    "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL", "--die-with-parent",
)
# A user namespace, the caller's uid mapped to itself: whatever capability a process inside
# gained would hold only over the sandbox's own namespaces, never over the machine's mounts.
USER_NAMESPACE = ("--unshare-user",)



def limited_shell(limits: ShellLimits) -> str:
    """The script of the shell bwrap starts: it sets the limits (`ulimit -v` counts KiB, `-f`
    blocks of 1 KiB), then becomes the command's own shell (`$0` is bash, `$1` the command line),
    so the command runs exactly as `bash -c COMMAND` would. A limit that is lower already stays."""
    return (f"ulimit -v {limits.memory // 1024} 2>/dev/null; ulimit -f {limits.file_size // 1024} 2>/dev/null; "
            f'ulimit -u {limits.processes} 2>/dev/null; exec "$0" -c "$1"')


# The probe's command: it fails unless the sandbox holds no capability (CapEff all zeros).
NO_CAPABILITIES = (
    'while read -r key value; do [ "$key" = CapEff: ] && { [ -z "${value//0/}" ] && exit 0; '
    'echo "commands would keep capabilities (CapEff $value)" >&2; exit 1; }; done < /proc/self/status; '
    'echo "cannot read CapEff from /proc/self/status" >&2; exit 1'
)

# Where the projects' own caches live, inside the user's cache directory (see `sandbox_cache`).
CACHES_DIR = "iota-sandbox"

# A probe is one `true`; a bwrap that has not answered by then is not going to be usable.
PROBE_SECONDS = 10.0


@dataclass(frozen=True)
class Launch:
    """One sandboxed command: its argv, and the paths it needs held from before it starts until
    it has ended (`hold()`, which creates the placeholders the argv mounts)."""

    argv: list[str]
    held: tuple[Protected, ...] = ()
    # The pids cgroup the command runs in (root only, see cgroups.py) and its process limit.
    cgroup: str | None = None
    processes: int = 0

    def hold(self) -> AbstractContextManager[None]:
        return self._holding()

    @contextmanager
    def _holding(self):
        with ExitStack() as stack:
            stack.enter_context(holding(self.held))
            if self.cgroup is not None:
                stack.enter_context(cgroups.pids_cgroup(self.cgroup, self.processes))
            yield


@dataclass(frozen=True)
class Sandbox:
    """How to wrap a command in bwrap. Built once by `probe_sandbox`; `launch` is called per command."""

    bwrap: str
    bash: str
    root: str
    # Candidates in order; each is bound only if it is a directory when the command starts, so a
    # `write:` path created later is picked up and one removed later does not break every call.
    writable: tuple[str, ...]
    network: bool
    # The host directory commands see as /tmp (None: a fresh, empty /tmp for every command).
    scratch: str | None = None
    # The job logs' directory, visible read-only at its own path (it usually lies in the host's /tmp).
    logs: str | None = None
    # Where `.iota.yaml`/`.iota.yml` must not be written: the project root, where iota started.
    config_dirs: tuple[str, ...] = ()
    # The user's cache directory, where commands see a cache of their own (`sandbox_cache`).
    cache: str | None = None
    # Off only where the probe found no user namespace for a caller who is not root (a setuid
    # bwrap, user namespaces disabled): bwrap then leaves the caller no capability of its own.
    unshare_user: bool = True
    limits: ShellLimits = field(default_factory=ShellLimits.default)
    # Root's commands (exempt from RLIMIT_NPROC) each get a pids cgroup under this directory;
    # `unlimited_processes` where root has none to make.
    pids_cgroups: str | None = None
    unlimited_processes: bool = False

    def launch(self, script: str, cwd: os.PathLike[str] | str | None = None) -> Launch:
        """The command line for `script`, started in `cwd` (inside the sandbox's view)."""
        argv = [self.bwrap, *BWRAP_BASE]
        if not self.network:
            argv.append("--unshare-net")
        if self.unshare_user:
            argv += USER_NAMESPACE
        if self.scratch is not None and os.path.isdir(self.scratch):
            argv += ["--bind", self.scratch, "/tmp"]
        else:
            argv += ["--tmpfs", "/tmp"]
        argv += ["--setenv", "TMPDIR", "/tmp"]
        hidden = ["/tmp", *runtime_dirs()]
        for directory in hidden[1:]:
            argv += ["--perms", "0700", "--tmpfs", directory]
        if self.logs is not None and os.path.isdir(self.logs):
            argv += ["--ro-bind", self.logs, self.logs]
        writable = [path for path in self.writable if os.path.isdir(path)]
        for path in writable:
            argv += ["--bind", path, path]
        private_cache = sandbox_cache(self.cache, self.root) if self.cache is not None else None
        if private_cache is not None:
            argv += ["--bind", private_cache, self.cache]
            writable.append(self.cache)
        mounts = overlay(self.root, self.config_dirs or (self.root,), _home(), writable, hidden)
        for path in mounts.self_binds:
            argv += ["--bind", path, path]
        for protected in mounts.protected:
            argv += ["--ro-bind", protected.path, protected.path]
        for protected in mounts.hidden:
            argv += ["--tmpfs", protected.path, "--remount-ro", protected.path]
        for socket in mounts.sockets:
            argv += ["--ro-bind", "/dev/null", socket]
        if cwd is not None:
            argv += ["--chdir", os.fspath(cwd)]
        argv += ["--", self.bash, "-c", limited_shell(self.limits), self.bash, script]
        held = tuple(mounts.protected + mounts.hidden)
        if self.pids_cgroups is None:
            return Launch(argv, held)
        cgroup = cgroups.new_name(self.pids_cgroups)
        return Launch(cgroups.joining(cgroup, argv), held, cgroup, self.limits.processes)


@dataclass(frozen=True)
class SandboxUnavailable:
    """Why commands cannot be sandboxed here, in one line (`bwrap not found`)."""

    reason: str


def find_bash() -> str:
    return shutil.which("bash") or "/bin/bash"


def _home() -> str | None:
    try:
        return os.fspath(paths.home())
    except IotaError:
        return None


def user_cache_dir() -> str | None:
    """`$XDG_CACHE_HOME` when it is absolute, else `~/.cache`; None without a home."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return xdg
    home = _home()
    return os.path.join(home, ".cache") if home else None


def sandbox_cache(cache: str, root: str) -> str | None:
    """The host directory sandboxed commands of the project at `root` see as the user's cache
    `cache`: `<cache>/iota-sandbox/<name>-<hash of the project's real path>`, created if missing.
    None when it cannot be (the cache is then read-only inside, like the rest of home)."""
    real = os.path.realpath(root)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(real)).strip("-.") or "root"
    digest = hashlib.sha256(real.encode(errors="surrogateescape")).hexdigest()[:16]
    caches = os.path.join(cache, CACHES_DIR)
    private = os.path.join(caches, f"{name[:40]}-{digest}")
    try:
        os.makedirs(caches, mode=0o700, exist_ok=True)
        os.makedirs(private, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if os.path.islink(caches) or os.path.islink(private) or not os.path.isdir(private):
        return None
    return private


def writable_paths(root: os.PathLike[str] | str, write: Sequence[str] = ()) -> tuple[str, ...]:
    """The project root, then each `write:` path (`~` expanded, made absolute against the process
    cwd, cleaned); empties and duplicates dropped, first wins. /tmp and the cache are not among
    them: commands get their own."""
    candidates = [os.fspath(root)]
    candidates += [os.path.expanduser(path.strip()) if path.strip() else "" for path in write]
    cleaned = (os.path.normpath(os.path.abspath(path)) for path in candidates if path)
    return tuple(dict.fromkeys(cleaned))


async def probe_sandbox(
    root: os.PathLike[str] | str,
    *,
    network: bool = False,
    write: Sequence[str] = (),
    scratch: os.PathLike[str] | str | None = None,
    logs: os.PathLike[str] | str | None = None,
    cwd: os.PathLike[str] | str | None = None,
    limits: ShellLimits | None = None,
    bwrap: str = "bwrap",
) -> Sandbox | SandboxUnavailable:
    """The sandbox every command will run in, proven by running `true` in it, or why there is none.

    `scratch` is the directory commands see as /tmp, `logs` the job logs' directory, `cwd` where
    iota started (its `.iota.yaml` is protected like the root's). `bwrap` is a name looked up on
    PATH or a path (tests point it at a fake)."""
    if sys.platform != "linux":
        return SandboxUnavailable(f"no sandbox on {sys.platform} (bubblewrap needs Linux)")
    found = shutil.which(bwrap)
    if found is None:
        return SandboxUnavailable("bwrap not found")
    root = os.path.normpath(os.path.abspath(root))
    pids_cgroups = cgroups.pids_parent() if cgroups.needed() else None
    if pids_cgroups is not None:
        cgroups.remove_dead_cgroups(pids_cgroups)
    config_dirs = [root] + ([os.path.normpath(os.path.abspath(cwd))] if cwd is not None else [])
    sandbox = Sandbox(
        bwrap=found,
        bash=find_bash(),
        root=root,
        writable=writable_paths(root, write),
        network=network,
        scratch=os.fspath(scratch) if scratch is not None else None,
        logs=os.fspath(logs) if logs is not None else None,
        config_dirs=tuple(dict.fromkeys(config_dirs)),
        cache=user_cache_dir(),
        limits=limits or ShellLimits.default(),
        pids_cgroups=pids_cgroups,
        unlimited_processes=cgroups.needed() and pids_cgroups is None,
    )
    # The probe holds (and so sweeps) the placeholders this start protects; the config ones of
    # home are protected only where home is writable, so a killed iota's may lie there still.
    home = _home()
    for directory in (*sandbox.config_dirs, *([home] if home else [])):
        for name in CONFIG_NAMES:
            remove_abandoned(Protected(os.path.join(directory, name), None))
    failure = await _run_probe(sandbox)
    if failure is not None and os.geteuid() != 0:
        # No user namespace for this caller: a setuid bwrap still sandboxes, and gives a caller
        # who is not root no capability (the probe checks that too).
        plain = replace(sandbox, unshare_user=False)
        if await _run_probe(plain) is None:
            return plain
    if failure is not None and os.geteuid() == 0:
        failure = f"bwrap cannot take root's capabilities away here: {failure}"
    return sandbox if failure is None else SandboxUnavailable(failure)


async def _run_probe(sandbox: Sandbox) -> str | None:
    """None when a command ran in the sandbox and held no capability there, else what went wrong
    in one line."""
    launch = sandbox.launch(NO_CAPABILITIES, sandbox.root)
    with trio.move_on_after(PROBE_SECONDS):
        try:
            with launch.hold():
                try:
                    result = await trio.run_process(
                        launch.argv,
                        cwd=sandbox.root,
                        stdin=subprocess.DEVNULL,
                        capture_stdout=True,
                        capture_stderr=True,
                        check=False,
                        deliver_cancel=_kill,
                    )
                except OSError as error:
                    return f"cannot run {sandbox.bwrap}: {error.strerror or error}"
        except OSError as error:
            return f"cannot protect {error.filename}: {error.strerror or error}"
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
    if isinstance(sandbox, Sandbox) and sandbox.unlimited_processes:
        warnings.append("sandboxed commands are not limited in processes: iota runs as root, which RLIMIT_NPROC "
                        "exempts, and no pids cgroup can be made here")
    if isinstance(sandbox, SandboxUnavailable):
        asks = "" if auto_run else "; shell commands will ask before running"
        warnings.append(f"sandbox unavailable: {sandbox.reason}{asks}")
    if auto_run and not isinstance(sandbox, Sandbox):
        warnings.append("shell auto_run is on without a sandbox: commands run unconfined, without asking")
    return warnings
