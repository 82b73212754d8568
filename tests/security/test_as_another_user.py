"""The attack suite again, as a user who is not root.

CI runs as root, and root and everyone else get different sandboxes: root's commands run in a
user namespace that takes its capabilities away and count their processes in a pids cgroup;
another user's run in a user namespace where RLIMIT_NPROC holds, and may be refused one (a
setuid bwrap). A defence that holds for one may not for the other, so when this suite runs as
root, this test copies what the suite needs (the checkout's code and tests, and the packages it
imports) into a directory an unprivileged user owns and runs `python -m pytest tests/security`
there as that user, through `setpriv`. The copy is the test's own, so nothing of the checkout is
written. Run as anyone else it skips: that run is the unprivileged one (and so it never recurses).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What the suite imports and reads of the checkout.
COPIED = ("iota", "actors", "ui", "tests", "pyproject.toml", "README.md", "docs")
# The editable install points back at this checkout: the copy gets a .pth of its own instead.
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "__editable__*")
# The suite takes some 70 s as root on 2 cores; this is the ceiling for a stuck run.
TIMEOUT_SECONDS = 600


def unprivileged_user() -> tuple[int, int]:
    """nobody's uid and gid, which every Linux has (65534 where the entry is missing)."""
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


def as_user(uid: int, gid: int, argv: list[str], **options) -> subprocess.CompletedProcess:
    setpriv = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
    return subprocess.run([*setpriv, *argv], capture_output=True, text=True, **options)


def readable_by(uid: int, gid: int, *paths: str) -> bool:
    tests = " && ".join(f"test -r '{path}'" for path in paths)
    return as_user(uid, gid, ["/bin/sh", "-c", tests]).returncode == 0


def interpreter_for(uid: int, gid: int, workspace: Path) -> tuple[str, dict[str, str]]:
    """A Python of this one's version the user can run, and the variables it needs: this one where
    the user can read it and its standard library, else the system's of the same version (the
    packages are built for the version, not the patch release), else a copy of this one and its
    standard library (without tests and site-packages: some 30 MB) in `workspace` (a Python under
    /root, from pyenv, say)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    python = os.path.realpath(sys.executable)
    if readable_by(uid, gid, python, os.path.join(sysconfig.get_paths()["stdlib"], "os.py")):
        return python, {}
    for directory in ("/usr/local/bin", "/usr/bin"):
        system = os.path.join(directory, version)
        if os.path.isfile(system) and as_user(uid, gid, [system, "-c", "import os"]).returncode == 0:
            return system, {}
    prefix = workspace / "python"
    (prefix / "bin").mkdir(parents=True)
    shutil.copy2(python, prefix / "bin" / version)
    (prefix / "lib").mkdir()
    for library in Path(sysconfig.get_config_var("LIBDIR") or "/nonexistent").glob(f"lib{version}*.so*"):
        shutil.copy2(library, prefix / "lib" / library.name)
    shutil.copytree(sysconfig.get_paths()["stdlib"], prefix / "lib" / version, ignore=shutil.ignore_patterns(
        "test", "site-packages", "dist-packages", "config-*", "idlelib", "tkinter", "ensurepip", "__pycache__"))
    return str(prefix / "bin" / version), {"LD_LIBRARY_PATH": str(prefix / "lib")}


def make_venv(python: str, venv: Path, checkout: Path) -> Path:
    """A virtualenv on `python` with a copy of this one's packages, iota imported from `checkout`,
    and an `iota` command beside its python (the self-call tests run it); returns its python."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(python)}\ninclude-system-site-packages = false\n")
    os.symlink(python, venv / "bin" / "python")
    packages = venv / "lib" / version / "site-packages"
    shutil.copytree(sysconfig.get_paths()["purelib"], packages, ignore=IGNORED, symlinks=True)
    (packages / "iota-checkout.pth").write_text(f"{checkout}\n")
    script = Path(sys.executable).with_name("iota").read_text().split("\n", 1)[1]
    (venv / "bin" / "iota").write_text(f"#!{venv / 'bin' / 'python'}\n{script}")
    (venv / "bin" / "iota").chmod(0o755)
    return venv / "bin" / "python"


def chown_tree(path: Path, uid: int, gid: int) -> None:
    for directory, subdirectories, files in os.walk(path):
        os.chown(directory, uid, gid)
        for name in subdirectories + files:
            os.chown(os.path.join(directory, name), uid, gid, follow_symlinks=False)


@pytest.fixture
def workspace():
    """A directory outside pytest's (root-only) temp dir, for the unprivileged user's copy."""
    path = Path(tempfile.mkdtemp(prefix="iota-as-user-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_security_suite_passes_as_an_unprivileged_user(workspace):
    if os.geteuid() != 0:
        pytest.skip("not root: this run is the unprivileged one")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    uid, gid = unprivileged_user()
    python, python_environment = interpreter_for(uid, gid, workspace)
    checkout, home = workspace / "checkout", workspace / "home"
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, checkout / name, ignore=IGNORED)
        elif source.exists():
            checkout.mkdir(exist_ok=True)
            shutil.copy2(source, checkout / name)
    venv_python = make_venv(python, workspace / "venv", checkout)
    home.mkdir()
    os.chmod(workspace, 0o755)
    chown_tree(workspace, uid, gid)
    environment = {
        "HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
        **python_environment,
    }
    command = [str(venv_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/security"]
    run = as_user(uid, gid, command, cwd=checkout, env=environment, timeout=TIMEOUT_SECONDS)
    summary = (run.stdout + run.stderr).strip().splitlines()[-40:]
    assert run.returncode == 0, "\n".join(summary)
    assert " passed" in summary[-1] and "skipped" in summary[-1], summary[-1]  # this test skipped there
