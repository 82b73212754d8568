"""The status row under the composer: the model, the context, what runs and for how long.

    claude-sonnet-4-5 · ≈12.3k / 200k (6%) · Waiting for the model · 3s · 2 queued

The figure reads `used / window (pct%)`, with a leading `≈` when it is a local estimate rather
than what the provider reported. The timer is computed when the row is drawn, from the time the
running thing started, so the app only has to redraw once a second while something runs.
"""

from __future__ import annotations

from collections.abc import Callable

import urwid

from actors.events import Status

SEPARATOR = " · "


def format_tokens(count: int) -> str:
    """842 → `842`, 1234 → `1.2k`, 128000 → `128k`, 1500000 → `1.5m`."""
    for unit, scale in (("m", 10**6), ("k", 10**3)):
        if count >= scale:
            return f"{count / scale:.1f}".removesuffix(".0") + unit
    return str(count)


def format_elapsed(seconds: float) -> str:
    """`<1s`, `42s`, `1m 12s`, `2h 5m`: how timers read."""
    whole = int(seconds)
    if whole < 1:
        return "<1s"
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60}s"
    return f"{whole // 3600}h {whole % 3600 // 60}m"


def context_figure(status: Status) -> str:
    percent = status.context_used * 100 // status.context_window if status.context_window else 0
    estimate = "≈" if status.estimated else ""
    return (f"{estimate}{format_tokens(status.context_used)} / {format_tokens(status.context_window)}"
            f" ({percent}%)")


def status_segments(status: Status, now: float) -> list[tuple[str, str]]:
    """The row's segments as (attribute, text), in order; `now` is on the clock `running_since` is."""
    segments = [("status", status.model), ("status", context_figure(status))]
    if status.running:
        segments.append(("status_running", status.running))
        if status.running_since is not None:
            segments.append(("status_running", format_elapsed(now - status.running_since)))
    if status.queued:
        segments.append(("status", f"{status.queued} queued"))
    return segments


def status_text(status: Status, now: float) -> str:
    return SEPARATOR.join(text for _, text in status_segments(status, now))


class StatusRow(urwid.WidgetWrap):
    """One line, clipped to the width; blank until the first `Status` arrives."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._status: Status | None = None
        self._text = urwid.Text("", wrap=urwid.WrapMode.ELLIPSIS)
        super().__init__(self._text)

    @property
    def timer_started(self) -> float | None:
        """When the timer the row shows started, or None when it shows none (nothing to tick)."""
        if self._status is None or not self._status.running:
            return None
        return self._status.running_since

    def show(self, status: Status) -> None:
        self._status = status
        self.refresh()

    def refresh(self) -> None:
        """Read the clock again: the timer moves."""
        if self._status is None:
            return
        markup: list[tuple[str, str]] = []
        for attribute, text in status_segments(self._status, self._clock()):
            if markup:
                markup.append(("dim", SEPARATOR))
            markup.append((attribute, text))
        self._text.set_text(markup)
