"""kill -9 while a helper runs: the caller's log and the helper's child session each open to a
view both providers accept (the repair closes the unfinished turns), and the child is found under
its parent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from iota import paths
from iota.sessions.bundle import Session
from tests.actors.test_delegate import CONFIG, delegating, who
from tests.iota.sessions.test_repair import assert_both_providers_accept
from tests.support.fake_model import fake_model  # noqa: F401  (the fixture)

REPO = Path(__file__).resolve().parents[2]


def test_kill_9_mid_helper_leaves_both_logs_valid_for_both_providers(tmp_path, fake_home, fake_model):  # noqa: F811
    (fake_home / ".iota.yaml").write_text(CONFIG.format(url=fake_model.openai_url, parallel=4))
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    fake_model.respond_with(delegating(("reviewer", "Review a.py."), ("tester", "Test a.py."),
                                       helper_reply=lambda name, body: {"text": "half an answer", "stall_after": 1}))
    child = subprocess.Popen([sys.executable, "-m", "tests.support.delegating_turn", str(project), "review"],
                             cwd=REPO, env={**os.environ, "HOME": str(fake_home)}, stdout=subprocess.PIPE, text=True)
    try:
        caller_id = child.stdout.readline().strip()
        fake_model.wait_for_request(3, timeout=10)   # the lead's, then both helpers' (their tasks are on disk)
        assert sorted(who(request.body) for request in fake_model.requests[1:]) == ["reviewer", "tester"]
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    fake_model.respond_with(None)
    metas = [json.loads(meta.read_text()) for meta in paths.sessions_dir().rglob("meta.json")]
    children = [meta["id"] for meta in metas if meta.get("parent") == caller_id]
    assert len(children) == 2
    for session_id in [caller_id, *children]:
        bundle = next(path for path in paths.sessions_dir().rglob(session_id) if path.is_dir())
        session = Session.open(bundle)
        session.close()
        assert any(message.notice and "iota stopped during the last turn" in message.content
                   for message in session.view.messages), session_id
        assert_both_providers_accept(session.view.messages)
