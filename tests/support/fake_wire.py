"""What the fake model server (fake_model.py) sends: the scripted answers, and how they are written
on the wire in Anthropic's Messages and OpenAI's Chat Completions dialects.

A scripted answer is a `_Stream` (what `FakeModel.reply` queues: text, `tool_call`s, usage, and
the faults to place between its pieces, a `Gate` among them), an `_HttpFailure` (sent as JSON in
the asking dialect's error shape by `_send_json` and `_failure_body`) or a `_Hang`. A stream is
framed as steps, `(is_piece, bytes)`, then the end, and the error event that `error_after` sends
instead of the rest (`_anthropic_frames`, `_openai_frames`; fake_dialects frames the Responses API
and Gemini with the same helpers, and fake_cloud wraps Anthropic's frames for Bedrock).
`_StreamWriter` sends the steps as a chunked body, one frame per chunk, counting the pieces to
place `drop_after`, `error_after`, `stall_after`, `gate` and `drip`; while it waits it watches
the socket, so a client that hangs up ends the stream (`_ClientGone`), as does the server
closing (`_ServerClosing`).

Nothing here knows the server's script, its recording or its routing (fake_model), so the two
can be read, and changed, apart.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Iterator

_OPENAI_STOP = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}
_POLL = 0.01  # how often a waiting stream checks for the client going away


@dataclass(frozen=True)
class ScriptedCall:
    name: str
    arguments: dict[str, Any] | str  # a str is sent as it is, valid JSON or not
    id: str | None = None


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, *, id: str | None = None) -> ScriptedCall:
    return ScriptedCall(name, {} if arguments is None else arguments, id)


class Gate:
    """Holds a streamed reply back: each `release()` lets one more piece out (the end of the
    stream counts as one more), `open()` lets everything out. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._permits = 0

    def release(self, n: int = 1) -> None:
        with self._lock:
            self._permits += n

    def open(self) -> None:
        self.release(1_000_000)

    def allows(self, steps: int) -> bool:
        with self._lock:
            return self._permits >= steps


@dataclass
class _Stream:
    text: str
    tool_calls: list[ScriptedCall]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    stop_reason: str | None
    pieces: int
    fragments: int
    drip: float
    gate: Gate | None
    error_after: int | None
    error_type: str
    error_message: str
    drop_after: int | None
    stall_after: int | None
    no_stop: bool
    server_blocks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _HttpFailure:
    status: int
    retry_after_ms: int | None
    error_type: str | None
    message: str | None
    context_too_long: bool = False
    style: str | None = None  # None: the dialect's own shape; "llama.cpp": llama.cpp's


@dataclass
class _Hang:
    pass


def _stream(
    text: str = "",
    *,
    tool_calls: list[ScriptedCall] | tuple[ScriptedCall, ...] = (),
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    stop_reason: str | None = None,
    pieces: int = 3,
    fragments: int = 4,
    drip: float = 0.0,
    gate: Gate | None = None,
    error_after: int | None = None,
    error_type: str = "overloaded_error",
    error_message: str = "Overloaded",
    drop_after: int | None = None,
    stall_after: int | None = None,
    no_stop: bool = False,
    server_blocks: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (),
) -> _Stream:
    """The streamed answer `FakeModel.reply` queues (its options are described there)."""
    return _Stream(text, list(tool_calls), input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                   stop_reason, pieces, fragments, drip, gate, error_after, error_type, error_message,
                   drop_after, stall_after, no_stop, list(server_blocks))


class _ClientGone(Exception):
    pass


class _ServerClosing(Exception):
    pass


def _send_json(handler: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str]) -> None:
    data = json.dumps(body).encode()
    handler.send_response(status)
    for name, value in {"content-type": "application/json", "content-length": str(len(data)),
                        "connection": "close", **headers}.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def _failure_body(failure: _HttpFailure, dialect: str | None) -> tuple[Any, dict[str, str]]:
    headers = {} if failure.retry_after_ms is None else {"retry-after-ms": str(failure.retry_after_ms)}
    if failure.context_too_long:
        if dialect == "anthropic":
            error = {"type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"}
            return {"type": "error", "error": error}, headers
        if failure.style == "llama.cpp":
            return {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                              "type": "exceed_context_size_error", "n_prompt_tokens": 250000, "n_ctx": 131072}}, headers
        return {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                                     "resulted in 250000 tokens. Please reduce the length of the messages.",
                          "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}, headers
    error_type = failure.error_type or _ERROR_TYPES.get(failure.status, "api_error")
    message = failure.message or f"fake model: scripted HTTP {failure.status}"
    if dialect == "anthropic":
        return {"type": "error", "error": {"type": error_type, "message": message}}, headers
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}, headers


# A stream is a list of steps: (is_piece, bytes). Pieces are the deltas that faults count.
Step = tuple[bool, bytes]


