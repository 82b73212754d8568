"""What every provider does alike, each tested in every dialect against the fake model server."""

from __future__ import annotations

import pytest
import trio

from iota.errors import ContextTooLong, ProviderError, ProviderRejected, ResponseStalled
from iota.messages import Message, Usage
from iota.providers import RAW_ARGUMENTS_KEY, Request
from tests.iota.providers.conftest import fake_provider
from tests.support.fake_model import Gate, tool_call


def hello() -> Request:
    return Request(model="test-model", system="Be brief.", messages=[Message("user", "hi")])


async def test_text_reaches_on_text_piece_by_piece_in_order(fake_model, open_provider):
    fake_model.reply("The quick brown fox jumps", pieces=5)
    pieces: list[str] = []

    reply = await open_provider().stream(hello(), pieces.append)

    assert pieces == ["The q", "uick ", "brown", " fox ", "jumps"]
    assert reply.text == "The quick brown fox jumps"
    assert reply.tool_calls == []
    assert reply.stop_reason == "end_turn"


async def test_a_tool_call_split_over_many_fragments_comes_back_whole(fake_model, open_provider):
    arguments = {"path": "src/main.py", "lines": [1, 40], "why": "to see how it starts"}
    fake_model.reply("Reading.", tool_calls=[tool_call("read", arguments, id="call-1"), tool_call("ls", {})], fragments=9)

    reply = await open_provider().stream(hello(), lambda text: None)

    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("call-1", "read", arguments), (reply.tool_calls[1].id, "ls", {})]
    assert reply.stop_reason == "tool_use"


async def test_a_whole_call_in_one_chunk_is_accepted(fake_model, open_provider):
    fake_model.reply(tool_calls=[tool_call("read", {"path": "a"})], fragments=1)

    reply = await open_provider().stream(hello(), lambda text: None)

    assert reply.tool_calls[0].arguments == {"path": "a"}


async def test_arguments_that_are_not_a_json_object_are_kept_raw(fake_model, open_provider):
    fake_model.reply(tool_calls=[tool_call("read", '{"path": "a"'), tool_call("ls", "[1, 2]")])

    reply = await open_provider().stream(hello(), lambda text: None)

    assert [c.arguments for c in reply.tool_calls] == [{RAW_ARGUMENTS_KEY: '{"path": "a"'}, {RAW_ARGUMENTS_KEY: "[1, 2]"}]


async def test_usage_figures_come_back(fake_model, open_provider, dialect):
    fake_model.reply("ok", input_tokens=1200, output_tokens=34, cache_read_tokens=800, cache_write_tokens=100)

    reply = await open_provider().stream(hello(), lambda text: None)

    if dialect in ("anthropic", "bedrock", "vertex"):
        assert reply.usage == Usage(input=1200, output=34, cache_read=800, cache_write=100)
    else:  # the prompt's count (2100) counts cached tokens (800); cache writes are not reported apart
        assert reply.usage == Usage(input=1300, output=34, cache_read=800, total=2134)
    assert reply.usage.context == 2134


async def test_the_stop_reason_comes_back_in_one_vocabulary(fake_model, open_provider):
    fake_model.reply("cut sh", stop_reason="max_tokens")

    reply = await open_provider().stream(hello(), lambda text: None)

    assert reply.stop_reason == "max_tokens"


@pytest.mark.parametrize("statuses", [[429, 529], [500]])
async def test_retryable_http_statuses_are_retried_then_the_reply_streams(fake_model, open_provider, statuses):
    for status in statuses:
        fake_model.fail(status, retry_after_ms=5)
    fake_model.reply("at last")
    pieces: list[str] = []

    reply = await open_provider().stream(hello(), pieces.append)

    assert reply.text == "at last" and "".join(pieces) == "at last"
    assert len(fake_model.requests) == len(statuses) + 1


@pytest.mark.parametrize("status, attempts", [(500, 3), (529, 5)])  # an overloaded server gets more patience
async def test_retries_of_an_http_status_are_bounded(fake_model, open_provider, dialect, status, attempts):
    for _ in range(attempts):
        fake_model.fail(status, message="Overloaded")

    with pytest.raises(ProviderRejected) as caught:
        await open_provider().stream(hello(), lambda text: None)

    assert caught.value.status == status
    assert str(caught.value).startswith(f"fake: HTTP {status} ") and str(caught.value).endswith(": Overloaded")
    assert len(fake_model.requests) == attempts


async def test_a_bad_key_is_rejected_at_once_with_what_to_check(fake_model, open_provider, dialect):
    fake_model.fail(401, message="invalid x-api-key")

    with pytest.raises(ProviderRejected) as caught:
        await open_provider().stream(hello(), lambda text: None)

    hint = {"anthropic": "check ANTHROPIC_API_KEY or providers.fake.key",
            "openai": "check OPENAI_API_KEY or providers.fake.key",
            "openresponses": "check OPENAI_API_KEY or providers.fake.key",
            "gemini": "check GOOGLE_API_KEY or providers.fake.key",
            "bedrock": "check the AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE",
            "vertex": "check the Google credentials: gcloud auth application-default login, "
                      "or GOOGLE_APPLICATION_CREDENTIALS"}[dialect]
    kind = "UNAUTHENTICATED" if dialect == "gemini" else "authentication_error"
    assert str(caught.value) == f"fake: HTTP 401 {kind}: invalid x-api-key ({hint})"
    assert len(fake_model.requests) == 1


