"""Attachments: what a file is taken for, how the bundle keeps its bytes, how the log names them,
and that a resume, a fork and `/save` find them again."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest

from iota.messages import ASSISTANT, USER, Message
from iota.paths import sessions_dir
from iota import attachments
from iota.attachments import MAX_IMAGE_BYTES, MAX_TEXT_BYTES, Attachment, AttachmentRefused, make_attachment
from iota.sessions.bundle import Session
from iota.sessions.conversation import Conversation
from iota.sessions.manage import fork_bundle
from tests.support.images import GIF, JPEG, WEBP, png


def new_session() -> Session:
    return Session.new(sessions_dir(), provider="anthropic", model="claude")


@pytest.mark.parametrize("data, mime", [(png(), "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"),
                                        (WEBP, "image/webp"), (b"plain words\n", "text/plain")])
def test_a_file_is_known_by_its_bytes_not_its_name(data, mime):
    # Every one of them named .png: a JPEG called x.png goes as the JPEG it is.
    attachment = make_attachment("x.png", data)
    assert (attachment.mime, attachment.sha256) == (mime, hashlib.sha256(data).hexdigest())


@pytest.mark.parametrize("data, refusal", [
    (b"%PDF-1.7\n\x00\x01binary", "x.bin is neither text nor a PNG, JPEG, GIF or WebP image"),
    (b"\xff\xfe not utf-8 \xff", "x.bin is neither text nor a PNG, JPEG, GIF or WebP image"),
    (b"", "x.bin is empty"),
    (b"a" * (MAX_TEXT_BYTES + 1), "x.bin is 256 KiB of text; an attached text file can be at most 256 KiB"),
    (png() + b"\0" * MAX_IMAGE_BYTES, "x.bin is 5.0 MB; an image can be at most 5.0 MB"),
])
def test_what_cannot_be_attached_is_refused_in_one_line(data, refusal):
    with pytest.raises(AttachmentRefused) as refused:
        make_attachment("x.bin", data)
    assert str(refused.value) == refusal


def test_the_record_names_each_attachment_after_the_other_keys():
    image = make_attachment("shots/a.png", png())
    record = Message(USER, "look", turn="t1", attachments=[image]).to_record()
    assert list(record) == ["role", "content", "turn", "attachments"]
    assert record["attachments"] == [{"filename": "shots/a.png", "mime": "image/png",
                                      "data_ref": f"sha256:{image.sha256}"}]
    assert "attachments" not in Message(USER, "no files").to_record()
    assert Message.from_record(record).attachments == [image]


def test_a_record_naming_an_attachment_badly_drops_that_entry_only():
    good = {"filename": "a.png", "mime": "image/png", "data_ref": "sha256:" + "ab" * 32}
    record = {"role": "user", "content": "x", "attachments": [good, {"filename": "b"}, "junk",
                                                             {**good, "data_ref": "md5:00"}]}
    assert [a.filename for a in Message.from_record(record).attachments] == ["a.png"]


def test_the_bundle_keeps_each_file_once_0644_by_its_hash_before_the_record(monkeypatch):
    old_umask = os.umask(0o077)  # a strict umask must not make the file private
    try:
        session = new_session()
        image = make_attachment("a.png", png())
        session.append([Message(USER, "one", attachments=[image])])
        stored = session.dir / "attachments" / image.sha256
        first = stored.stat()
        session.append([Message(USER, "again", attachments=[make_attachment("copy.png", png())])])
    finally:
        os.umask(old_umask)
    assert stored.read_bytes() == png()
    assert stat.S_IMODE(first.st_mode) == 0o644
    assert stored.stat().st_ino == first.st_ino  # written once, never again
    assert sorted(os.listdir(session.dir / "attachments")) == [image.sha256]  # no temp file left
    records = [json.loads(line) for line in (session.dir / "messages.jsonl").read_text().splitlines()]
    assert [r["attachments"][0]["filename"] for r in records] == ["a.png", "copy.png"]
    session.close()


def test_a_file_that_cannot_be_stored_leaves_no_record(monkeypatch):
    session = new_session()
    session.append([Message(USER, "first")])

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(attachments.os, "fchmod", fail)
    with pytest.raises(Exception, match="its attachment could not be stored: No space left on device"):
        session.append([Message(USER, "with a file", attachments=[make_attachment("a.png", png())])])
    lines = (session.dir / "messages.jsonl").read_text().splitlines()
    assert [json.loads(line)["content"] for line in lines] == ["first"]
    assert not any(name.endswith(".tmp") for name in os.listdir(session.dir / "attachments"))
    session.close()


def test_a_resumed_session_reads_its_attachments_from_the_bundle():
    session = new_session()
    session.append([Message(USER, "see", attachments=[make_attachment("a.png", png())]), Message(ASSISTANT, "red")])
    session.close()
    reopened = Session.open(session.dir)
    (message, _) = reopened.view.messages
    (attachment,) = message.attachments
    assert attachment.data is None and attachment.read() == png()
    reopened.close()


def test_a_changed_or_missing_file_reads_as_unavailable(tmp_path):
    image = make_attachment("a.png", png())
    attachments.store(tmp_path, [image])
    bound = Attachment(image.filename, image.mime, image.sha256, bundle=tmp_path)
    assert bound.read() == png()
    (tmp_path / "attachments" / image.sha256).write_bytes(JPEG)  # someone changed it
    assert bound.read() is None
    (tmp_path / "attachments" / image.sha256).unlink()
    assert bound.read() is None
    assert attachments.unavailable_text(bound) == (
        f"[attachment a.png (image/png) is not available: attachments/{image.sha256} is missing from the session "
        "or was changed]")


def test_save_and_fork_carry_the_files_into_the_new_bundle():
    conversation = Conversation()
    conversation.add([Message(USER, "see", attachments=[make_attachment("a.png", png())]), Message(ASSISTANT, "ok")])
    saved = new_session()
    conversation.save_as(saved)  # an unsaved chat's bytes were in memory until now
    sha = hashlib.sha256(png()).hexdigest()
    assert (saved.dir / "attachments" / sha).read_bytes() == png()
    saved.close()
    child = fork_bundle(saved.dir)
    assert (child.dir / "attachments" / sha).read_bytes() == png()
    assert child.view.messages[0].attachments[0].bundle == child.dir
    child.close()


def test_after_a_rewind_the_earlier_attachments_still_read_from_the_bundle():
    session = new_session()
    session.append([Message(USER, "see", attachments=[make_attachment("a.png", png())]), Message(ASSISTANT, "red")])
    session.append([Message(USER, "later"), Message(ASSISTANT, "ok")])
    session.close()
    reopened = Session.open(session.dir)
    later = [offset for offset, text in reopened.rewind_points() if text == "later"][0]
    view = reopened.rewind(later)
    assert view.messages[0].attachments[0].read() == png()
    reopened.close()
