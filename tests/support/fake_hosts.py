"""Fake hosts that speak the real protocols: herdr's API socket and the `cmux` command.

    herdr = FakeHerdr(tmp_path / "herdr.sock")
    async with trio.open_nursery() as nursery:
        await nursery.start(herdr.serve)              # in the test's own trio loop
        ...                                           # point HERDR_SOCKET_PATH at herdr.socket_path
        await herdr.wait_for(3)                       # until three requests have arrived
        assert [r.method for r in herdr.requests] == [...]

    with herdr.serving_in_thread():                   # for a separate trio.run or a subprocess
        ...

    cmux = FakeCmux(tmp_path / "bin")                 # put cmux.directory on PATH
    cmux.hold()                                       # every call now waits until release()
    await cmux.wait_for_calls(1)
    assert cmux.calls[0].argv == ["set-status", "iota", "Running", ...]

FakeHerdr answers one JSON line per connection with one JSON line, as herdr does: a result for
a well-formed report, an error for an unknown method or bad params. Like herdr it keeps the last
`seq` per pane and source and ignores a report whose `seq` is not higher (the request is marked
`accepted=False`). Served in the test's loop it stamps each request with `trio.current_time()`,
so under a fake clock a test can say exactly when a request arrived. It can be slow (`delay`),
hang after reading a request (`hang`: it never answers), or hang up without answering
(`hang_up`); absent is simply not serving.

FakeCmux is an executable script that appends one JSON line when it starts (its argv and pid) and
another when it ends, so a call that was killed has a start and no end.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import trio

HERDR_METHODS = {
    "pane.report_agent": ("pane_id", "source", "agent", "state", "seq"),
    "pane.report_agent_session": ("pane_id", "source", "agent", "agent_session_id", "agent_session_path", "seq"),
    "pane.release_agent": ("pane_id", "source", "agent", "seq"),
    "notification.show": ("title", "body", "sound"),
}
HERDR_STATES = ("idle", "working", "blocked", "unknown")


@dataclass
class HerdrRequest:
    raw: bytes
    body: dict
    at: float            # trio.current_time() when it arrived
    accepted: bool = False

    @property
    def method(self) -> str:
        return self.body.get("method", "")

    @property
    def params(self) -> dict:
        return self.body.get("params", {})


class FakeHerdr:
    def __init__(self, socket_path: Path):
        self.socket_path = socket_path
        self.requests: list[HerdrRequest] = []
        self.delay = 0.0
        self.hang = False
        self.hang_up = False
        self._last_seq: dict[tuple[str, str], int] = {}
        self._arrived: trio.Event | None = None

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listener = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        await listener.bind(str(self.socket_path))
        listener.listen(16)
        try:
            await trio.serve_listeners(self._answer, [trio.SocketListener(listener)], task_status=task_status)
        finally:
            self.socket_path.unlink(missing_ok=True)

    async def wait_for(self, count: int) -> list[HerdrRequest]:
        """Until `count` requests have arrived (served in this loop only)."""
        while len(self.requests) < count:
            self._arrived = self._arrived or trio.Event()
            await self._arrived.wait()
        return self.requests

    @contextmanager
    def serving_in_thread(self) -> Iterator[FakeHerdr]:
        """Serve from a thread with a trio loop of its own, for the length of the block."""
        started = threading.Event()
        handle: dict = {}

        async def serve_until_cancelled() -> None:
            with trio.CancelScope() as scope:
                handle["scope"], handle["token"] = scope, trio.lowlevel.current_trio_token()
                async with trio.open_nursery() as nursery:
                    await nursery.start(self.serve)
                    started.set()

        thread = threading.Thread(target=trio.run, args=(serve_until_cancelled,), daemon=True)
        thread.start()
        if not started.wait(5):
            raise RuntimeError("the fake herdr did not start")
        try:
            yield self
        finally:
            trio.from_thread.run_sync(handle["scope"].cancel, trio_token=handle["token"])
            thread.join(5)

    async def _answer(self, stream: trio.SocketStream) -> None:
        async with stream:
            line = b""
            while b"\n" not in line:
                chunk = await stream.receive_some()
                if not chunk:
                    return
                line += chunk
            raw = line.split(b"\n", 1)[0]
            request = self._record(raw)
            if self.hang:
                await trio.sleep_forever()
            if self.hang_up:
                return
            await trio.sleep(self.delay)
            await stream.send_all(json.dumps(self._reply(request)).encode() + b"\n")

    def _record(self, raw: bytes) -> HerdrRequest:
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        request = HerdrRequest(raw, body if isinstance(body, dict) else {}, trio.current_time())
        self.requests.append(request)
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None
        return request

    def _reply(self, request: HerdrRequest) -> dict:
        body, params = request.body, request.params
        required = HERDR_METHODS.get(request.method)
        if required is None:
            return _error(body, "method_not_found", f"unknown method {request.method!r}")
        missing = [name for name in required if name not in params]
        if missing:
            return _error(body, "invalid_params", f"missing {', '.join(missing)}")
        if request.method == "notification.show":  # not a lifecycle report: no seq
            request.accepted = True
            return {"id": body.get("id"), "result": {"shown": True}}
        if not isinstance(params["seq"], int):
            return _error(body, "invalid_params", "seq must be an integer")
        if "state" in required and params["state"] not in HERDR_STATES:
            return _error(body, "invalid_params", f"unknown state {params['state']!r}")
        key = (params["pane_id"], params["source"])
        if params["seq"] <= self._last_seq.get(key, -1):
            return {"id": body.get("id"), "result": {"ignored": True, "reason": "stale seq"}}
        self._last_seq[key] = params["seq"]
        request.accepted = True
        return {"id": body.get("id"), "result": {}}


def _error(body: dict, code: str, message: str) -> dict:
    return {"id": body.get("id"), "error": {"code": code, "message": message}}


# ---- cmux ------------------------------------------------------------------------------------

_CMUX_SCRIPT = """\
#!{python} -IS
import json, os, sys, time
def record(event):
    with open({log!r}, "a") as log:
        log.write(json.dumps({{"event": event, "pid": os.getpid(), "argv": sys.argv[1:]}}) + "\\n")
