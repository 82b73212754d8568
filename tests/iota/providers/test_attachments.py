"""A user message's attachments on the wire, in every dialect, as the fake server (strict like the
real APIs about images) receives them."""

from __future__ import annotations

import base64
import hashlib

import pytest

from iota.errors import ProviderError
from iota.messages import USER, Message
from iota.providers import Request
from iota.attachments import Attachment, make_attachment
from tests.support import api_rules, fake_dialects
from tests.support.api_rules import images_in
from tests.support.images import JPEG, png


def texts_in(body: object) -> list[str]:
    """Every string a request's conversation carries, in order."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(body.get("messages") or body.get("input") or body.get("contents"))
    return found


async def test_a_png_and_a_text_file_reach_the_model_as_image_and_text_blocks(fake_model, open_provider, dialect):
    image = make_attachment("shots/red.png", png())
    notes = make_attachment("notes.md", b"# Notes\nthe colour is red\n")
    fake_model.reply("A red square.")
    messages = [Message(USER, "What colour is it?", attachments=[image, notes])]

    reply = await open_provider().stream(Request("fake-model", "", messages), lambda text: None)

    assert reply.text == "A red square."
    (sent,) = fake_model.requests
    assert images_in(sent.dialect, sent.body) == [("image/png", png())]
    texts = texts_in(sent.body)
    wrapped = '<attachment filename="notes.md">\n# Notes\nthe colour is red\n</attachment>'
    # The files first, then the question about them.
    assert texts.index(wrapped) < texts.index("What colour is it?")


async def test_an_attachment_whose_bytes_are_gone_is_sent_as_a_line_saying_so(fake_model, open_provider, dialect,
                                                                           tmp_path):
    lost = Attachment("old.png", "image/png", hashlib.sha256(b"gone").hexdigest(), bundle=tmp_path)
    fake_model.reply("I cannot see it.")
    messages = [Message(USER, "and this one?", attachments=[lost])]

    await open_provider().stream(Request("fake-model", "", messages), lambda text: None)

    (sent,) = fake_model.requests
    assert images_in(sent.dialect, sent.body) == []
    assert any(text.startswith("[attachment old.png (image/png) is not available: attachments/")
               for text in texts_in(sent.body))


async def test_the_fake_refuses_an_image_that_is_not_what_it_claims(fake_model, open_provider, dialect):
    """The check the real APIs make, which keeps the product's own detection honest: a JPEG
    labelled as a PNG is refused in every dialect."""
    lying = Attachment("x.png", "image/png", hashlib.sha256(JPEG).hexdigest(), data=JPEG)
    with pytest.raises(ProviderError, match="Image does not match the provided media type image/png"):
        await open_provider().stream(Request("fake-model", "", [Message(USER, "hi", attachments=[lying])]),
                                     lambda text: None)
    assert len(fake_model.rejected) == 1
    fake_model.rejected.clear()


def test_the_fake_refuses_an_image_outside_a_user_message():
    """Only a user message may carry an image, in every dialect (iota never sends one elsewhere:
    this keeps the fake as strict as the APIs)."""
    data = base64.b64encode(png()).decode()
    url = f"data:image/png;base64,{data}"
    refused = {
        "anthropic": {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]}]},
        "openai": {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [
            {"type": "image_url", "image_url": {"url": url}}]}]},
        "openresponses": {"input": [{"role": "assistant", "content": [{"type": "input_image", "image_url": url}]}]},
        "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]},
                                {"role": "model", "parts": [{"inlineData": {"mimeType": "image/png", "data": data}}]}]},
    }
    for dialect, body in refused.items():
        problem = api_rules.conversation_error(dialect, body) or fake_dialects.conversation_error(dialect, body)
        assert problem and ("user" in problem), dialect
