"""Attachments in the compaction's arithmetic and in the summary request: an image counts as the
Rust iota counts it, a text file as its text, and the summary names what was attached."""

from __future__ import annotations

from iota.compaction.meter import IMAGE_TOKENS, message_tokens
from iota.compaction.summary import summary_request
from iota.messages import ASSISTANT, USER, Message
from iota.attachments import make_attachment
from tests.support.images import png


def test_an_image_counts_1200_and_a_text_file_its_text():
    plain = message_tokens([Message(USER, "look")]).exact()
    with_image = message_tokens([Message(USER, "look", attachments=[make_attachment("a.png", png())])]).exact()
    notes = make_attachment("notes.md", ("word " * 300).encode())
    with_text = message_tokens([Message(USER, "look", attachments=[notes])]).exact()
    assert with_image == plain + IMAGE_TOKENS == plain + 1200
    assert with_text >= plain + 300


def test_the_summary_request_names_the_attached_files():
    messages = [Message(USER, "what is this?", attachments=[make_attachment("shots/a.png", png())]),
                Message(ASSISTANT, "A red square.")]
    text = summary_request(messages)
    assert "User: what is this? [attached: shots/a.png (image/png)]\n" in text
