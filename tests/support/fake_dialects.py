"""How the fake model server (fake_model.py) speaks OpenAI's Responses API and Google's Gemini API.

The server scripts one reply however it is asked; this module writes it in these two dialects,
as steps the server's stream writer sends one by one and places its faults between (see
fake_wire: a step is `(is_piece, bytes)`, and the pieces are what `drop_after` and the others
count):

    Responses  POST …/responses: named events — response.created, response.in_progress, then per
               output item output_item.added, its deltas (output_text.delta pieces, or a
               function_call's function_call_arguments.delta fragments), the matching .done
               events and output_item.done (a scripted `server_blocks` item, a client tool
               search's `tool_search_call`, comes first, added and done whole); the end is response.completed with the usage
               (response.incomplete for max_tokens and refusal); a failure is an `error` event.
    Gemini     POST /v1beta/models/{model}:streamGenerateContent?alt=sse (or tunedModels/…): unnamed `data:` chunks,
               each a GenerateContentResponse — the text in pieces, each function call whole in
               one chunk (the first signed with a `thoughtSignature`, as thinking models sign
               them), and a last chunk with the finishReason and the full usageMetadata; a
               failure is a chunk {"error": {code, message, status}}. Its HTTP errors are Google's
               {"error": {code, message, status}}.

This module uses fake_wire's helpers, as fake_wire's own Anthropic and OpenAI framing does, and
fake_model imports it to serve these two dialects, so each framing can be read (and changed) apart.
"""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any, Iterator
from urllib.parse import urlsplit

from tests.support.api_rules import data_url_parts, image_problem
from tests.support.fake_wire import _arguments_text, _split, _stop_reason

# Google's status words for the HTTP errors a test scripts without naming its kind.
_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 529: "UNAVAILABLE"}
_GEMINI_FINISH = {"end_turn": "STOP", "tool_use": "STOP", "max_tokens": "MAX_TOKENS", "refusal": "SAFETY"}
_INCOMPLETE = {"max_tokens": "max_output_tokens", "refusal": "content_filter"}

Frames = tuple[list[tuple[bool, bytes]], list[tuple[bool, bytes]], bytes]


def dialect(path: str) -> str | None:
    """"openresponses" or "gemini" for their streaming paths, None for anything else."""
    path = urlsplit(path).path
    if path.endswith("/responses"):
        return "openresponses"
    return "gemini" if path.endswith(":streamGenerateContent") else None


def conversation_error(dialect: str | None, body: Any) -> str | None:
    """What the real API answers (with a 400) a malformed conversation in these two dialects, as
    tests.support.api_rules does for the others. The Responses API wants every `function_call`
    answered by a `function_call_output` somewhere in the input, and every output to answer a call,
    the same of a client tool search's `tool_search_call` and `tool_search_output`, a `tool_search`
    tool wherever a tool is `defer_loading` or the input has tool search items, and images only in
    a user message; Gemini wants a turn of function calls right after a user turn, answered by the
    next content with as many function responses, and no part without data. Images must be images
    of the type they claim in both (tests.support.api_rules.image_problem)."""
    if dialect == "openresponses" and isinstance(body, dict) and isinstance(body.get("input"), list):
        items = [item for item in body["input"] if isinstance(item, dict)]
        for kind, output_kind, name in (("function_call", "function_call_output", "function call"),
                                        ("tool_search_call", "tool_search_output", "tool search call")):
            calls = [item.get("call_id") for item in items if item.get("type") == kind]
            outputs = [item.get("call_id") for item in items if item.get("type") == output_kind]
            unanswered = [call for call in calls if call not in outputs]
            if unanswered:
                return f"No tool output found for {name} {unanswered[0]}."
            stray = [output for output in outputs if output not in calls]
            if stray:
                return f"No tool call found for {name} output with call_id {stray[0]}."
        return _responses_tools_error(body, items) or _responses_images_error(items)
    if dialect == "gemini" and isinstance(body, dict) and isinstance(body.get("contents"), list):
        return _gemini_error([content for content in body["contents"] if isinstance(content, dict)])
    return None


