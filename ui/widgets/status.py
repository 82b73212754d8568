"""The status row under the composer: the model, the context, what runs and for how long.

    claude-sonnet-4-5 · ≈12.3k / 200k (6%) · Waiting for the model · 3s · 2 queued · job b3 cargo test 1m 12s

A permission mode other than `ask` follows the context (`mode: plan`, `mode: auto-edit`).
Background jobs end the row (v0.5.0): one reads `job b3 cargo test 1m 12s`, several `3 jobs 3m 1s`
with the oldest's clock; `debug` follows while /debug records.

The figure reads `used / window (pct%)`, with a leading `≈` when it is a local estimate rather
than what the provider reported. The timer is computed when the row is drawn, from the time the
running thing started, so the app only has to redraw once a second while something runs.

A hint (`Press Ctrl+C again to exit`) takes the row's place until the app clears it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import urwid

from actors.events import Status
from iota.text import context_figure, format_elapsed
from ui.widgets.controls import escape_controls

SEPARATOR = " · "


def context_text(status: Status) -> str:
    return context_figure(status.context_used, status.context_window, status.estimated)


def status_segments(status: Status, now: float) -> list[tuple[str, str]]:
    """The row's segments as (attribute, text), in order; `now` is on the clock `running_since` is."""
    segments = [("status", status.model), ("status", context_text(status))]
    if status.mode != "ask":  # a mode the person chose: on the row for as long as it lasts
        segments.append(("status_running", f"mode: {status.mode}"))
    if status.running and status.retry is not None and status.running_since is not None:
        # A wait before a retry counts down to its next attempt rather than up.
        left = max(0, math.ceil(status.retry.seconds - (now - status.running_since)))
        running = status.running.replace(str(status.retry), str(dataclasses.replace(status.retry, seconds=left)))
        segments.append(("status_running", escape_controls(running)))
    elif status.running:
        segments.append(("status_running", escape_controls(status.running)))  # `shell <the model's command>`
        if status.running_since is not None:
            segments.append(("status_running", format_elapsed(now - status.running_since)))
    if status.queued:
        segments.append(("status", f"{status.queued} queued"))
    if status.jobs:
        segments.append(("status_running", jobs_segment(status.jobs, now)))
    if status.debug:
        segments.append(("status_running", "debug"))
    if status.unsaved:
        segments.append(("status_running", f"not saved: {status.unsaved}"))
    return segments


def jobs_segment(jobs: tuple[tuple[str, str, float], ...], now: float) -> str:
    """`job b3 cargo test 1m 12s` for one background job; `3 jobs 3m 1s` for several, the oldest's clock."""
    job_id, name, started = jobs[0]
    clock = format_elapsed(now - started)
    if len(jobs) == 1:
        return f"job {job_id} {escape_controls(name)} {clock}"
    return f"{len(jobs)} jobs {clock}"


def status_text(status: Status, now: float) -> str:
    return SEPARATOR.join(text for _, text in status_segments(status, now))


class StatusRow(urwid.WidgetWrap):
    """One line, clipped to the width; blank until the first `Status` arrives."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._status: Status | None = None
        self._hint = ""
        self._text = urwid.Text("", wrap=urwid.WrapMode.ELLIPSIS)
        super().__init__(self._text)

    @property
    def timer_started(self) -> float | None:
        """When a timer the row shows started (what runs, or the oldest background job), or None
        when it shows none (nothing to tick)."""
        if self._status is None:
            return None
        starts = [start for _, _, start in self._status.jobs[:1]]
        if self._status.running and self._status.running_since is not None:
            starts.append(self._status.running_since)
        return min(starts, default=None)

    def show(self, status: Status) -> None:
        self._status = status
        self.refresh()

    def show_hint(self, text: str) -> None:
        self._hint = text
        self.refresh()

    def clear_hint(self, text: str) -> None:
        """Take the hint `text` away, unless another has replaced it since."""
        if self._hint == text:
            self._hint = ""
            self.refresh()

    def refresh(self) -> None:
        """Read the clock again: the timer moves."""
        if self._hint:
            self._text.set_text(("hint", self._hint))
            return
        if self._status is None:
            self._text.set_text("")
            return
        markup: list[tuple[str, str]] = []
        for attribute, text in status_segments(self._status, self._clock()):
            if markup:
                markup.append(("dim", SEPARATOR))
            markup.append((attribute, text))
        self._text.set_text(markup)
