"""A user message with attachments, as the parts every wire dialect builds its content from.

    parts(message)  →  [Text("<attachment filename=…>…"), Image("image/png", "<base64>"), Text("the message")]

The attachments come first, in the order they were attached, then what the person typed: the
models read a file better with the question after it. A text attachment is a text part wrapped
in `<attachment filename="…">`; an image is its MIME type and its bytes in base64. An attachment
whose bytes are gone from the session is a text part that says so, so the request is still one
the API accepts and the model knows what is missing.

Each dialect turns these into its own blocks: Anthropic's `image` block with a base64 `source`,
Chat Completions' `image_url` part with a data URL, the Responses API's `input_image`, Gemini's
`inlineData`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from iota.messages import Message
from iota.attachments import unavailable_text, wire_text


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Image:
    mime: str
    base64: str

    @property
    def data_url(self) -> str:
        return f"data:{self.mime};base64,{self.base64}"


def parts(message: Message) -> list[Text | Image]:
    """The message's attachments, then its text (left out when empty: no API takes an empty part)."""
    result: list[Text | Image] = []
    for attachment in message.attachments:
        data = attachment.read()
        if data is None:
            result.append(Text(unavailable_text(attachment)))
        elif attachment.is_image:
            result.append(Image(attachment.mime, base64.b64encode(data).decode("ascii")))
        else:
            result.append(Text(wire_text(attachment, data.decode("utf-8", errors="replace"))))
    if message.content:
        result.append(Text(message.content))
    return result