record("start")
while os.path.exists({hold!r}):
    time.sleep(0.01)
record("end")
"""


@dataclass
class CmuxCall:
    argv: list[str]
    pid: int
    ended: bool


class FakeCmux:
    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.executable = directory / "cmux"
        self._log = directory / "calls.jsonl"
        self._hold = directory / "hold"
        self.executable.write_text(_CMUX_SCRIPT.format(python=sys.executable, log=str(self._log),
                                                       hold=str(self._hold)))
        self.executable.chmod(0o755)

    def hold(self) -> None:
        """Every call, running or to come, waits until `release()` (or until it is killed)."""
        self._hold.touch()

    def release(self) -> None:
        self._hold.unlink(missing_ok=True)

    @property
    def calls(self) -> list[CmuxCall]:
        calls: dict[int, CmuxCall] = {}
        if self._log.exists():
            for line in self._log.read_text().splitlines():
                record = json.loads(line)
                if record["event"] == "start":
                    calls[record["pid"]] = CmuxCall(record["argv"], record["pid"], ended=False)
                else:
                    calls[record["pid"]].ended = True
        return list(calls.values())

    async def wait_for_calls(self, count: int, *, ended: bool = False, timeout: float = 10.0) -> list[CmuxCall]:
        """Until `count` calls have started (and, with `ended`, all of them ended). Waits in a
        thread, on the real clock, so it works under any trio clock."""

        def enough() -> bool:
            calls = self.calls
            return len(calls) >= count and (not ended or all(call.ended for call in calls))

        def poll() -> None:
            deadline = time.monotonic() + timeout
            while not enough():
                if time.monotonic() > deadline:
                    raise AssertionError(f"waited for {count} cmux calls, saw {self.calls}")
                time.sleep(0.005)

        await trio.to_thread.run_sync(poll)
        return self.calls


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