def _responses_tools_error(body: dict[str, Any], items: list[dict[str, Any]]) -> str | None:
    tools = [tool for tool in body.get("tools") or [] if isinstance(tool, dict)]
    searching = any(tool.get("type") == "tool_search" for tool in tools)
    deferred = [tool.get("name") for tool in tools if tool.get("defer_loading")]
    if deferred and not searching:
        return f"Tool '{deferred[0]}' has defer_loading set, which requires a tool_search tool in tools."
    if not searching and any(item.get("type") in ("tool_search_call", "tool_search_output") for item in items):
        return "Input contains tool search items, but no tool_search tool was provided in tools."
    for tool in tools:
        if tool.get("type") == "tool_search" and tool.get("execution") == "client" and not tool.get("parameters"):
            return "Missing required parameter: 'tools[].parameters' for a tool_search tool with execution 'client'."
    return None


def _responses_images_error(items: list[dict[str, Any]]) -> str | None:
    for index, item in enumerate(items):
        content = item.get("content")
        for position, part in enumerate(content if isinstance(content, list) else []):
            if not isinstance(part, dict) or part.get("type") != "input_image":
                continue
            if item.get("role") != "user":
                return f"Invalid 'input[{index}].content[{position}]': input_image is only allowed in user messages."
            mime, data = data_url_parts(part.get("image_url"))
            problem = image_problem(mime, data) if mime is not None else "Invalid image URL: not a base64 data URL."
            if problem:
                return f"Invalid 'input[{index}].content[{position}].image_url': {problem}"
    return None


def _gemini_error(contents: list[dict[str, Any]]) -> str | None:
    for index, content in enumerate(contents):
        parts = [part for part in content.get("parts") or [] if isinstance(part, dict)]
        for position, part in enumerate(parts):
            inline = part.get("inlineData")
            if isinstance(inline, dict):
                problem = image_problem(inline.get("mimeType"), inline.get("data"))
                if problem or content.get("role") != "user":
                    return (f"* GenerateContentRequest.contents[{index}].parts[{position}].inline_data: "
                            f"{problem or 'inline data is only accepted in a user turn'}")
        if not parts or any(not any(part.get(key) for key in ("text", "functionCall", "functionResponse", "inlineData"))
                            for part in parts):
            return f"* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty, and each part " \
                   "must have one initialized field of data"
        calls = sum("functionCall" in part for part in parts)
        if not calls:
            continue
        before = contents[index - 1] if index else None
        if before is None or before.get("role") != "user":
            return ("Please ensure that function call turn comes immediately after a user turn or after a function "
                    "response turn.")
        after = contents[index + 1].get("parts") or [] if index + 1 < len(contents) else None
        if after is not None and sum("functionResponse" in part for part in after) != calls:
            return ("Please ensure that the number of function response parts is equal to the number of function "
                    "call parts of the function call turn.")
    return None


def gemini_failure(status: int, retry_after_ms: int | None, error_type: str | None, message: str | None,
                   context_too_long: bool) -> tuple[Any, dict[str, str]]:
    headers = {} if retry_after_ms is None else {"retry-after-ms": str(retry_after_ms)}
    if context_too_long:
        message = "The input token count (1250000) exceeds the maximum number of tokens allowed (1048576)."
    error: dict[str, Any] = {"code": status, "message": message or f"fake model: scripted HTTP {status}",
                             "status": error_type or _GOOGLE_STATUS.get(status, "UNKNOWN")}
    if error["message"].startswith("API key not valid"):  # Gemini's answer to a bad key: a 400 that says why
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                             "domain": "googleapis.com"}]
    return {"error": error}, headers


