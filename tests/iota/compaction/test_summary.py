"""Compaction: what is summarised, the summary request, and a compaction run against the fake
model server and a real session log (the thresholds and the meter: test_meter.py)."""

from __future__ import annotations

import pytest

from iota.compaction import summary as compaction
from iota.compaction.summary import (
    FLUSH_NOTICE,
    Compacted,
    CompactionFailed,
    compact,
    flush_notice,
    is_flush_notice,
    recent_identifiers,
    split_for_compaction,
    summarize,
    summary_request,
)
from iota.messages import Message, ToolCall, Usage
from iota.providers import make_provider
from iota.sessions.bundle import Session
from tests.support.fake_model import fake_model  # noqa: F401  (the fixture)

PREAMBLE = "[Earlier conversation summary]\n{}\n\n———\n\n"


def system(text: str = "You are iota.") -> Message:
    return Message("system", text)


def user(text: str, **fields) -> Message:
    return Message("user", text, **fields)


def assistant(text: str = "", calls: list[ToolCall] | None = None, usage: Usage | None = None) -> Message:
    return Message("assistant", text, tool_calls=calls or [], usage=usage)


def tool(name: str, text: str, call_id: str = "c1") -> Message:
    return Message("tool", text, tool_call_id=call_id, tool_call_name=name)


@pytest.fixture
async def provider(fake_model):
    provider = make_provider("fake", "openai", "test-key", fake_model.openai_url, connect_seconds=2.0)
    yield provider
    await provider.aclose()


def sent_text(request) -> str:
    """The one user message a summary request carries (and that it carries nothing else)."""
    (message,) = request.body["messages"]
    assert message["role"] == "user" and "tools" not in request.body
    return message["content"]


# -- what is summarised ------------------------------------------------------------------------------


def test_the_kept_tail_starts_at_the_last_message_the_user_sent():
    call = ToolCall("c1", "read", {"path": "a.txt"})
    view = [system(), user("one"), assistant("r1"), user("two"), assistant(calls=[call]), tool("read", "hi"),
            user("[background job 1 finished]", notice=True), assistant("done")]
    split = split_for_compaction(view)
    assert split.head == [view[0]]
    assert split.middle == view[1:3]
    assert split.tail == view[3:]  # the tool call, its result and the notice ride with the last turn
    assert split.previous_summary == ""


def test_a_notice_never_starts_the_kept_turn():
    view = [user("one"), assistant("r1"), user("two"), assistant("r2"), user(FLUSH_NOTICE, notice=True)]
    split = split_for_compaction(view)
    assert split.head == [] and split.middle == view[:2] and split.tail == view[2:]


@pytest.mark.parametrize("view", [
    [],
    [system()],
    [system(), user("only"), assistant("reply")],
    [user("only"), assistant(calls=[ToolCall("c1", "ls", {})]), tool("ls", "x")],
    [system(), user("resumed", notice=True), assistant("ok")],  # no message of the user's at all
], ids=["empty", "system only", "one turn", "one turn of tools", "notices only"])
def test_nothing_older_than_the_last_turn_is_nothing_to_compact(view):
    assert split_for_compaction(view) is None


def test_the_previous_summary_is_lifted_off_the_first_summarised_message():
    view = [system(), user(PREAMBLE.format("we set up the repo") + "now add tests"), assistant("added"),
            user("next")]
    split = split_for_compaction(view)
    assert split.previous_summary == "we set up the repo"
    assert split.middle == [user("now add tests"), assistant("added")]
    assert view[1].content.startswith("[Earlier")  # the caller's view is not changed


def test_a_message_left_empty_by_lifting_the_summary_is_dropped():
    view = [user(PREAMBLE.format("the story so far")), assistant("ok"), user("next")]
    split = split_for_compaction(view)
    assert split.previous_summary == "the story so far"
    assert split.middle == [assistant("ok")]


def test_a_message_left_with_only_tool_calls_is_kept():
    call = ToolCall("c1", "ls", {})
    view = [assistant(PREAMBLE.format("so far"), calls=[call]), tool("ls", "x"), user("next")]
    split = split_for_compaction(view)
    assert split.previous_summary == "so far"
    assert split.middle == [assistant("", calls=[call]), view[1]]


def test_text_that_only_looks_like_a_preamble_is_conversation():
    text = "[Earlier conversation summary]\nno separator here"
    split = split_for_compaction([user(text), assistant("ok"), user("next")])
    assert split.previous_summary == "" and split.middle[0].content == text


# -- the summary request -----------------------------------------------------------------------------

