"""The `ask` toolset: the model asks the person and waits for the answer, inside its turn.

    confirm(question)    a yes or no                               → `yes` | `no`
    choose(questions)    1 to 4 questions, each a single or multi  → one line per question:
                         select of 2 to 6 options, plus "Other…"      `Which database? → PostgreSQL`
                         where the person types an answer             `Which checks? → lint, tests`
                                                                      `Which port? → typed: 8443`

Unlike a reply that ends with a question, the turn does not end: the tool call waits while the
app shows the questions, and the answer comes back as its result. Esc declines, and the model
reads that as an error result (`The user declined to answer.`), as it reads a declined approval.

The tools reach the person through an `Asker`: an async callable the chat gives them, which
shows the questions and returns one `Answer` per question, or None when the person declined.
This module knows nothing of how they are shown (the lane sends them to the face as an event);
it decodes the arguments, which the model may get wrong in every way JSON allows — each mistake
is a one-line error result the model can act on — and writes the answers down.

Headless runs (`-m`) have nobody to ask, so the chat leaves this toolset out of them entirely
rather than offering tools that can only fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from iota.tools.base import Tool, ToolResult
from iota.errors import ToolError

MAX_QUESTIONS = 4
MIN_OPTIONS, MAX_OPTIONS = 2, 6
DECLINED_TO_ANSWER = "The user declined to answer."
YES, NO = "Yes", "No"


@dataclass(frozen=True)
class Question:
    text: str
    options: tuple[str, ...]
    multi: bool = False    # the person may pick several options
    other: bool = True     # offer "Other…", where the person types an answer of their own


@dataclass(frozen=True)
class Answer:
    chosen: tuple[str, ...] = ()   # the options picked, in the order they are listed
    typed: str = ""                # what was typed under "Other…"


# Shows the questions and waits: one answer per question, or None when the person declined.
Asker = Callable[[tuple[Question, ...]], Awaitable[tuple[Answer, ...] | None]]


CONFIRM_DESCRIPTION = (
    "Ask the user a yes/no question and wait for the answer, without ending your turn. Use it before "
    "something the user may not want (deleting, overwriting, a costly or irreversible step) or when a "
    "plain yes or no settles how to go on. The result is \"yes\" or \"no\"; if the user declines to "
    "answer, go on without assuming either."
)

CONFIRM_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "One short question the user can answer yes or no."},
    },
    "required": ["question"],
    "additionalProperties": False,
}

CHOOSE_DESCRIPTION = (
    "Ask the user 1 to 4 multiple-choice questions and wait for the answers, without ending your turn. "
    "Use it when a decision is theirs to make (a library, a name, which of several fixes, what to include) "
    "and you can offer the likely answers. Each question lists 2 to 6 short options; set multi to true "
    "when several may be picked. The user can always pick \"Other…\" and type an answer instead, so do "
    "not add an \"Other\" option yourself. The result has one line per question, in order: "
    "`<question> → <option>[, <option>…]`, with a typed answer written as `typed: <text>`. If the user "
    "declines to answer, do not ask the same again: go on or ask in your reply."
)

CHOOSE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_QUESTIONS,
            "description": "The questions, asked one after another.",
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question, one sentence."},
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": MIN_OPTIONS,
                        "maxItems": MAX_OPTIONS,
                        "description": "2 to 6 distinct short answers, a few words each.",
                    },
                    "multi": {
                        "type": "boolean",
                        "default": False,
                        "description": "true: the user may pick several options; false (the default): one.",
                    },
                },
                "required": ["question", "options"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["questions"],
    "additionalProperties": False,
}


class ConfirmTool(Tool):
    name = "confirm"
    read_only = True  # it asks the person, which planning is for
    description = CONFIRM_DESCRIPTION
    parameters = CONFIRM_PARAMETERS

    def __init__(self, asker: Asker):
        self._asker = asker

    def target(self, args: dict[str, Any]) -> str:
        return _one_line(args.get("question"))

    async def run(self, args: dict[str, Any]) -> ToolResult:
        text = _one_line(args.get("question"))
        if not text:
            raise ToolError("missing required argument: question (the yes/no question to ask)")
        answers = await self._asker((Question(text, (YES, NO), other=False),))
        if answers is None:
            return ToolResult(DECLINED_TO_ANSWER, is_error=True)
        return ToolResult("yes" if answers[0].chosen == (YES,) else "no")


class ChooseTool(Tool):
    name = "choose"
    read_only = True
    description = CHOOSE_DESCRIPTION
    parameters = CHOOSE_PARAMETERS

    def __init__(self, asker: Asker):
        self._asker = asker

    def target(self, args: dict[str, Any]) -> str:
        questions = args.get("questions")
        if not isinstance(questions, list) or not questions or not isinstance(questions[0], dict):
            return ""
        first = _one_line(questions[0].get("question"))
        return first if len(questions) == 1 else f"{first} (+{len(questions) - 1} more)"

    async def run(self, args: dict[str, Any]) -> ToolResult:
        questions = decode_questions(args.get("questions"))
        answers = await self._asker(questions)
        if answers is None:
            return ToolResult(DECLINED_TO_ANSWER, is_error=True)
        return ToolResult(format_answers(questions, answers))


def ask_tools(asker: Asker) -> list[Tool]:
    return [ConfirmTool(asker), ChooseTool(asker)]


def decode_questions(raw: Any) -> tuple[Question, ...]:
    """`choose`'s questions argument as questions, or the ToolError that says what is wrong."""
    if raw is None:
        raise ToolError("missing required argument: questions (a list of 1 to 4 questions)")
    if not isinstance(raw, list):
        raise ToolError("questions must be a list of 1 to 4 question objects")
    if not raw:
        raise ToolError("no questions: give 1 to 4")
    if len(raw) > MAX_QUESTIONS:
        raise ToolError(f"too many questions: {len(raw)} given, at most {MAX_QUESTIONS}")
    return tuple(_decode_question(number, entry) for number, entry in enumerate(raw, start=1))


