"""Files attached to a message (`/file`): what they are, where their bytes are kept, how they read.

An attachment is a text file or an image (PNG, JPEG, GIF or WebP) that the person attached to
their next message. The message's log record names it, as the Rust iota writes it:

    "attachments": [{"filename": "shots/login.png", "mime": "image/png", "data_ref": "sha256:9f2c…"}]

and its bytes are kept once per bundle, by content: `<bundle>/attachments/<sha256 hex>`, written
the first time a record refers to it (atomically, 0644) and never again. A session that is not
saved yet (`--no-save`) holds the bytes in memory; `/save` writes them with the backlog.

What an attachment is, is decided by its bytes, not its name: an image is known by its magic
number (a `.png` that is a JPEG goes as a JPEG, which the providers check), anything else must be
UTF-8 text without a NUL byte. The caps are the strictest provider's: an image of at most 5 MB
(Anthropic's limit per image), and text of at most 256 KiB, which is already some 64k tokens.

An attachment read back from a bundle is checked against its hash: a file that went missing or
was changed is sent as a line saying so (`unavailable_text`), never as other bytes, and never
stops the conversation.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Sequence, TypeVar

from iota.errors import IotaError

ATTACHMENTS_DIR = "attachments"
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_TEXT_BYTES = 256 * 1024
TEXT_MIME = "text/plain"
# The first bytes of each image type the providers take, by MIME type.
IMAGE_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
}
IMAGE_TYPES = (*IMAGE_MAGIC, "image/webp")
# How far into a file a NUL byte makes it binary (as the code tools' read_file decides).
BINARY_PROBE_BYTES = 8000


class AttachmentRefused(IotaError):
    """A file that cannot be attached; the message is the one line the person is shown."""


@dataclass(frozen=True)
class Attachment:
    """One attached file: what the record says of it, and where its bytes are.

    `data` holds the bytes until the session's bundle has them (an unsaved chat keeps them here
    for good); `bundle` is the bundle directory whose `attachments/` has them. Neither is part of
    the record, nor of comparing two attachments."""

    filename: str
    mime: str
    sha256: str
    data: bytes | None = field(default=None, compare=False, repr=False)
    bundle: Path | None = field(default=None, compare=False, repr=False)

    @property
    def is_image(self) -> bool:
        return self.mime in IMAGE_TYPES

    def to_record(self) -> dict[str, str]:
        return {"filename": self.filename, "mime": self.mime, "data_ref": f"sha256:{self.sha256}"}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Attachment | None:
        """The attachment a record names; None for an entry that does not name one properly."""
        filename, mime, reference = (record.get(key) for key in ("filename", "mime", "data_ref"))
        if not all(isinstance(value, str) for value in (filename, mime, reference)):
            return None
        digest = reference.removeprefix("sha256:")
        if not reference.startswith("sha256:") or len(digest) != 64 or not _is_hex(digest):
            return None
        return cls(filename, mime, digest.lower())

    def read(self) -> bytes | None:
        """The bytes, or None when they are not to be had (missing, changed, unreadable)."""
        if self.data is not None:
            return self.data
        if self.bundle is None:
            return None
        try:
            data = (self.bundle / ATTACHMENTS_DIR / self.sha256).read_bytes()
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == self.sha256 else None

    def text(self) -> str | None:
        """A text attachment's text (None when unavailable)."""
        data = self.read()
        return data.decode("utf-8", errors="replace") if data is not None else None


def make_attachment(filename: str, data: bytes) -> Attachment:
    """An attachment of `data`, its type decided by its bytes; AttachmentRefused otherwise."""
    mime = image_type(data)
    if mime is not None:
        if len(data) > MAX_IMAGE_BYTES:
            raise AttachmentRefused(f"{filename} is {megabytes(len(data))}; an image can be at most "
                                    f"{megabytes(MAX_IMAGE_BYTES)}")
    else:
        if b"\0" in data[:BINARY_PROBE_BYTES] or not _is_utf8(data):
            raise AttachmentRefused(f"{filename} is neither text nor a PNG, JPEG, GIF or WebP image")
        if len(data) > MAX_TEXT_BYTES:
            raise AttachmentRefused(f"{filename} is {len(data) // 1024} KiB of text; an attached text file can be "
                                    f"at most {MAX_TEXT_BYTES // 1024} KiB")
        if not data.strip():
            raise AttachmentRefused(f"{filename} is empty")
        mime = TEXT_MIME
    return Attachment(filename, mime, hashlib.sha256(data).hexdigest(), data=data)


def image_type(data: bytes) -> str | None:
    """The MIME type of an image the providers take, known by its first bytes; None for anything else."""
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for mime, magics in IMAGE_MAGIC.items():
        if data.startswith(magics):
            return mime
    return None


def describe(attachment: Attachment) -> str:
    """`shots/login.png (image/png)`: how the transcript and /export name an attachment."""
    return f"{attachment.filename} ({attachment.mime})"


def attached_line(attachments: Sequence[Attachment]) -> str:
    """The transcript's line under a message that carries files: `📎 a.png (image/png), notes.md (text/plain)`."""
    return "📎 " + ", ".join(describe(attachment) for attachment in attachments)


def wire_text(attachment: Attachment, text: str) -> str:
    """A text attachment as the model reads it."""
    return f'<attachment filename="{_quote(attachment.filename)}">\n{text.rstrip()}\n</attachment>'


def unavailable_text(attachment: Attachment) -> str:
    """What the model reads instead of an attachment whose bytes are gone."""
    return (f"[attachment {attachment.filename} ({attachment.mime}) is not available: {ATTACHMENTS_DIR}/"
            f"{attachment.sha256} is missing from the session or was changed]")


def store(bundle: Path, attachments: Iterable[Attachment]) -> None:
    """Write each attachment's bytes into the bundle, unless a file of that hash is there already:
    written once, atomically (a temp file, fsynced, renamed), mode 0644. The bytes come from
    memory, or from the bundle the attachment was bound to (a fork copies them). OSError on failure."""
    directory = bundle / ATTACHMENTS_DIR
    for attachment in attachments:
        target = directory / attachment.sha256
        if os.path.lexists(target):
            continue
        data = attachment.read()  # from memory, or from the bundle a fork was made from
        if data is None:
            continue  # gone already: it reads as unavailable, here as there
        directory.mkdir(exist_ok=True)
        temporary = directory / f".{attachment.sha256}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, 0o644)  # whatever the umask: the bundle's other files are 0644 too
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            temporary.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(temporary, target)
        _fsync_directory(directory)


M = TypeVar("M")


def bind(messages: Sequence[M], bundle: Path) -> list[M]:
    """`messages` with each attachment told the bundle its bytes are in (new messages where one
    changes: a message of the conversation is never edited in place)."""
    bound = []
    for message in messages:
        attachments = getattr(message, "attachments", None)
        if attachments:
            message = replace(message, attachments=[replace(a, bundle=bundle) for a in attachments])
        bound.append(message)
    return bound


def megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _quote(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _is_hex(text: str) -> bool:
    return all(character in "0123456789abcdefABCDEF" for character in text)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
