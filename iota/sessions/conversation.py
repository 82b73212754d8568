"""The live conversation of one chat: what the model is sent, and where it is kept.

The messages are the session's live view without its system record (the system prompt is
composed at send time). Notices — a background job that finished, a resume notice, a memory
write — are user-role records with `notice: true`; they go out ahead of the next message.

Saving is all or nothing per turn: `keep` appends the turn's records to the bundle in one batch
and only then to the live view, so a failed save leaves both as they were. A chat that does not
save (`--no-save`) has no session until `/save` gives it one; `save_as` then writes the whole
backlog in one append.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iota.messages import SYSTEM, USER, Message
from iota.sessions.bundle import Session


@dataclass
class Conversation:
    messages: list[Message] = field(default_factory=list)
    session: Session | None = None
    instructions: str = ""       # the person's system prompt, stored as the bundle's system record
    system_saved: bool = False   # whether the bundle already holds it

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

    @property
    def saving(self) -> bool:
        return self.session is not None

    def keep(self, records: list[Message]) -> None:
        """Save a finished (or interrupted) turn's records, then add them to the live view.
        Blocking I/O: the chat calls it in a thread, shielded from cancellation."""
        if self.session is not None:
            self._append(self.session, records)
        self.messages.extend(records)

    def save_as(self, session: Session) -> None:
        """Start saving: write the whole backlog to `session` in one append (`/save`)."""
        self._append(session, list(self.messages))
        self.session = session

    def apply_compaction(self, record: Message, messages: list[Message]) -> None:
        """Append a compaction record and continue from the compacted view. Blocking I/O."""
        if self.session is not None:
            self._append(self.session, [record])
        self.messages = list(messages)

    def _append(self, session: Session, records: list[Message]) -> None:
        if self.instructions and not self.system_saved:
            records = [Message(SYSTEM, content=self.instructions), *records]
        session.append(records)
        self.system_saved = True


def notice(text: str) -> Message:
    """A line the model should see ahead of the next message, recorded as a user-role notice."""
    return Message(USER, content=text, notice=True)