MIDDLE = [
    system("ignored"),
    user("Read the config"),
    assistant("Reading.", calls=[ToolCall("c1", "read", {"path": "a.yaml", "limit": 20, "all": True})]),
    tool("read", "x" * 2500),
    assistant(calls=[ToolCall("c2", "ls", {})]),
    tool("ls", "a.yaml"),
    assistant(""),
]
BODY = (
    "User: Read the config\n"
    "Assistant: Reading.\n"
    "Assistant called tool read(map[all:true limit:20 path:a.yaml])\n"
    f"Tool read result: {'x' * 2000}\n"
    "Assistant called tool ls(map[])\n"
    "Tool ls result: a.yaml\n"
    "--- CONVERSATION END ---"
)


def test_the_chat_summary_request():
    assert compaction.SUMMARY_INSTRUCTION.startswith("You are compressing a conversation")
    assert "corrected" in compaction.SUMMARY_INSTRUCTION  # the user's corrections are kept
    assert summary_request(MIDDLE) == compaction.SUMMARY_INSTRUCTION + "\n\n--- CONVERSATION START ---\n" + BODY


def test_the_hint_and_the_previous_summary():
    text = summary_request(MIDDLE, previous_summary="Earlier: set up.", hint="keep the YAML keys")
    assert text == (
        compaction.SUMMARY_INSTRUCTION
        + "\n\nExtra guidance from the user — emphasize this: keep the YAML keys"
        + "\n\n--- PREVIOUS SUMMARY (already condensed: carry forward what still matters, drop what is resolved) ---\n"
        + "Earlier: set up."
        + "\n--- NEW CONVERSATION START ---\n" + BODY
    )


@pytest.mark.parametrize("saved, ending", [
    (1, "The memory flush just before this compaction saved 1 line."),
    (3, "The memory flush just before this compaction saved 3 lines."),
])
def test_a_bot_is_told_what_the_flush_saved_and_shown_its_memory(saved, ending):
    text = summary_request(MIDDLE, bot_memory="- [user] prefers tabs (2026-09-30)", flush_saved=saved)
    addendum = compaction.BOT_ADDENDUM + " " + ending
    assert addendum.startswith("Durable facts already in the LONG-TERM MEMORY section")
    assert "1,500 words" in addendum
    assert text == (
        compaction.SUMMARY_INSTRUCTION + "\n\n" + addendum
        + "\n\n--- LONG-TERM MEMORY (already saved separately; do not repeat these) ---\n"
        + "- [user] prefers tabs (2026-09-30)"
        + "\n--- CONVERSATION START ---\n" + BODY
    )


def test_a_bot_whose_flush_saved_nothing_keeps_durable_facts_in_the_summary():
    text = summary_request(MIDDLE, previous_summary="before", hint="h", bot_memory="", flush_saved=0)
    addendum = compaction.BOT_ADDENDUM_NOTHING_SAVED
    assert addendum.startswith("Nothing was saved to long-term memory this time; keep durable facts in the summary. ")
    assert "saved 0" not in addendum and "1,500 words" in addendum
    assert text == (
        compaction.SUMMARY_INSTRUCTION + "\n\n" + addendum
        + "\n\nExtra guidance from the user — emphasize this: h"
        + "\n\n--- PREVIOUS SUMMARY (already condensed: carry forward what still matters, drop what is resolved) ---\n"
        + "before"
        + "\n\n--- LONG-TERM MEMORY (already saved separately; do not repeat these) ---\n(empty)"
        + "\n--- NEW CONVERSATION START ---\n" + BODY
    )


# -- identifiers -----------------------------------------------------------------------------------------


def test_identifiers_come_from_the_users_last_messages_newest_first():
    middle = [
        user("old: keep /srv/old.txt"),
        user("Put the cache in ~/cache/data and rename fetchAll to fetch_all; see https://example.com/docs."),
        assistant("ok, and/or later"),
        user("done", notice=True),
        user("Set the timeout to 4500 ms in src/net/client.py, e.g. 30 s; run with `--dry-run` (README.md)"),
        user("thanks"),
    ]
    assert recent_identifiers(middle) == [
        "4500", "src/net/client.py", "--dry-run", "README.md",  # four from the newest with any
        "~/cache/data", "fetchAll", "fetch_all", "https://example.com/docs",
    ]


def test_prose_gives_no_identifiers():
    assert recent_identifiers([user("Yes/no, e.g. 2 or 30 files, and/or more. Fine.")]) == []


# -- the flush notice and the chat's strings -------------------------------------------------------------