@pytest.mark.parametrize(
    "broken",
    [{"text": "lost", "error_after": 0}, {"text": "lost", "drop_after": 0},
     {"tool_calls": [tool_call("ls")], "no_stop": True}],
    ids=["error-event", "dropped", "no-stop"],
)
async def test_a_broken_stream_before_any_text_is_retried(fake_model, open_provider, broken):
    fake_model.reply(**broken)
    fake_model.reply("second try")
    pieces: list[str] = []

    reply = await open_provider().stream(hello(), pieces.append)

    assert reply.text == "second try" and "".join(pieces) == "second try"
    assert len(fake_model.requests) == 2


async def test_a_stream_broken_in_its_tool_calls_is_retried_since_nothing_was_shown(fake_model, open_provider, dialect):
    # Halfway through the call's arguments; Gemini sends a call whole, so right after it.
    fake_model.reply(tool_calls=[tool_call("read", {"path": "a"})], fragments=4, drop_after=1 if dialect == "gemini" else 2)
    fake_model.reply(tool_calls=[tool_call("read", {"path": "b"})])

    reply = await open_provider().stream(hello(), lambda text: None)

    assert reply.tool_calls[0].arguments == {"path": "b"}
    assert len(fake_model.requests) == 2


@pytest.mark.parametrize(
    "fault, message",
    [({"error_after": 1}, "fake: the stream failed: overloaded_error: Overloaded"),
     ({"drop_after": 1}, "fake: the connection dropped in the middle of the reply"),
     ({"no_stop": True}, "fake: the reply ended before it was complete")],
    ids=["error-event", "dropped", "no-stop"],
)
async def test_a_broken_stream_after_text_was_shown_is_raised_not_retried(fake_model, open_provider, fault, message):
    fake_model.reply("abcdef", pieces=3, **fault)
    pieces: list[str] = []

    with pytest.raises(ProviderError) as caught:
        await open_provider().stream(hello(), pieces.append)

    assert str(caught.value).startswith(message)
    assert pieces == (["ab", "cd", "ef"] if "no_stop" in fault else ["ab"])
    assert len(fake_model.requests) == 1


async def test_retries_of_a_broken_stream_are_bounded(fake_model, open_provider):
    for _ in range(3):
        fake_model.reply("never", error_after=0)

    with pytest.raises(ProviderRejected, match="the stream failed: overloaded_error"):
        await open_provider().stream(hello(), lambda text: None)

    assert len(fake_model.requests) == 3


@pytest.mark.parametrize("stall_after", [0, 1])
async def test_a_silent_stream_stalls_and_is_not_retried(fake_model, open_provider, stall_after):
    fake_model.reply("abcdef", pieces=3, stall_after=stall_after)
    pieces: list[str] = []

    with pytest.raises(ResponseStalled, match="^Response stalled$"):
        await open_provider(stall_seconds=0.3).stream(hello(), pieces.append)

    assert pieces == ["ab"][:stall_after]
    (request,) = fake_model.requests
    assert await trio.to_thread.run_sync(request.wait_done) and request.disconnected


async def test_a_server_that_never_answers_stalls_and_is_not_retried(fake_model, open_provider):
    fake_model.hang()

    with pytest.raises(ResponseStalled, match="^Response stalled$"):
        await open_provider(stall_seconds=0.3).stream(hello(), lambda text: None)

    (request,) = fake_model.requests
    assert await trio.to_thread.run_sync(request.wait_done) and request.disconnected


async def test_a_slow_drip_is_not_a_stall(fake_model, open_provider):
    fake_model.reply("abc", pieces=3, drip=0.1)

    reply = await open_provider(stall_seconds=1.0).stream(hello(), lambda text: None)

    assert reply.text == "abc"


@pytest.mark.parametrize("dialect, style", [("anthropic", None), ("openai", None), ("openai", "llama.cpp"),
                                            ("openresponses", None), ("gemini", None), ("bedrock", None),
                                            ("vertex", None)])
async def test_a_context_too_long_is_its_own_error_and_not_retried(fake_model, open_provider, style):
    fake_model.context_too_long(style=style)

    with pytest.raises(ContextTooLong, match="^fake: the conversation is too long for the model"):
        await open_provider().stream(hello(), lambda text: None)

    assert len(fake_model.requests) == 1


async def test_cancelling_mid_stream_keeps_the_text_and_hangs_up(fake_model, open_provider):
    gate = Gate()
    fake_model.reply("first second third", pieces=3, gate=gate)
    provider = open_provider()
    pieces: list[str] = []
    first_piece = trio.Event()

    def on_text(text: str) -> None:
        pieces.append(text)
        first_piece.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(provider.stream, hello(), on_text)
        gate.release()
        await first_piece.wait()
        nursery.cancel_scope.cancel()

    assert pieces == ["first ", "second"][:1]
    (request,) = fake_model.requests
    # The server is still holding the second piece back: it can only finish by seeing the hang-up.
    assert await trio.to_thread.run_sync(request.wait_done)
    assert request.disconnected


async def test_cancelling_while_waiting_for_the_first_byte_hangs_up(fake_model, open_provider):
    fake_model.hang()
    provider = open_provider()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(provider.stream, hello(), lambda text: None)
        request = await trio.to_thread.run_sync(fake_model.wait_for_request)
        nursery.cancel_scope.cancel()

    assert await trio.to_thread.run_sync(request.wait_done)
    assert request.disconnected


async def test_an_unreachable_server_is_a_provider_error(dialect, cloud_credentials):
    with trio.socket.socket() as sock:  # a port that was free a moment ago and refuses now
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}" + ("/v1" if dialect in ("openai", "openresponses") else "")
    provider = fake_provider(dialect, url, connect_seconds=1.0)

    with pytest.raises(ProviderError, match=f"^fake: cannot reach http://127.0.0.1:{port}"):
        await provider.stream(hello(), lambda text: None)
    await provider.aclose()
