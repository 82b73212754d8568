"""The bubblewrap sandbox, run for real: what it lets a command write, whether the network is
there, and how the start-up probe reports a sandbox that cannot work."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import trio

from iota.config.audit import check_sandbox_mode
from iota.sandbox.bwrap import (
    Sandbox,
    SandboxUnavailable,
    probe_sandbox,
    limited_shell,
    startup_warnings,
    writable_paths,
)
from iota.sandbox import bwrap as bwrap_module
from iota.sandbox import mounts as sandbox_mounts
from iota.errors import ToolError
from iota.tools.code.paths import Jail
from iota.sandbox.placeholders import NOTICE, Protected, holding
from tests.support.sandbox import real_sandbox

# A Python the sandbox can see (see tests/security/test_sandbox_escapes.py).
PYTHON = os.path.realpath(sys.executable)


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
    return await real_sandbox(root, network=network)


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
    # /tmp and the cache are not among them: a command gets its own.
    assert paths == (str(root), str(fake_home / "extra"), str(tmp_path / "data"))


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
        "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL", "--die-with-parent", "--unshare-net",
        "--unshare-user", "--bind", str(tmp_path), "/tmp", "--setenv", "TMPDIR", "/tmp", *runtime,
        "--ro-bind", str(tmp_path), str(tmp_path),
        "--bind", str(project), str(project),
        "--bind", str(tmp_path / "logs"), str(tmp_path / "logs"),
        "--bind", str(git), str(git),
        *[arg for name in ("hooks", "config", "config.worktree", "commondir", "info")
          for arg in ("--ro-bind", str(git / name), str(git / name))],
        *[arg for name in (".iota.yaml", ".iota.yml", ".agents")
          for arg in ("--ro-bind", str(project / name), str(project / name))],
        "--ro-bind", "/dev/null", "/run/docker.sock",
        "--chdir", str(project),
        "--", "/bin/bash", "-c", limited_shell(sandbox.limits), "/bin/bash", "echo hi",
    ]
    # What does not exist yet is held as a placeholder while the command runs.
    assert [held.path for held in launch.held] == [
        str(git / "hooks"), str(git / "config"), str(git / "config.worktree"), str(git / "commondir"),
        str(git / "info"), str(project / ".iota.yaml"), str(project / ".iota.yml"), str(project / ".agents"),
    ]
    networked = Sandbox(bwrap="bwrap", bash="/bin/bash", root=str(tmp_path / "missing"), writable=(),
                        network=True, unshare_user=False)
    argv = networked.launch("x").argv
    assert argv[:14] == [
        "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-ipc",
        "--cap-drop", "ALL", "--die-with-parent", "--tmpfs",
    ], "without a scratch directory, a fresh /tmp; without a user namespace where the probe found none"
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


@pytest.mark.parametrize("euid", [0, 1000])
async def test_probe_failure_gives_bwraps_reason(project, tmp_path, monkeypatch, euid):
    monkeypatch.setattr(bwrap_module.os, "geteuid", lambda: euid)
    bwrap = fake_bwrap(tmp_path, 'echo "bwrap: No permissions to create new namespace" >&2\nexit 1\n')
    prefix = "bwrap cannot take root's capabilities away here: " if euid == 0 else ""
    assert await probe_sandbox(project, bwrap=bwrap) == SandboxUnavailable(
        prefix + "bwrap: No permissions to create new namespace"
    )


# A bwrap that refuses a user namespace (a setuid bwrap where user namespaces are off) and runs
# the command as it is otherwise: no namespace, no capability dropped.
REFUSES_USER_NAMESPACES = (
    'for arg; do [ "$arg" = --unshare-user ] && { echo "bwrap: setting up uid map: Permission denied" >&2; exit 1; }; done\n'
    'while [ "$1" != -- ]; do shift; done; shift; exec "$@"\n'
)


async def test_probe_asks_for_a_user_namespace_first(project, tmp_path):
    bwrap = fake_bwrap(tmp_path, 'for arg; do [ "$arg" = --unshare-user ] && exit 0; done\nexit 1\n')
    sandbox = await probe_sandbox(project, bwrap=bwrap)
    assert isinstance(sandbox, Sandbox) and sandbox.unshare_user
    assert "--unshare-user" in sandbox.launch("true").argv and "--cap-drop" in sandbox.launch("true").argv


async def test_without_a_user_namespace_a_caller_who_is_not_root_gets_a_plain_sandbox(project, tmp_path, monkeypatch):
    if os.geteuid() == 0:
        pytest.skip("root's commands hold capabilities without a user namespace: the next test")
    sandbox = await probe_sandbox(project, bwrap=fake_bwrap(tmp_path, REFUSES_USER_NAMESPACES))
    assert isinstance(sandbox, Sandbox) and not sandbox.unshare_user
    assert "--unshare-user" not in sandbox.launch("true").argv


async def test_root_is_refused_a_sandbox_that_keeps_its_capabilities(project, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root's commands hold capabilities to keep")
    # The fake runs the probe's command for real, as root: it sees root's capabilities and says so.
    sandbox = await probe_sandbox(project, bwrap=fake_bwrap(tmp_path, REFUSES_USER_NAMESPACES))
    assert isinstance(sandbox, SandboxUnavailable)
    assert re.fullmatch(r"bwrap cannot take root's capabilities away here: bwrap: setting up uid map: Permission denied",
                        sandbox.reason)
    # And where a user namespace works but the capabilities stay (a bwrap ignoring --cap-drop):
    keeps = fake_bwrap(tmp_path, 'while [ "$1" != -- ]; do shift; done; shift; exec "$@"\n')
    sandbox = await probe_sandbox(project, bwrap=keeps)
    assert isinstance(sandbox, SandboxUnavailable)
    assert re.fullmatch(r"bwrap cannot take root's capabilities away here: commands would keep capabilities "
                        r"\(CapEff [0-9a-f]{16}\)", sandbox.reason)


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


# --- placeholders ----------------------------------------------------------------------------------


def test_a_placeholder_lives_while_anyone_holds_it(tmp_path):
    config = Protected(str(tmp_path / ".iota.yaml"))
    hooks = Protected(str(tmp_path / "hooks"), None)
    with holding([config, hooks]):
        assert (tmp_path / ".iota.yaml").read_bytes() == NOTICE
        assert os.listdir(tmp_path / "hooks") == []
        with holding([config]):
            pass
        assert (tmp_path / ".iota.yaml").exists(), "the outer holder still relies on it"
    assert sorted(os.listdir(tmp_path)) == []


def test_a_placeholder_held_by_another_process_stays_until_it_lets_go(tmp_path):
    path = tmp_path / ".iota.yaml"
    other = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom iota.sandbox.placeholders import Protected, holding\n"
         "with holding([Protected(sys.argv[1])]):\n    print('held', flush=True)\n    sys.stdin.readline()\n",
         str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline() == "held\n"
        with holding([Protected(str(path))]):
            pass
        assert path.read_bytes() == NOTICE, "the other process still relies on it"
    finally:
        other.communicate("go\n")
    assert not path.exists(), "the last holder removed it"


def test_what_the_person_made_is_never_removed(tmp_path):
    (tmp_path / "config").write_text("[core]\n")
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    with holding([Protected(str(tmp_path / "config")), Protected(str(tmp_path / "hooks"), None)]):
        pass
    assert (tmp_path / "config").read_text() == "[core]\n" and (tmp_path / "hooks" / "pre-commit").exists()


# --- what is protected -----------------------------------------------------------------------------


def mounts_of(root: Path, writable: list[Path]) -> tuple[list[str], list[str]]:
    mounts = sandbox_mounts.overlay(str(root), [str(root)], None, [str(path) for path in writable], [])
    return mounts.self_binds, [protected.path for protected in mounts.protected]


def test_a_repository_with_worktrees_and_nested_submodules(tmp_path):
    git = tmp_path / "project" / ".git"
    for directory in ("hooks", "worktrees/w1", "modules/libs/a/modules/inner", "modules/b"):
        (git / directory).mkdir(parents=True)
    for module in ("modules/libs/a", "modules/libs/a/modules/inner", "modules/b"):
        (git / module / "HEAD").write_text("ref: refs/heads/main\n")
    binds, protected = mounts_of(tmp_path / "project", [tmp_path / "project"])
    modules = ["modules/libs/a", "modules/libs/a/modules/inner", "modules/b"]
    assert binds == [str(git / path) for path in (
        ".", "worktrees", "worktrees/w1", "modules", "modules/b", "modules/libs", "modules/libs/a",
        "modules/libs/a/modules", "modules/libs/a/modules/inner")]
    names = ["hooks", "config", "config.worktree", "commondir", "info"]
    assert sorted(protected) == sorted(
        [str(git / name) for name in names]
        + [str(git / "worktrees/w1" / name) for name in ("config.worktree", "commondir", "info")]
        + [str(git / module / name) for module in modules for name in names]
        + [str(tmp_path / "project" / name) for name in (".iota.yaml", ".iota.yml", ".agents")]
    )


def test_a_linked_worktree_protects_its_git_file_and_the_common_directory(tmp_path):
    common = tmp_path / "main" / ".git"
    (common / "worktrees" / "feature").mkdir(parents=True)
    (common / "worktrees" / "feature" / "commondir").write_text("../..\n")
    worktree = tmp_path / "feature"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {common / 'worktrees' / 'feature'}\n")
    # Only the worktree is writable: the common directory is read-only already.
    assert mounts_of(worktree, [worktree]) == (
        [], [str(worktree / ".git"), *(str(worktree / name) for name in (".iota.yaml", ".iota.yml", ".agents"))])
    binds, protected = mounts_of(worktree, [worktree, tmp_path / "main"])
    assert binds[:2] == [str(common / "worktrees" / "feature"), str(common)]
    feature = common / "worktrees" / "feature"
    assert protected[:9] == [
        str(worktree / ".git"),
        *[str(feature / name) for name in ("config.worktree", "commondir", "info")],
        *[str(common / name) for name in ("hooks", "config", "config.worktree", "commondir", "info")],
    ]


def test_the_code_tools_refuse_every_path_the_sandbox_protects(project, fake_home):
    """The sandbox works its mounts out per command and the code tools judge each write, but
    what one protects the other refuses: nothing the sandbox binds read-only or hides can be
    written through write_file or edit_file."""
    (project / ".git" / "modules" / "lib" / "hooks").mkdir(parents=True)
    (project / ".git" / "modules" / "lib" / "HEAD").write_text("ref: refs/heads/main\n")
    (fake_home / ".iota").mkdir()
    for root in (project, fake_home):
        mounts = sandbox_mounts.overlay(str(root), (str(root),), str(fake_home), (str(root),), ())
        guarded = [item.path for item in mounts.protected + mounts.hidden]
        assert guarded, root
        jail = Jail(root)
        for path in guarded:
            with pytest.raises(ToolError):
                jail.refuse_protected(jail.locate(path))


def test_a_git_link_is_left_alone(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / ".git").symlink_to(tmp_path / "elsewhere")
    assert mounts_of(tmp_path / "project", [tmp_path / "project"])[0] == []


def test_host_sockets_lists_path_sockets_only(tmp_path):
    path = tmp_path / "listening.sock"
    with socket.socket(socket.AF_UNIX) as listener, socket.socket(socket.AF_UNIX) as abstract:
        listener.bind(str(path))
        listener.listen(1)
        abstract.bind(b"\0iota-test-abstract")
        abstract.listen(1)
        found = sandbox_mounts.host_sockets()
    assert str(path) in found and not any("iota-test-abstract" in name for name in found)


async def test_abstract_sockets_are_out_of_reach_without_network(project):
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(b"\0iota-test-listener")
        listener.listen(1)
        connect = "import socket; socket.socket(socket.AF_UNIX).connect(b'\\\\0iota-test-listener')"
        code, output = await run_in(await sandbox_for(project), project, f'{PYTHON} -c "{connect}"')
    assert code != 0 and "Connection refused" in output