def test_the_flush_notice_asks_to_consolidate_past_6_kib():
    assert FLUSH_NOTICE.startswith("The conversation is about to be compacted")
    assert "remember" in FLUSH_NOTICE and "secret" in FLUSH_NOTICE
    assert flush_notice("- x\n" * 1535) == FLUSH_NOTICE  # 6140 bytes
    assert flush_notice("- x\n" * 1536) == (
        FLUSH_NOTICE + "\n\nMEMORY.md is at 75% — consolidate soon (merge related lines with replace, drop stale "
        "ones with remove)")
    assert is_flush_notice(user(flush_notice("- x\n" * 2000), notice=True))
    assert not is_flush_notice(user(FLUSH_NOTICE))  # typed by the user, not queued by the host
    assert not is_flush_notice(user("[background job 1 finished]", notice=True))


def test_the_chats_strings():
    assert compaction.compacted_line("≈40k / 128k (31%)") == "Context compacted → ≈40k / 128k (31%)"
    assert compaction.failed_line(CompactionFailed("empty summary")) == "Compaction failed: empty summary"
    assert compaction.offer_question("112k / 128k (87%)") == "Context 112k / 128k (87%) — compact before sending?"
    assert (compaction.COMPACT_NOW, compaction.NOT_NOW) == ("Compact now", "Not now")
    assert compaction.NOTHING_TO_COMPACT == "Nothing to compact yet."
    assert compaction.COMPACTING == "Compacting context…"
    assert compaction.COMPACTED_WITHOUT_FLUSH == "⚠ Compacted without a memory flush"
    assert compaction.FLUSH_TRANSCRIPT_LINE == "Context is nearly full — saving memory before compacting"
    assert compaction.failing_alert("coder", "empty summary") == "bot coder: compaction failing — empty summary"


# -- summarising against the fake model ------------------------------------------------------------------

CONVERSATION = [
    system(),
    user("Move the parser to src/parse/core.py please"),
    assistant("Moved."),
    user("Now the tests"),
    assistant("Added."),
]


async def test_one_tool_less_request_gives_the_summary(fake_model, provider):
    fake_model.reply("  The parser lives in src/parse/core.py; tests were added.\n", input_tokens=900, output_tokens=40)
    split = split_for_compaction(CONVERSATION)

    summary, usage = await summarize(provider, "gpt-test", split, hint="be short")

    assert summary == "The parser lives in src/parse/core.py; tests were added."
    assert usage.input == 900 and usage.output == 40
    (request,) = fake_model.requests
    assert request.body["model"] == "gpt-test"
    assert sent_text(request) == summary_request(split.middle, hint="be short")


async def test_a_summary_that_drops_what_the_user_named_is_asked_for_again(fake_model, provider):
    fake_model.reply("The parser was moved.", input_tokens=900, output_tokens=10)
    fake_model.reply("The parser was moved to src/parse/core.py.", input_tokens=950, output_tokens=12)
    split = split_for_compaction(CONVERSATION)

    summary, usage = await summarize(provider, "gpt-test", split)

    assert summary == "The parser was moved to src/parse/core.py."
    assert (usage.input, usage.output) == (1850, 22)  # both calls are billed
    first, second = fake_model.requests
    note = ("Your previous summary of this conversation left out identifiers the user gave: src/parse/core.py. "
            "Keep each of them, exactly as written, with what it refers to.")
    assert note not in sent_text(first)
    assert sent_text(second) == summary_request(split.middle, retry_note=note)


async def test_the_first_summary_stands_when_the_second_keeps_less(fake_model, provider):
    middle = [user("Edit src/a.py and src/b.py"), assistant("ok")]
    fake_model.reply("Edited src/a.py.")
    fake_model.reply("Edited two files.")

    summary, _ = await summarize(provider, "m", split_for_compaction([*middle, user("next")]))

    assert summary == "Edited src/a.py."


async def test_a_failed_retry_keeps_the_first_summary(fake_model, provider):
    fake_model.reply("The parser was moved.", input_tokens=900)
    fake_model.fail(400, message="busy")

    summary, usage = await summarize(provider, "m", split_for_compaction(CONVERSATION))

    assert summary == "The parser was moved." and usage.input == 900
    assert len(fake_model.requests) == 2


async def test_a_blank_summary_is_asked_for_again(fake_model, provider):
    fake_model.reply("   \n")
    fake_model.reply("The parser is in src/parse/core.py.")
    split = split_for_compaction(CONVERSATION)

    summary, _ = await summarize(provider, "m", split)

    assert summary == "The parser is in src/parse/core.py."
    note = "Your previous answer was empty. Output the summary itself this time."
    assert sent_text(fake_model.requests[1]) == summary_request(split.middle, retry_note=note)


async def test_two_blank_summaries_fail_as_an_empty_summary(fake_model, provider):
    fake_model.reply("")
    fake_model.reply(" ")
    with pytest.raises(CompactionFailed, match="^empty summary$"):
        await compact(provider, "m", CONVERSATION, 4)
    assert len(fake_model.requests) == 2


