"""A fake model server: real HTTP/1.1 on 127.0.0.1, both wire dialects, scripted replies and faults.

It runs in a background thread, so trio tests, plain threads and a real `iota` subprocess (pointed
at `model.url`) can all talk to it, and its scripting API is plain thread-safe Python:

    with FakeModel() as model:                       # or the `fake_model` pytest fixture
        model.fail(529, retry_after_ms=10)           # first request: overloaded
        model.reply("Let me look.", tool_calls=[tool_call("read", {"path": "a.txt"})],
                    input_tokens=150_000)            # second: text, a tool call, a big context
        model.reply("Done.", drop_after=1)           # third: one piece of text, then the line drops
        provider = make_provider("fake", "anthropic", "key", model.url)          # or model.openai_url
        ...
        assert model.requests[1].body["messages"][-1]["role"] == "user"

Each request takes the next scripted answer, whichever dialect asked: `POST /v1/messages` is
answered in Anthropic's named SSE events, `POST …/chat/completions` in OpenAI's `data:` chunks,
`POST …/responses` in the Responses API's events and `POST …/models/{model}:streamGenerateContent`
in Gemini's chunks (see fake_dialects).
The same API on the clouds: Vertex's `POST …/publishers/anthropic/models/{model}:streamRawPredict`
is answered like /v1/messages; Bedrock's `POST /model/{model}/invoke-with-response-stream` gets
the same events in AWS's binary event-stream framing, and its errors in Bedrock's shape. `POST
/token` is a Google OAuth token endpoint for a stub credential (see `token_requests`).
A request with nothing scripted (or to another path) gets a 500 that says so, with
`x-should-retry: false` so no client retries it, and `assert_no_unexpected()` (called by the
fixture at teardown) fails the test — unless a responder is set (`respond_with`), which answers
it from what it asks, like a model that always says the same to the same conversation (the soak
test's model, which cannot know where a kill will land).

A streamed reply is a preamble (message_start + ping / the role chunk), then *pieces* — the text
split into `pieces` parts, then each tool call's argument JSON split into `fragments` parts —
then the end (message_delta + message_stop / finish_reason, the usage chunk and `[DONE]`).
Faults are placed by counting pieces: `drop_after=0` drops the connection right after the
preamble, `drop_after=1` after the first piece of text (see `reply` for the others: `error_after`,
`stall_after`, `no_stop`, `drip`, `gate`). `fail`, `context_too_long` and `hang` script answers
that are not streams. Stop reasons are written in Anthropic's words (end_turn, tool_use,
max_tokens, refusal) and translated for OpenAI. The answers and their framing on the wire are in
tests.support.fake_wire; `tool_call` and `Gate` are imported from here all the same.

It is as strict as the real APIs about the conversation it is sent (tests.support.api_rules): a
tool call without its result right after it, a result without its call, empty content, and
for Anthropic two messages of one role in a row, are answered with HTTP 400 and the real API's
message, without taking a scripted answer. Such a request is kept in `rejected`, and
`assert_no_unexpected()` fails the test for it too.

iota's title pass (iota.titles: one request whose only message opens with
`TITLE_INSTRUCTION`) runs in the background beside the conversation, so it would race the next
turn for the scripted answers. It is served apart: scripted with `title(...)` or
`fail_title(...)`, recorded in `title_requests` (not `requests`), and answered with
`DEFAULT_TITLE` when nothing is scripted for it — a real model always has a title to give.

A bot's upkeep (iota.bots.upkeep: requests whose first user message opens with `UPKEEP_HEADER`)
comes after a turn, every few turns, at a time most tests do not care about; it is served apart
too: scripted with `upkeep(...)` (or `respond_to_upkeep`), recorded in `upkeep_requests`, and
answered `Nothing to keep.` when nothing is scripted for it — a model wrapping up with nothing to
do. It is checked against the real APIs' rules like any other request.

Every request is recorded (path, headers, parsed JSON body, when it came and when it was
answered: `received`, `finished`), with whether the client went away
before the server had finished (`disconnected`). The waiting helpers (`wait_for_request`,
`RecordedRequest.wait_done`) block; from trio, call them through `trio.to_thread.run_sync`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

from tests.support.fake_cloud import bedrock_failure, bedrock_frames, bedrock_model, cloud_dialect

try:
    import pytest
except ImportError:  # the benchmarks run the server from a plain install, without the test extras
    pytest = None

from iota.bots.upkeep import UPKEEP_HEADER
from iota.titles import TITLE_INSTRUCTION
from tests.support import fake_dialects
from tests.support.api_rules import conversation_error
from tests.support.fake_wire import (_POLL, _ClientGone, _Hang, _HttpFailure, _ServerClosing, _Stream, _StreamWriter,
                                     _anthropic_frames, _failure_body, _openai_frames, _send_json, _stream)
# The scripting API's own names, kept importable from here, where the tests look for them.
from tests.support.fake_wire import Gate, ScriptedCall, tool_call  # noqa: F401

DEFAULT_TITLE = "Fake session title"
DEFAULT_UPKEEP = "Nothing to keep."


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # the parsed JSON, or the text if it was not JSON
    # "anthropic", "openai", "openresponses", "gemini", "vertex", "bedrock", or None for a path the server does not serve
    dialect: str | None
    disconnected: bool = False  # the client went away before the server had finished answering
    raw_body: bytes = b""  # the body as sent (a signature covers these bytes)
    # When the server had read the request, and when it had finished answering it (time.monotonic;
    # 0.0 until then): requests served side by side overlap, `a.received < b.finished`.
    received: float = field(default_factory=time.monotonic)
    finished: float = 0.0
    _done: threading.Event = field(default_factory=threading.Event, repr=False)

    def wait_done(self, timeout: float = 5.0) -> bool:
        """Block until the server has finished with this request (answered, or seen the client go)."""
        return self._done.wait(timeout)


class FakeModel:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[_Stream | _HttpFailure | _Hang] = deque()
        self._requests: list[RecordedRequest] = []
        self._titles: deque[_Stream | _HttpFailure | _Hang] = deque()
        self._title_requests: list[RecordedRequest] = []
        self._upkeeps: deque[_Stream | _HttpFailure | _Hang] = deque()
        self._upkeep_requests: list[RecordedRequest] = []
        self._upkeep_responder: Callable[[Any], dict[str, Any]] | None = None
        self.unexpected: list[RecordedRequest] = []
        self.rejected: list[tuple[RecordedRequest, str]] = []  # (request, why): what the real API refuses
        self.cut_short = 0  # requests whose client went away before the whole body was sent
        self._closing = threading.Event()
        self._responder: Callable[[Any], dict[str, Any]] | None = None
        self._ids = itertools.count(1)
        self.token_requests: list[str] = []  # the bodies of the requests to POST /token
        self.token_lifetime = 3600  # the `expires_in` of the tokens /token hands out
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.model = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.openai_url = self.url + "/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-model", daemon=True)
        self._thread.start()

    # --- scripting ------------------------------------------------------------------------

    def reply(self, text: str = "", **options: Any) -> None:
        """Queue a streamed answer. Options (see fake_wire's `_stream`): `tool_calls`, `input_tokens`,
        `output_tokens`, `cache_read_tokens`, `cache_write_tokens`, `stop_reason` (default
        tool_use when there are tool calls, else end_turn), `pieces`, `fragments`. Faults: `drip`
        seconds before each piece; `gate` holds pieces until released; after `error_after`
        pieces an error event ends the stream; after `drop_after` pieces the connection drops
        (mid chunked body); after `stall_after` pieces the server goes silent but keeps the
        connection open; `no_stop` leaves out the end (message_stop / finish_reason, usage and
        [DONE]) and closes the stream cleanly. `server_blocks` come first: on Anthropic, blocks of
        its own server tools (a `server_tool_use`, whose `input` is streamed as JSON, and a
        `tool_search_tool_result`); on the Responses API, output items such as a client tool
        search's `tool_search_call`."""
        self._push(_stream(text, **options))

    def fail(self, status: int, *, retry_after_ms: int | None = 10, error_type: str | None = None,
             message: str | None = None) -> None:
        """Queue an HTTP error answer, in the asking dialect's error shape."""
        self._push(_HttpFailure(status, retry_after_ms, error_type, message))

    def context_too_long(self, *, style: str | None = None) -> None:
        """Queue a 400 "context too long": Anthropic's `prompt is too long` on /v1/messages, and on
        chat/completions OpenAI's `context_length_exceeded` or, with style="llama.cpp",
        llama.cpp's `exceed_context_size_error`."""
        self._push(_HttpFailure(400, None, None, None, context_too_long=True, style=style))

    def hang(self) -> None:
        """Queue an answer that never comes: the server reads the request and then says nothing,
        not even the headers, until the client hangs up."""
        self._push(_Hang())

    def title(self, text: str = DEFAULT_TITLE, **options: Any) -> None:
        """Queue the answer to the next title pass (the options of `reply`)."""
        with self._lock:
            self._titles.append(_stream(text, **options))

    def fail_title(self, status: int, *, message: str | None = None) -> None:
        """Queue an HTTP error for the next title pass."""
        with self._lock:
            self._titles.append(_HttpFailure(status, None, None, message))

    def upkeep(self, text: str = DEFAULT_UPKEEP, **options: Any) -> None:
        """Queue the answer to the next request of a bot's upkeep (the options of `reply`)."""
        with self._lock:
            self._upkeeps.append(_stream(text, **options))

    def fail_upkeep(self, status: int, *, message: str | None = None) -> None:
        """Queue an HTTP error for the next upkeep request."""
        with self._lock:
            self._upkeeps.append(_HttpFailure(status, None, None, message))

    def respond_to_upkeep(self, responder: Callable[[Any], dict[str, Any]] | None) -> None:
        """Answer each upkeep request nothing is scripted for with `reply(**responder(body))`."""
        with self._lock:
            self._upkeep_responder = responder

    def respond_with(self, responder: Callable[[Any], dict[str, Any]] | None) -> None:
        """Answer each request nothing is scripted for with `reply(**responder(body))`."""
        with self._lock:
            self._responder = responder

    def _push(self, scripted: _Stream | _HttpFailure | _Hang) -> None:
        with self._lock:
            self._script.append(scripted)

    # --- inspecting -----------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def title_requests(self) -> list[RecordedRequest]:
        """The title passes received, apart from `requests`."""
        with self._lock:
            return list(self._title_requests)

    @property
    def upkeep_requests(self) -> list[RecordedRequest]:
        """The upkeep requests received, apart from `requests`."""
        with self._lock:
            return list(self._upkeep_requests)

    def wait_for_upkeep_request(self, n: int = 1, timeout: float = 5.0) -> RecordedRequest:
        """Block until the server has received `n` upkeep requests; return the n-th."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self._upkeep_requests) >= n:
                    return self._upkeep_requests[n - 1]
            time.sleep(_POLL)
        raise AssertionError(f"the fake model received {len(self.upkeep_requests)} upkeep requests, not {n}")

    def wait_for_title_request(self, n: int = 1, timeout: float = 5.0) -> RecordedRequest:
        """Block until the server has received `n` title passes and finished the n-th; return it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self._title_requests) >= n:
                    request = self._title_requests[n - 1]
                    break
            time.sleep(_POLL)
        else:
            raise AssertionError(f"the fake model received {len(self.title_requests)} title passes, not {n}")
        request.wait_done(max(0.0, deadline - time.monotonic()))
        return request

    @property
    def pending(self) -> int:
        """How many scripted answers no request has taken yet."""
        with self._lock:
            return len(self._script)

    def clear_requests(self) -> None:
        """Forget the requests received so far (a long benchmark would keep every body otherwise)."""
        with self._lock:
            self._requests.clear()

    def wait_for_request(self, n: int = 1, timeout: float = 5.0) -> RecordedRequest:
        """Block until the server has received `n` requests; return the n-th."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self._requests) >= n:
                    return self._requests[n - 1]
            time.sleep(_POLL)
        raise AssertionError(f"the fake model received {len(self.requests)} requests, not {n}, within {timeout}s")

    def assert_no_unexpected(self) -> None:
        with self._lock:
            unexpected = [f"{r.method} {r.path}" for r in self.unexpected]
            rejected = [why for _, why in self.rejected]
        assert not unexpected, f"the fake model got requests nothing was scripted for: {unexpected}"
        assert not rejected, f"the fake model got requests the real API would reject: {rejected}"

    # --- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> FakeModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- serving (runs on the server's handler threads) -----------------------------------

    def _serve(self, handler: _Handler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw_body = handler.rfile.read(length) if length else b""
        if len(raw_body) < length:
            # The client went away while sending (a kill, a signal's exit): no API sees such a
            # request, so it is neither served nor judged.
            self.cut_short += 1
            return
        raw = raw_body.decode()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        path = handler.path
        if path == "/token":
            self._serve_token(handler, raw)
            return
        dialect = "anthropic" if path.endswith("/v1/messages") else "openai" if path.endswith("/chat/completions") else (
            cloud_dialect(path) or fake_dialects.dialect(path))
        record = RecordedRequest(handler.command, path, {k.lower(): v for k, v in handler.headers.items()}, body, dialect,
                                 raw_body=raw_body)
        invalid = (conversation_error(dialect, body) or fake_dialects.conversation_error(dialect, body)) if dialect else None
        with self._lock:
            if dialect and not invalid and _is_title_request(body):
                self._title_requests.append(record)
                scripted = self._titles.popleft() if self._titles else _stream(DEFAULT_TITLE)
            elif dialect and not invalid and _is_upkeep_request(body):
                self._upkeep_requests.append(record)
                scripted = self._upkeeps.popleft() if self._upkeeps else None
                if scripted is None and self._upkeep_responder is None:
                    scripted = _stream(DEFAULT_UPKEEP)
            else:
                self._requests.append(record)
                scripted = self._script.popleft() if dialect and self._script and not invalid else None
            upkeep = dialect and not invalid and _is_upkeep_request(body)
            responder = (self._upkeep_responder if upkeep else self._responder) \
                if dialect and not invalid and scripted is None else None
        if responder is not None:
            scripted = _stream(**responder(body))
        with self._lock:
            if invalid:
                self.rejected.append((record, invalid))
            elif scripted is None:
                self.unexpected.append(record)
        handler.close_connection = True
        try:
            if invalid and dialect == "gemini":
                _send_json(handler, 400, *fake_dialects.gemini_failure(400, None, None, invalid, False))
            elif invalid:  # in the dialect's own error shape, as a scripted 400 would be
                refusal = _HttpFailure(400, None, "invalid_request_error", invalid)
                if dialect == "bedrock":
                    _send_json(handler, 400, *bedrock_failure(*_failure_body(refusal, "anthropic"), context_too_long=False))
                else:
                    _send_json(handler, 400, *_failure_body(refusal, "anthropic" if dialect == "vertex" else dialect))
            elif scripted is None:
                error = {"type": "api_error", "message": f"fake model: nothing scripted for {handler.command} {path}"}
                _send_json(handler, 500, {"type": "error", "error": error}, {"x-should-retry": "false"})
            elif isinstance(scripted, _HttpFailure) and dialect == "bedrock":
                _send_json(handler, scripted.status, *bedrock_failure(*_failure_body(scripted, "anthropic"),
                                                                      context_too_long=scripted.context_too_long))
            elif isinstance(scripted, _HttpFailure) and dialect == "gemini":
                _send_json(handler, scripted.status, *fake_dialects.gemini_failure(
                    scripted.status, scripted.retry_after_ms, scripted.error_type, scripted.message, scripted.context_too_long))
            elif isinstance(scripted, _HttpFailure):
                _send_json(handler, scripted.status, *_failure_body(scripted, "anthropic" if dialect == "vertex" else dialect))
            elif isinstance(scripted, _Hang):
                _StreamWriter(handler, self._closing).wait(lambda: False)
            elif dialect == "bedrock":
                frames = bedrock_frames(_anthropic_frames(scripted, bedrock_model(path), self._ids),
                                        scripted.error_type, scripted.error_message)
                _StreamWriter(handler, self._closing).run(scripted, frames, content_type="application/vnd.amazon.eventstream")
            else:
                model = body.get("model", "fake") if isinstance(body, dict) else "fake"
                frames = {"openai": _openai_frames, "openresponses": fake_dialects.responses_frames,
                          "gemini": fake_dialects.gemini_frames}.get(dialect, _anthropic_frames)
                _StreamWriter(handler, self._closing).run(scripted, frames(scripted, model, self._ids))
        except (_ClientGone, OSError):  # OSError: the client went while a plain answer was written
            record.disconnected = True
        except _ServerClosing:
            pass
        finally:
            record.finished = time.monotonic()
            record._done.set()

    def _serve_token(self, handler: _Handler, form: str) -> None:
        """A Google OAuth token endpoint: any request gets a fresh bearer token."""
        with self._lock:
            self.token_requests.append(form)
            token = f"fake-token-{len(self.token_requests)}"
        handler.close_connection = True
        _send_json(handler, 200, {"access_token": token, "expires_in": self.token_lifetime, "token_type": "Bearer"}, {})


def _is_title_request(body: Any) -> bool:
    """Whether `body` is iota's title pass: one message, whose text opens with its instruction."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or len(messages) != 1 or not isinstance(messages[0], dict):
        return False
    content = messages[0].get("content")
    if isinstance(content, list):
        content = "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return isinstance(content, str) and content.startswith(TITLE_INSTRUCTION)


def _is_upkeep_request(body: Any) -> bool:
    """Whether `body` is a request of a bot's upkeep: its first user message opens with its header."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        messages = body.get("input") if isinstance(body, dict) else None   # the Responses API
    if not isinstance(messages, list):
        messages = body.get("contents") if isinstance(body, dict) else None  # Gemini
    for message in messages or []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content", message.get("parts"))
            if isinstance(content, list):
                content = "".join(block.get("text", "") for block in content if isinstance(block, dict))
            return isinstance(content, str) and content.startswith(UPKEEP_HEADER)
    return False


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.server.model._serve(self)  # type: ignore[attr-defined]

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


if pytest is not None:
    @pytest.fixture
    def fake_model() -> Iterator[FakeModel]:
        """A running fake model server that fails the test if it got a request nothing was scripted for."""
        with FakeModel() as model:
            yield model
            model.assert_no_unexpected()
