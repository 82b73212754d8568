"""The `hidden` record flag: written after every other key, left out when false, read back."""

from __future__ import annotations

import json

from iota.messages import USER, Message
from iota.sessions.log import encode_record


def test_hidden_is_the_last_key_and_left_out_when_false():
    hidden = Message(USER, content="Scheduled: CI (weekdays 09:00)", notice=True, turn="abcd2345", hidden=True)
    record = json.loads(encode_record(hidden))
    assert list(record) == ["role", "content", "notice", "turn", "hidden"]
    assert Message.from_record(record) == hidden
    assert "hidden" not in Message(USER, content="typed").to_record()
    assert Message.from_record({"role": "user", "content": "x", "hidden": "yes"}).hidden is False