def _split(text: str, parts: int) -> list[str]:
    if not text:
        return []
    size = -(-len(text) // max(1, parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _arguments_text(call: ScriptedCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _stop_reason(scripted: _Stream) -> str:
    return scripted.stop_reason or ("tool_use" if scripted.tool_calls else "end_turn")


def _anthropic_frames(scripted: _Stream, model: str, ids: Iterator[int]) -> tuple[list[Step], list[Step], bytes]:
    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    usage = {"input_tokens": scripted.input_tokens, "cache_creation_input_tokens": scripted.cache_write_tokens,
             "cache_read_input_tokens": scripted.cache_read_tokens, "output_tokens": 1}
    message = {"id": f"msg_{next(ids):04d}", "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": usage}
    steps: list[Step] = [(False, event("message_start", {"type": "message_start", "message": message})),
                         (False, event("ping", {"type": "ping"}))]
    blocks: list[tuple[dict[str, Any], str, list[str]]] = []
    for block in scripted.server_blocks:
        if "input" in block:  # its input arrives as JSON pieces, as a tool call's does
            blocks.append(({**block, "input": {}}, "input_json_delta", _split(json.dumps(block["input"]), 2)))
        else:
            blocks.append((block, "", []))
    if scripted.text:
        blocks.append(({"type": "text", "text": ""}, "text_delta", _split(scripted.text, scripted.pieces)))
    for call in scripted.tool_calls:
        block = {"type": "tool_use", "id": call.id or f"toolu_{next(ids):04d}", "name": call.name, "input": {}}
        blocks.append((block, "input_json_delta", _split(_arguments_text(call), scripted.fragments)))
    for index, (block, delta_type, parts) in enumerate(blocks):
        steps.append((False, event("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})))
        for part in parts:
            delta = {"type": delta_type, ("text" if delta_type == "text_delta" else "partial_json"): part}
            steps.append((True, event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})))
        steps.append((False, event("content_block_stop", {"type": "content_block_stop", "index": index})))
    end: list[Step] = [] if scripted.no_stop else [
        (False, event("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": _stop_reason(scripted), "stop_sequence": None},
                                        "usage": {"output_tokens": scripted.output_tokens}})),
        (False, event("message_stop", {"type": "message_stop"})),
    ]
    error = event("error", {"type": "error", "error": {"type": scripted.error_type, "message": scripted.error_message}})
    return steps, end, error


def _openai_frames(scripted: _Stream, model: str, ids: Iterator[int]) -> tuple[list[Step], list[Step], bytes]:
    chunk_id = f"chatcmpl-{next(ids):04d}"

    def chunk(delta: dict[str, Any] | None, finish_reason: str | None = None, **extra: Any) -> bytes:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        data = {"id": chunk_id, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": choices, **extra}
        return f"data: {json.dumps(data)}\n\n".encode()

    steps: list[Step] = [(False, chunk({"role": "assistant", "content": ""}))]
    steps += [(True, chunk({"content": part})) for part in _split(scripted.text, scripted.pieces)]
    for index, call in enumerate(scripted.tool_calls):
        call_id, arguments = call.id or f"call_{next(ids):04d}", _arguments_text(call)
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        if scripted.fragments <= 1:  # the whole call in one chunk, as Ollama sends it
            head["function"]["arguments"] = arguments
            steps.append((True, chunk({"tool_calls": [head]})))
            continue
        steps.append((False, chunk({"tool_calls": [head]})))
        for part in _split(arguments, scripted.fragments):
            steps.append((True, chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})))
    prompt = scripted.input_tokens + scripted.cache_read_tokens + scripted.cache_write_tokens
    usage = {"prompt_tokens": prompt, "completion_tokens": scripted.output_tokens,
             "total_tokens": prompt + scripted.output_tokens,
             "prompt_tokens_details": {"cached_tokens": scripted.cache_read_tokens}}
    stop = _stop_reason(scripted)
    end: list[Step] = [] if scripted.no_stop else [
        (False, chunk({}, _OPENAI_STOP.get(stop, stop))),
        (False, chunk(None, usage=usage)),
        (False, b"data: [DONE]\n\n"),
    ]
    error = f"data: {json.dumps({'error': {'message': scripted.error_message, 'type': scripted.error_type, 'code': None}})}\n\n"
    return steps, end, error.encode()


class _StreamWriter:
    """Writes one streamed reply as a chunked body, one SSE frame per chunk, applying the faults."""

    def __init__(self, handler: BaseHTTPRequestHandler, closing: threading.Event):
        self._handler = handler
        self._socket: socket.socket = handler.connection
        self._closing = closing

    def run(self, scripted: _Stream, frames: tuple[list[Step], list[Step], bytes],
            content_type: str = "text/event-stream") -> None:
        steps, end, error = frames
        handler = self._handler
        handler.send_response(200)
        for name, value in (("content-type", content_type), ("cache-control", "no-cache"),
                            ("transfer-encoding", "chunked"), ("connection", "close")):
            handler.send_header(name, value)
        handler.end_headers()
        sent = 0
        # The end of the stream is a checkpoint too, so a fault "after all the pieces" works.
        for is_piece, data in [*steps, (True, b"")]:
            if is_piece:
                if sent == scripted.drop_after:
                    self._socket.shutdown(socket.SHUT_RDWR)
                    return
                if sent == scripted.error_after:
                    self._send_chunk(error)
                    break
                if sent == scripted.stall_after:
                    self.wait(lambda: False)
                if scripted.gate is not None:
                    self.wait(lambda: scripted.gate.allows(sent + 1))
                if scripted.drip:
                    deadline = time.monotonic() + scripted.drip
                    self.wait(lambda: time.monotonic() >= deadline)
                sent += 1
            if data:
                self._send_chunk(data)
        else:
            for _, data in end:
                self._send_chunk(data)
        self._send(b"0\r\n\r\n")

    def _send_chunk(self, data: bytes) -> None:
        self._send(b"%x\r\n%s\r\n" % (len(data), data))

    def _send(self, data: bytes) -> None:
        try:
            self._socket.sendall(data)
        except OSError as err:  # BrokenPipeError, ConnectionResetError
            raise _ClientGone() from err

    def wait(self, done: Callable[[], bool]) -> None:
        """Wait until `done()`, watching the socket: a client that closes it ends the stream."""
        while not done():
            if self._closing.is_set():
                raise _ServerClosing()
            readable, _, _ = select.select([self._socket], [], [], _POLL)
            if readable:
                try:
                    if not self._socket.recv(1, socket.MSG_PEEK):
                        raise _ClientGone()
                except OSError as err:
                    raise _ClientGone() from err
                time.sleep(_POLL)  # bytes we do not expect: do not spin on them
