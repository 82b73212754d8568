"""The bubblewrap sandbox, run for real: what it lets a command write, whether the network is
there, and how the start-up probe reports a sandbox that cannot work."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import trio

from iota.config.audit import check_sandbox_mode
from iota.tools.sandbox import (
    MAX_PROCESSES,
    Sandbox,
    SandboxUnavailable,
    probe_sandbox,
    startup_warnings,
    writable_paths,
)
from iota.tools import sandbox_mounts


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    return root


@pytest.fixture
def outside_dir():
    """A writable directory outside every path the sandbox binds (the project, temp dirs and the
    cache all live under /tmp or HOME here), so only the sandbox can stop a write into it."""
    base = "/var/tmp"
    binds = writable_paths("/nonexistent-root")
    if not os.path.isdir(base) or any(os.path.realpath(base).startswith(path) for path in binds):
        pytest.skip("no directory outside the sandbox's writable paths to test against")
    path = Path(tempfile.mkdtemp(prefix="iota-outside-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def sandbox_for(root: Path, *, network: bool = False) -> Sandbox:
    sandbox = await probe_sandbox(root, network=network)
    assert isinstance(sandbox, Sandbox), f"bwrap must work on this machine: {sandbox}"
    return sandbox


async def run_in(sandbox: Sandbox, root: Path, script: str) -> tuple[int, str]:
    launch = sandbox.launch(script, root)
    with launch.hold():
        result = await trio.run_process(
            launch.argv, cwd=root, stdin=subprocess.DEVNULL, capture_stdout=True,
            stderr=subprocess.STDOUT, check=False,
        )
    return result.returncode, result.stdout.decode()


# --- the description ------------------------------------------------------------------------------


def test_writable_paths_are_ordered_cleaned_and_deduplicated(tmp_path, fake_home, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "project"
    paths = writable_paths(root, ["~/extra", "rel/../data", "", str(root) + "/"])
    # /tmp is not among them: a command gets a /tmp of its own.
    assert paths == (str(root), str(fake_home / ".cache"), str(fake_home / "extra"), str(tmp_path / "data"))
    assert (fake_home / ".cache").is_dir(), "the cache dir is created so it can be bound"


def test_argv_binds_existing_directories_and_protects_git(project, tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    # The machine's sockets come and go; these stand for them (one inside the project stays).
    monkeypatch.setattr(sandbox_mounts, "host_sockets", lambda: ["/run/docker.sock", str(project / "app.sock")])
    missing = str(tmp_path / "missing")
    git = project / ".git"
    sandbox = Sandbox(bwrap="/usr/bin/bwrap", bash="/bin/bash", root=str(project),
                      writable=(str(project), missing, str(tmp_path / "logs")), network=False,
                      scratch=str(tmp_path), logs=str(tmp_path))
    (tmp_path / "logs").mkdir()
    runtime = ["--perms", "0700", "--tmpfs", "/run/user"] if os.path.isdir("/run/user") else []
    launch = sandbox.launch("echo hi", project)
    assert launch.argv == [
        "/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--unshare-net",
        "--bind", str(tmp_path), "/tmp", "--setenv", "TMPDIR", "/tmp", *runtime,
        "--ro-bind", str(tmp_path), str(tmp_path),
        "--bind", str(project), str(project),
        "--bind", str(tmp_path / "logs"), str(tmp_path / "logs"),
        "--bind", str(git), str(git),
        *[arg for name in ("hooks", "config", "config.worktree", "commondir")
          for arg in ("--ro-bind", str(git / name), str(git / name))],
        *[arg for name in (".iota.yaml", ".iota.yml")
          for arg in ("--ro-bind", str(project / name), str(project / name))],
        "--ro-bind", "/dev/null", "/run/docker.sock",
        "--chdir", str(project),
        "--", "/bin/bash", "-c", f'ulimit -u {MAX_PROCESSES} 2>/dev/null; exec "$0" -c "$1"', "/bin/bash", "echo hi",
    ]
    # What does not exist yet is held as a placeholder while the command runs.
    assert [held.path for held in launch.held] == [
        str(git / "hooks"), str(git / "config"), str(git / "config.worktree"), str(git / "commondir"),
        str(project / ".iota.yaml"), str(project / ".iota.yml"),
    ]
    networked = Sandbox(bwrap="bwrap", bash="/bin/bash", root=str(tmp_path / "missing"), writable=(),
                        network=True, unshare_user=True)
    argv = networked.argv("x")
    assert argv[:12] == [
        "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-ipc",
        "--die-with-parent", "--unshare-user",
    ]
    assert argv[12:14] == ["--tmpfs", "/tmp"], "without a scratch directory, a fresh /tmp"
    assert "--unshare-net" not in argv


def test_sandbox_mode_is_auto_or_off():
    assert check_sandbox_mode("") == "auto"
    assert check_sandbox_mode("auto") == "auto"
    assert check_sandbox_mode("off") == "off"
    assert check_sandbox_mode(None) == "auto"
    assert check_sandbox_mode(False) == "off", "YAML 1.1 reads an unquoted off as false"
    with pytest.raises(ValueError, match='^sandbox must be "auto" or "off", got "x"$'):
        check_sandbox_mode("x")
    with pytest.raises(ValueError, match='^sandbox must be "auto" or "off", got "true"$'):
        check_sandbox_mode(True)


def test_startup_warnings():
    sandbox = Sandbox(bwrap="bwrap", bash="bash", root="/p", writable=(), network=False)
    missing = SandboxUnavailable("bwrap not found")
    assert startup_warnings(sandbox, auto_run=True) == []
    assert startup_warnings(None, auto_run=False) == []
    assert startup_warnings(missing, auto_run=False) == [
        "sandbox unavailable: bwrap not found; shell commands will ask before running"
    ]
    assert startup_warnings(missing, auto_run=True) == [
        "sandbox unavailable: bwrap not found",
        "shell auto_run is on without a sandbox: commands run unconfined, without asking",
    ]
    assert startup_warnings(None, auto_run=True) == [
        "shell auto_run is on without a sandbox: commands run unconfined, without asking"
    ]


# --- the probe ------------------------------------------------------------------------------------


async def test_probe_finds_the_real_bwrap(project):
    sandbox = await sandbox_for(project)
    assert sandbox.writable[0] == str(project)
    assert sandbox.network is False


async def test_probe_without_bwrap_says_so(project, tmp_path):
    assert await probe_sandbox(project, bwrap=str(tmp_path / "no-such-bwrap")) == SandboxUnavailable("bwrap not found")


def fake_bwrap(tmp_path: Path, body: str) -> str:
    path = tmp_path / "bwrap"
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return str(path)


async def test_probe_failure_gives_bwraps_reason(project, tmp_path):
    bwrap = fake_bwrap(tmp_path, 'echo "bwrap: No permissions to create new namespace" >&2\nexit 1\n')
    assert await probe_sandbox(project, bwrap=bwrap) == SandboxUnavailable(
        "bwrap: No permissions to create new namespace"
    )


async def test_probe_retries_with_a_user_namespace(project, tmp_path):
    # Like a container without CAP_SYS_ADMIN: plain namespaces are refused, a user namespace works.
    bwrap = fake_bwrap(tmp_path, (
        'for arg; do [ "$arg" = --unshare-user ] && exit 0; done\n'
        'echo "bwrap: Creating new namespace failed: Operation not permitted" >&2\nexit 1\n'
    ))
    sandbox = await probe_sandbox(project, bwrap=bwrap)
    assert isinstance(sandbox, Sandbox) and sandbox.unshare_user
    assert "--unshare-user" in sandbox.argv("true")


async def test_probe_that_fails_even_with_a_user_namespace_is_unavailable(project, tmp_path):
    bwrap = fake_bwrap(tmp_path, (
        'for arg; do [ "$arg" = --unshare-user ] && { echo "bwrap: setting up uid map: Permission denied" >&2; exit 1; }; done\n'
        'echo "bwrap: Creating new namespace failed: Operation not permitted" >&2\nexit 1\n'
    ))
    assert await probe_sandbox(project, bwrap=bwrap) == SandboxUnavailable("bwrap: setting up uid map: Permission denied")


# --- what a sandboxed command can do ---------------------------------------------------------------


async def test_writes_are_confined_to_the_writable_paths(project, outside_dir):
    sandbox = await sandbox_for(project)
    code, output = await run_in(sandbox, project, f"echo no > {outside_dir}/escaped")
    assert code != 0 and "Read-only file system" in output
    assert not (outside_dir / "escaped").exists()

    code, output = await run_in(sandbox, project, "echo yes > inside && mkdir -p sub && echo yes > sub/deeper")
    assert (code, output) == (0, "")
    assert (project / "inside").read_text() == "yes\n" and (project / "sub" / "deeper").exists()

    # /tmp is the command's own: writable, and not the host's.
    scratch = f"/tmp/iota-sandbox-test-{os.getpid()}"
    code, output = await run_in(sandbox, project, f"echo yes > {scratch} && cat {scratch}")
    assert (code, output) == (0, "yes\n")
    assert not os.path.exists(scratch)


async def test_git_hooks_and_config_stay_read_only(project):
    sandbox = await sandbox_for(project)
    code, output = await run_in(sandbox, project, "echo evil > .git/hooks/pre-commit")
    assert code != 0 and "Read-only file system" in output
    code, output = await run_in(sandbox, project, "echo '[core] hooksPath = /x' >> .git/config")
    assert code != 0 and "Read-only file system" in output
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    # The rest of .git stays writable, or git could not commit.
    code, _ = await run_in(sandbox, project, "echo ref > .git/HEAD")
    assert code == 0


async def connect_from_sandbox(sandbox: Sandbox, root: Path) -> tuple[int, str, bytes]:
    """Runs a command that connects to a listener on 127.0.0.1 and sends `hello`; returns its exit
    code and output, and what the listener received."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    received = bytearray()

    async def accept_one():
        stream = await listeners[0].accept()
        async with stream:
            async for chunk in stream:
                received.extend(chunk)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(accept_one)
        with trio.fail_after(10):
            code, output = await run_in(sandbox, root, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo hello >&3")
        if code == 0:
            with trio.fail_after(10):
                while b"hello\n" not in received:
                    await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    await listeners[0].aclose()
    return code, output, bytes(received)


async def test_network_is_blocked_by_default(project):
    code, output, received = await connect_from_sandbox(await sandbox_for(project), project)
    assert code != 0 and "Connection refused" in output
    assert received == b""


async def test_network_true_allows_connections(project):
    code, output, received = await connect_from_sandbox(await sandbox_for(project, network=True), project)
    assert (code, output, received) == (0, "", b"hello\n")