def responses_frames(scripted: Any, model: str, ids: Iterator[int]) -> Frames:
    sequence = itertools.count()

    def event(name: str, **data: Any) -> bytes:
        return f"event: {name}\ndata: {json.dumps({'type': name, 'sequence_number': next(sequence), **data})}\n\n".encode()

    response: dict[str, Any] = {"id": f"resp_{next(ids):04d}", "object": "response", "created_at": 0, "model": model,
                                "status": "in_progress", "output": [], "usage": None}
    steps = [(False, event("response.created", response=response)), (False, event("response.in_progress", response=response))]
    output: list[dict[str, Any]] = []
    for block in scripted.server_blocks:  # a client tool search: the item whole, as it is announced
        item = {"id": f"ts_{next(ids):04d}", "status": "completed", **block}
        steps += [(False, event("response.output_item.added", output_index=len(output), item={**item, "status": "in_progress"})),
                  (False, event("response.output_item.done", output_index=len(output), item=item))]
        output.append(item)
    if scripted.text:
        item = {"type": "message", "id": f"msg_{next(ids):04d}", "status": "in_progress", "role": "assistant", "content": []}
        where = {"item_id": item["id"], "output_index": len(output), "content_index": 0}
        part = {"type": "output_text", "text": scripted.text, "annotations": []}
        steps += [(False, event("response.output_item.added", output_index=len(output), item=item)),
                  (False, event("response.content_part.added", **where, part={**part, "text": ""}))]
        steps += [(True, event("response.output_text.delta", **where, delta=piece))
                  for piece in _split(scripted.text, scripted.pieces)]
        item = {**item, "status": "completed", "content": [part]}
        steps += [(False, event("response.output_text.done", **where, text=scripted.text)),
                  (False, event("response.content_part.done", **where, part=part)),
                  (False, event("response.output_item.done", output_index=len(output), item=item))]
        output.append(item)
    for call in scripted.tool_calls:
        arguments = _arguments_text(call)
        item = {"type": "function_call", "id": f"fc_{next(ids):04d}", "call_id": call.id or f"call_{next(ids):04d}",
                "name": call.name, "arguments": "", "status": "in_progress"}
        where = {"item_id": item["id"], "output_index": len(output)}
        steps.append((False, event("response.output_item.added", output_index=len(output), item=item)))
        steps += [(True, event("response.function_call_arguments.delta", **where, delta=piece))
                  for piece in _split(arguments, scripted.fragments)]
        item = {**item, "arguments": arguments, "status": "completed"}
        steps += [(False, event("response.function_call_arguments.done", **where, arguments=arguments)),
                  (False, event("response.output_item.done", output_index=len(output), item=item))]
        output.append(item)
    prompt = scripted.input_tokens + scripted.cache_read_tokens + scripted.cache_write_tokens
    usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": scripted.cache_read_tokens},
             "output_tokens": scripted.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": prompt + scripted.output_tokens}
    stop = _stop_reason(scripted)
    ending = {"status": "incomplete", "incomplete_details": {"reason": _INCOMPLETE[stop]}} if stop in _INCOMPLETE else {
        "status": "completed", "incomplete_details": None}
    name = f"response.{ending['status']}"
    end = [] if scripted.no_stop else [(False, event(name, response={**response, **ending, "output": output, "usage": usage}))]
    error = event("error", code=scripted.error_type, message=scripted.error_message, param=None)
    return steps, end, error


def gemini_frames(scripted: Any, model: str, ids: Iterator[int]) -> Frames:
    response_id = f"gemini_{next(ids):04d}"
    prompt = scripted.input_tokens + scripted.cache_read_tokens + scripted.cache_write_tokens

    def chunk(parts: list[dict[str, Any]], usage: dict[str, Any], finish: str | None = None) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        data = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": response_id}
        return f"data: {json.dumps(data)}\r\n\r\n".encode()

    so_far = {"promptTokenCount": prompt, "totalTokenCount": prompt}
    steps = [(True, chunk([{"text": piece}], so_far)) for piece in _split(scripted.text, scripted.pieces)]
    for n, call in enumerate(scripted.tool_calls):
        arguments = call.arguments  # an object, as Gemini sends it; a scripted text goes as a JSON string
        function_call: dict[str, Any] = {"name": call.name, "args": arguments} | ({"id": call.id} if call.id else {})
        part: dict[str, Any] = {"functionCall": function_call}
        if n == 0:
            part["thoughtSignature"] = signature_of(response_id)
        steps.append((True, chunk([part], so_far)))
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": scripted.output_tokens,
             "totalTokenCount": prompt + scripted.output_tokens, "cachedContentTokenCount": scripted.cache_read_tokens,
             "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]}
    end = [] if scripted.no_stop else [(False, chunk([{"text": ""}], usage, _gemini_finish(_stop_reason(scripted))))]
    error = {"error": {"code": 503, "message": scripted.error_message, "status": scripted.error_type}}
    return steps, end, f"data: {json.dumps(error)}\r\n\r\n".encode()


def _gemini_finish(stop_reason: str) -> str:
    return _GEMINI_FINISH.get(stop_reason, stop_reason.upper())


def signature_of(response_id: str) -> str:
    """The thoughtSignature the fake signs a reply's first call with (a reply's id is in its chunks)."""
    return base64.b64encode(f"signature of {response_id}".encode()).decode()
