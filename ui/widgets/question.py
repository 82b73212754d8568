"""The model's questions (`confirm`, `choose`), shown above the composer like the approval prompt.

    (1/2) Which database should the service use?         a single select: Enter or a digit
    ❯ 1. PostgreSQL                                      answers with the row
      2. SQLite
      3. Other…                                          Enter opens a line to type in

    (2/2) Which checks should run?  Space selects · Enter confirms
      1. [x] lint                                        a multi select: Space (or a digit)
    ❯ 2. [ ] tests                                       ticks a row, Enter confirms the
      3. [ ] Other…                                      ticked rows; on "Other…" either key
                                                         opens its line

    ❯ 3. Other: rate limits▏                             the line: Enter answers with what was
                                                         typed (with the ticked rows), Esc or
                                                         Up/Down go back to the rows

A `QuestionForm` asks an `Ask`'s questions one after another, a `QuestionChooser` each, and
answers `on_answer` once: with an `iota.tools.ask.Answer` per question, or None when the person
pressed Esc on any of them. Enter on a multi select with nothing ticked takes the selected row,
so a single pick reads the same in both kinds. A question without "Other…" (`confirm`'s yes or
no) is the plain chooser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import urwid

from iota.tools.ask import Answer, Question
from ui.widgets.chooser import Chooser

OTHER = "Other…"
MULTI_HINT = "  Space selects · Enter confirms"


class QuestionChooser(Chooser):
    """One question: the chooser's rows and keys, with ticks for a multi select and the "Other…"
    line (the chooser's line to type in). Answers an `Answer`, or None on Esc."""

    def __init__(self, question: Question, on_answer: Callable[[Answer | None], None], *, title: str):
        self._question = question
        self._ticked: set[int] = set()
        options = (*question.options, *((OTHER,) if question.other else ()))
        super().__init__(title, options, on_answer, line=len(question.options) if question.other else None)

    def keypress(self, size: tuple[int], key: str) -> str | None:
        if self._editing:
            return super().keypress(size, key)
        if key == " " and self._question.multi:
            self._pick(self._selected)
        elif key == "enter" and self._question.multi and self._selected != self._line_row:
            self._answer(Answer(self._ticked_options() or (self._options[self._selected],)))
        else:  # Up, Down, Esc, digits; Enter on a single select or on "Other…"
            return super().keypress(size, key)
        return None

    def _pick(self, position: int) -> None:
        self._selected = position  # a digit moves the cursor too, so the row it opened or ticked shows it
        if position == self._line_row:
            super()._pick(position)
        elif self._question.multi:
            self._ticked ^= {position}
            self._redraw()
        else:
            self._answer(Answer((self._options[position],)))

    def _answer_line(self, typed: str) -> None:
        self._answer(Answer(self._ticked_options(), typed))

    def _ticked_options(self) -> tuple[str, ...]:
        return tuple(self._options[position] for position in sorted(self._ticked))

    def _label(self, position: int) -> str:
        if not self._question.multi:
            return self._options[position]
        return f"[{'x' if position in self._ticked else ' '}] {self._options[position]}"

    def _markup(self, rows: int) -> list[str | tuple[str, str]]:
        title, *rows_markup = super()._markup(rows)
        return [title, *([("dim", MULTI_HINT)] if self._question.multi else []), *rows_markup]


class QuestionForm(urwid.WidgetWrap):
    """The questions of one `Ask`, one at a time; `(n/total)` before each title when there are several."""

    def __init__(self, questions: Sequence[Question], on_answer: Callable[[tuple[Answer, ...] | None], None]):
        self._questions = tuple(questions)
        self._answers: list[Answer] = []
        self._on_answer: Callable[[tuple[Answer, ...] | None], None] | None = on_answer
        super().__init__(self._chooser(0))

    def _chooser(self, number: int) -> QuestionChooser:
        question = self._questions[number]
        several = len(self._questions) > 1
        title = f"({number + 1}/{len(self._questions)}) {question.text}" if several else question.text
        return QuestionChooser(question, self._answered, title=title)

    def _answered(self, answer: Answer | None) -> None:
        if answer is None:
            self._finish(None)
            return
        self._answers.append(answer)
        if len(self._answers) < len(self._questions):
            self._w = self._chooser(len(self._answers))
        else:
            self._finish(tuple(self._answers))

    def _finish(self, answers: tuple[Answer, ...] | None) -> None:
        on_answer, self._on_answer = self._on_answer, None
        if on_answer is not None:
            on_answer(answers)
