"""The live conversation of one chat: what the model is sent, and where it is kept.

The messages are the session's live view without its system record (the system prompt is
composed at send time). Notices — a background job that finished, a resume notice, a memory
write — are user-role records with `notice: true`; they go out ahead of the next message.

A turn's records are written as they happen (`record`: the user's message, each reply, each
tool result, the streamed text), and join the live view when the turn settles (`add`): until
then the turn's own list is what the next request is built from. Records outside a turn
(notices, the unsent message of a cancelled send) are written and added at once (`keep`). A
chat that does not save (`--no-save`) has no session until `/save` gives it one; `save_as` then
writes the whole backlog in one append, without turn ids: those turns are over, and no
`turn_end` was ever written for them.

`/rewind` goes back to just before one of the person's messages (`rewind_points`, `rewind`):
a saving chat appends a `rewind` record and continues from the view the log then gives (see
iota.sessions.log); a chat that does not save drops the messages from there on.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from iota.messages import SYSTEM, USER, Message
from iota.sessions.bundle import Session
from iota.sessions.log import SUMMARY_FOOTER, SUMMARY_HEADER


@dataclass(frozen=True)
class RewindPoint:
    """One of the person's messages the conversation can go back to: where its record starts
    in the log (a saving chat), or where it is among the live messages (one that does not save)."""

    text: str
    offset: int | None = None
    index: int | None = None


@dataclass
class Conversation:
    messages: list[Message] = field(default_factory=list)
    session: Session | None = None
    instructions: str = ""       # the person's system prompt, stored as the bundle's system record
    system_saved: bool = False   # whether the bundle already holds it
    # Conversation records of a never-compacted log the view was opened without (see
    # iota.sessions.log); 0 once a compaction summarises the view.
    left_out: int = 0

    @classmethod
    def from_session(cls, session: Session) -> Conversation:
        conversation = cls()
        conversation.switch_to(session)
        return conversation

    def switch_to(self, session: Session) -> None:
        """Continue in `session`'s conversation (a resume, `/session`)."""
        view = session.view.messages
        self.messages = [m for m in view if m.role != SYSTEM]
        self.session = session
        self.instructions = next((m.content for m in reversed(view) if m.role == SYSTEM), "")
        self.system_saved = True
        self.left_out = session.view.left_out

    @property
    def saving(self) -> bool:
        return self.session is not None

    def record(self, records: list[Message], *, durable: bool = True, meta: bool = False) -> None:
        """Write records to the bundle (when saving) without adding them to the live view.
        Blocking I/O: the chat calls it in a thread, shielded from cancellation."""
        if self.session is not None:
            self._append(self.session, records, durable=durable, meta=meta)

    def add(self, records: list[Message]) -> None:
        """Add records already written (or never to be) to the live view."""
        self.messages.extend(records)

    def keep(self, records: list[Message]) -> None:
        """Save records, then add them to the live view. Blocking I/O, like `record`."""
        self.record(records, meta=True)
        self.add(records)

    def save_as(self, session: Session) -> None:
        """Start saving: write the whole backlog to `session` in one append (`/save`)."""
        self._append(session, [dataclasses.replace(m, turn="") for m in self.messages])
        self.session = session

    def apply_compaction(self, record: Message, messages: list[Message]) -> None:
        """Append a compaction record and continue from the compacted view. Blocking I/O."""
        if self.session is not None:
            self._append(self.session, [record])
        self.messages = list(messages)
        self.left_out = 0

    def rewind_points(self) -> list[RewindPoint]:
        """The person's messages in the conversation, oldest first. Blocking I/O when saving."""
        if self.session is not None and self.session.on_disk:
            return [RewindPoint(text, offset=offset) for offset, text in self.session.rewind_points()]
        return [RewindPoint(_without_preamble(m.content)[1], index=i) for i, m in enumerate(self.messages)
                if m.role == USER and not m.notice and not m.hidden]

    def rewind(self, point: RewindPoint) -> None:
        """Continue from just before `point`'s message. Blocking I/O when saving."""
        if point.offset is not None and self.session is not None:
            self.session.rewind(point.offset, point.text)
            self.switch_to(self.session)
            return
        assert point.index is not None
        preamble, _ = _without_preamble(self.messages[point.index].content)
        # A summary riding on the message stays: it stands for what came before it.
        self.messages = self.messages[: point.index] + ([Message(USER, preamble)] if preamble else [])

    def _append(self, session: Session, records: list[Message], *, durable: bool = True, meta: bool = True) -> None:
        if self.instructions and not self.system_saved:
            records = [Message(SYSTEM, content=self.instructions), *records]
        session.append(records, durable=durable, meta=meta)
        self.system_saved = True


def _without_preamble(content: str) -> tuple[str, str]:
    """(the compaction summary preamble a message carries, or "", the rest of its text)."""
    if content.startswith(SUMMARY_HEADER) and SUMMARY_FOOTER in content:
        preamble, rest = content.split(SUMMARY_FOOTER, 1)
        return preamble + SUMMARY_FOOTER, rest
    return "", content


def notice(text: str) -> Message:
    """A line the model should see ahead of the next message, recorded as a user-role notice."""
    return Message(USER, content=text, notice=True)