async def test_a_provider_error_fails_the_compaction_with_its_text(fake_model, provider):
    fake_model.fail(400, message="the model is gone")
    with pytest.raises(CompactionFailed) as failed:
        await compact(provider, "m", CONVERSATION, 4)
    assert str(failed.value) == "fake: HTTP 400 invalid_request_error: the model is gone"


async def test_nothing_to_compact_asks_nothing(fake_model, provider):
    assert await compact(provider, "m", CONVERSATION[:3], 2) is None
    assert fake_model.requests == []


async def test_a_view_ahead_of_the_log_is_not_compacted(fake_model, provider):
    with pytest.raises(CompactionFailed, match="^the conversation is not saved yet$"):
        await compact(provider, "m", CONVERSATION, 1)
    assert fake_model.requests == []


# -- end to end with a session log ---------------------------------------------------------------------


async def test_a_compaction_survives_a_reopen_and_the_next_one_carries_its_summary_forward(
        fake_model, provider, tmp_path):
    call = ToolCall("c1", "read", {"path": "notes.md"})
    session = Session.create(tmp_path, provider="fake", model="m")
    first_batch = [
        system(),
        user("Read notes.md"), assistant(calls=[call]), tool("read", "todo: ship"), assistant("It says ship."),
        user("Ship it"), assistant("Shipped.", usage=Usage(50_000, 200)),
        user("[background job 1 finished]", notice=True),
    ]
    session.append(first_batch)
    live = list(first_batch)

    fake_model.reply("Read notes.md: it said to ship.", input_tokens=700, output_tokens=20)
    done = await compact(provider, "m", live, session.conversation_count, flush_skipped=True)

    assert isinstance(done, Compacted)
    kept = [user(PREAMBLE.format("Read notes.md: it said to ship.") + "Ship it"), *first_batch[6:]]
    assert done.messages == [system(), *kept]
    assert done.record.to_record() == {
        "role": "compaction", "content": "Read notes.md: it said to ship.", "compacted_through": 4,
        "usage": {"in": 700, "out": 20, "total": 720}, "flush_skipped": True}
    session.append([done.record])
    session.close()

    with Session.open(session.dir) as session:
        assert session.view.messages == done.messages
        assert session.view.summary == "Read notes.md: it said to ship."
        later = [user("Now tag v2.0.1"), assistant("Tagged.")]
        session.append(later)
        live = [*done.messages, *later]

        fake_model.reply("Shipped after reading notes.md; tagged v2.0.1.", input_tokens=800, output_tokens=20)
        again = await compact(provider, "m", live, session.conversation_count,
                              bot_memory="- [user] ships on Fridays", flush_saved=2)
        text = sent_text(fake_model.requests[-1])
        assert text == summary_request(
            [user("Ship it"), *first_batch[6:]], previous_summary="Read notes.md: it said to ship.",
            bot_memory="- [user] ships on Fridays", flush_saved=2)
        assert "[Earlier conversation summary]" not in text  # carried forward, not summarised as talk
        assert again.record.compacted_through == 7 and not again.record.flush_skipped
        session.append([again.record])

    with Session.open(session.dir) as session:
        assert session.view.messages == [
            system(), user(PREAMBLE.format("Shipped after reading notes.md; tagged v2.0.1.") + "Now tag v2.0.1"),
            assistant("Tagged.")]
        assert session.view.messages == again.messages


def test_a_conversation_longer_than_the_budget_sends_its_newest_lines_and_says_so():
    middle = [Message("user", f"question {i} " + "x" * 90) for i in range(100)]
    whole = summary_request(middle)
    text = summary_request(middle, budget=1_000)
    body = text.split("--- CONVERSATION START ---\n")[1]
    assert body.startswith("[The oldest 91 lines of the conversation are left out here")
    assert "User: question 91 " in body and "User: question 90 " not in body
    assert len(body) < 1_000 + 300 and len(whole) > 10_000
    # The newest line goes even when it alone is over the budget; no budget keeps everything.
    assert "User: question 99 " in summary_request(middle, budget=10)
    assert summary_request(middle, budget=None) == whole == summary_request(middle, budget=len(whole))


async def test_compact_keeps_the_summary_request_within_the_models_window(fake_model, provider):
    fake_model.reply("Questions " + " ".join(map(str, range(400))))
    middle = [Message("user", f"question {i} " + "x" * 900) for i in range(400)] + [Message("user", "last")]
    await compaction.compact(provider, "gpt-test", middle, len(middle), window=32_000)
    (request,) = fake_model.requests
    sent = sent_text(request)
    assert len(sent) < compaction.transcript_budget(32_000) + 2_000
    assert "User: question 399 " in sent and "left out here" in sent
