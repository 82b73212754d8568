"""How the fake model server (fake_model.py) looks as Bedrock and Vertex.

Vertex serves Anthropic's events as they are, at its own path. Bedrock frames each event in
AWS's binary event stream — a `chunk` message whose payload is {"bytes": base64 of the event's
JSON} — ends a stream that fails with an `exception` message, and answers an HTTP error as
{"message": …} with the kind in the `x-amzn-errortype` header.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from typing import Any

# A streamed reply as fake_wire frames it: steps of (is_piece, bytes), the end, the error.
Frames = tuple[list[tuple[bool, bytes]], list[tuple[bool, bytes]], bytes]


def cloud_dialect(path: str) -> str | None:
    """"vertex" or "bedrock" for their streaming paths, None for anything else."""
    if path.endswith(":streamRawPredict") and "/publishers/anthropic/models/" in path:
        return "vertex"
    return "bedrock" if re.fullmatch(r"/model/[^/]+/invoke-with-response-stream", path) else None


def bedrock_model(path: str) -> str:
    return path.split("/")[2]


def event_stream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One message of AWS's event-stream framing: a prelude (total length, headers length, CRC),
    string-typed headers, the payload, and a CRC of all of it."""
    encoded = b"".join(struct.pack(">B", len(name)) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
                       for name, value in headers.items())
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def bedrock_frames(anthropic: Frames, error_type: str, error_message: str) -> Frames:
    """Anthropic's server-sent events (`event: …\\ndata: …\\n\\n`), each as Bedrock sends it."""
    steps, end, _ = anthropic

    def chunk(step: tuple[bool, bytes]) -> tuple[bool, bytes]:
        data = step[1].split(b"\ndata: ", 1)[1].rstrip(b"\n")
        payload = json.dumps({"bytes": base64.b64encode(data).decode()}).encode()
        headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
        return step[0], event_stream_message(headers, payload)

    error = event_stream_message({":exception-type": error_type, ":content-type": "application/json",
                                  ":message-type": "exception"}, json.dumps({"message": error_message}).encode())
    return [chunk(step) for step in steps], [chunk(step) for step in end], error


def bedrock_failure(anthropic_body: dict[str, Any], headers: dict[str, str], context_too_long: bool) -> tuple[Any, dict[str, str]]:
    """An error answer in Anthropic's shape, in Bedrock's instead (a too-long prompt is a ValidationException)."""
    error = anthropic_body["error"]
    kind = "ValidationException" if context_too_long else error["type"]
    return {"message": error["message"]}, {**headers, "x-amzn-errortype": f"{kind}:http://internal.amazon.com/coral/"}
