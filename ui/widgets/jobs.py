"""`/jobs`: the background jobs, above the composer, live.

    Background jobs   [Jobs]  Kill
    ❯ b3  1m 12s  cargo test  │ test result: ok. 42 passed
      b4  3s      npm run dev  │ ready on :3000
    Enter: the job's page · Tab: Kill · Esc: close

Enter on a row opens the job's page — the command in full, when it started and for how long it
has run (or, once it has ended, how: `finished: exit 0 after 1m 12s`), its pid, its output file
and the file's last lines; Esc goes back to the list, Esc on the list closes it. Tab switches to
Kill, where Space checks a job and Enter kills the checked ones (the one under the cursor when
none is checked). The answer — the ids to kill, or None — goes to `on_answer` once.

`update` takes the table as read again (actors.commands.jobs, once a second): the cursor stays on
the job it was on, a job that ended leaves the list, one that started joins it. Every text that
comes from a command (its line, its output) is drawn with its control characters escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import urwid

from actors.events import JobsUpdate
from iota.tools.job_view import JobPage
from ui.widgets.controls import escape_controls

JOBS, KILL = "Jobs", "Kill"
HINTS = {JOBS: "Enter: the job's page · Tab: Kill · Esc: close",
         KILL: "Space: check · Enter: kill the checked jobs · Tab: Jobs · Esc: close"}
PAGE_HINT = "Esc: back to the list"
# What a page shows besides the output's lines: title, command, clock, pid, output file, blank, hint.
PAGE_FRAME_ROWS = 7


class JobsBrowser(urwid.WidgetWrap):
    def __init__(self, jobs: Sequence[JobPage], on_answer: Callable[[tuple[str, ...] | None], None]):
        self._jobs = list(jobs)
        self._ended: dict[str, str] = {}
        self._on_answer: Callable[[tuple[str, ...] | None], None] | None = on_answer
        self._tab = JOBS
        self._selected = 0
        self._checked: set[str] = set()
        self._page: JobPage | None = None
        self._limit: int | None = None
        self._text = urwid.Text("", wrap="ellipsis")
        super().__init__(self._text)
        self._redraw()

    def selectable(self) -> bool:
        return True

    @property
    def page(self) -> JobPage | None:
        return self._page

    @property
    def tab(self) -> str:
        return self._tab

    def limit_rows(self, rows: int | None) -> None:
        if rows != self._limit:
            self._limit = rows
            self._redraw()

    def update(self, update: JobsUpdate) -> None:
        chosen = self._jobs[self._selected].id if self._jobs else None
        self._jobs = list(update.jobs)
        self._ended.update(update.ended)
        ids = [job.id for job in self._jobs]
        self._selected = ids.index(chosen) if chosen in ids else min(self._selected, max(0, len(ids) - 1))
        self._checked &= set(ids)
        if self._page is not None:
            self._page = next((job for job in self._jobs if job.id == self._page.id), self._page)
        self._redraw()

    def close(self) -> None:
        self._answer(None)

    def keypress(self, size: tuple[int], key: str) -> str | None:
        if self._page is not None:
            if key == "esc":
                self._page = None
                self._redraw()
            return None
        if key == "esc":
            self._answer(None)
        elif key == "tab":
            self._tab = KILL if self._tab == JOBS else JOBS
            self._redraw()
        elif key in ("up", "down") and self._jobs:
            self._selected = (self._selected + (-1 if key == "up" else 1)) % len(self._jobs)
            self._redraw()
        elif key == " " and self._tab == KILL and self._jobs:
            self._checked ^= {self._jobs[self._selected].id}
            self._redraw()
        elif key == "enter" and self._jobs:
            if self._tab == JOBS:
                self._page = self._jobs[self._selected]
                self._redraw()
            else:
                chosen = [job.id for job in self._jobs if job.id in self._checked] or [self._jobs[self._selected].id]
                self._answer(tuple(chosen))
        else:
            return key
        return None

    def _answer(self, answer: tuple[str, ...] | None) -> None:
        on_answer, self._on_answer = self._on_answer, None
        if on_answer is not None:
            on_answer(answer)

    def _redraw(self) -> None:
        self._text.set_text(self._page_markup(self._page) if self._page is not None else self._list_markup())

    def _list_markup(self) -> list:
        tabs = [("choice_title", "Background jobs   "),
                *((("choice_selected" if tab == self._tab else "dim"), f"{'[' + tab + ']' if tab == self._tab else tab}  ")
                  for tab in (JOBS, KILL))]
        markup: list = tabs
        if not self._jobs:
            markup += ["\n", ("dim", "  No background jobs are running now.")]
        width = max(len(job.elapsed) for job in self._jobs) if self._jobs else 0
        for position, job in enumerate(self._jobs):
            chosen = position == self._selected
            box = ("[x] " if job.id in self._checked else "[ ] ") if self._tab == KILL else ""
            line = f"  │ {job.last_line}" if job.last_line else ""
            row = f"{'❯' if chosen else ' '} {box}{job.id}  {job.elapsed.ljust(width)}  {job.name}{line}"
            markup += ["\n", ("choice_selected" if chosen else "choice", escape_controls(row))]
        return markup + ["\n", ("dim", HINTS[self._tab])]

    def _page_markup(self, job: JobPage) -> list:
        ended = self._ended.get(job.id) if job not in self._jobs else None
        clock = f"finished: {ended}" if ended else f"started {job.started_at} · running {job.elapsed}"
        tail = list(job.tail)
        if self._limit is not None:
            tail = tail[max(0, len(tail) - max(1, self._limit - PAGE_FRAME_ROWS - job.command.count("\n"))):]
        markup: list = [("choice_title", escape_controls(f"{job.id} — {job.name}")), "\n",
                        ("choice", escape_controls(job.command)), "\n",
                        ("status_running" if not ended else "choice", clock), "\n",
                        ("dim", f"pid {job.pid} · output {escape_controls(job.log_path)}")]
        for line in tail or ["(no output yet)"]:
            markup += ["\n", ("choice", f"│ {escape_controls(line)}")]
        return markup + ["\n", ("dim", PAGE_HINT)]