def _decode_question(number: int, entry: Any) -> Question:
    where = f"question {number}"
    if not isinstance(entry, dict):
        raise ToolError(f"{where} must be an object with question, options and multi")
    text = _one_line(entry.get("question"))
    if not text:
        raise ToolError(f"{where} has no question text")
    options = entry.get("options")
    if not isinstance(options, list) or not all(isinstance(option, str) for option in options):
        raise ToolError(f"{where}: options must be a list of strings")
    if not MIN_OPTIONS <= len(options) <= MAX_OPTIONS:
        raise ToolError(f"{where} has {len(options)} option{'' if len(options) == 1 else 's'}: "
                        f"give {MIN_OPTIONS} to {MAX_OPTIONS}")
    cleaned = tuple(_one_line(option) for option in options)
    if not all(cleaned):
        raise ToolError(f"{where} has an empty option")
    repeated = next((option for position, option in enumerate(cleaned) if option in cleaned[:position]), None)
    if repeated is not None:
        raise ToolError(f'{where} lists the option "{repeated}" twice')
    multi = entry.get("multi", False)
    if not isinstance(multi, bool):
        raise ToolError(f"{where}: multi must be true or false")
    return Question(text, cleaned, multi=multi)


def format_answers(questions: tuple[Question, ...], answers: tuple[Answer, ...]) -> str:
    """One line per question: `<question> → <options, comma-separated>[; typed: <text>]`."""
    lines = []
    for question, answer in zip(questions, answers, strict=True):
        parts = [", ".join(answer.chosen)] if answer.chosen else []
        if answer.typed:
            parts.append(f"typed: {answer.typed}")
        lines.append(f"{question.text} → {'; '.join(parts) or '(nothing chosen)'}")
    return "\n".join(lines)


def _one_line(value: Any) -> str:
    """A string argument with its whitespace (newlines included) folded: each shows as one row.
    Anything that is not a string counts as missing."""
    return " ".join(value.split()) if isinstance(value, str) else ""
