"""`/debug [on|off]`: record the chat's round trips to the model (iota.debug_log), and show them.

    /debug on     record from now on: the session bundle's debug.jsonl (in memory only while the
                  chat is not saved); the status row says `debug`
    /debug off    stop recording (what was written stays)
    /debug        whether it records, where to, and the last round trips, a line each
"""

from __future__ import annotations

from pathlib import Path

from actors.events import Panel
from actors.lane import Lane
from iota.config import settings
from iota.debug_log import summary_line
from iota.errors import IotaError

DEBUG_HELP = "record the round trips to the model — sizes and timings, never content or keys: /debug [on|off]"


async def debug(lane: Lane, argument: str) -> None:
    log = lane.setup.debug
    if argument == "on":
        log.start(lambda: _bundle(lane), _keys(lane))
        where = log.path
        lane.notice(f"Debug on: each round trip is recorded in {where}" if where is not None else
                    "Debug on: this chat is not saved, so round trips are kept in memory only (/debug shows them)")
        lane.show_status()
    elif argument == "off":
        log.stop()
        lane.notice("Debug off")
        lane.show_status()
    elif argument:
        lane.notice(f'/debug takes on or off, not "{argument}"', warning=True)
    else:
        where = log.path
        head = (f"Recording: {'on' if log.on else 'off'}"
                + (f" → {where}" if log.on and where is not None else " (in memory)" if log.on else ""))
        if log.write_error:
            head += f"\n⚠ the last record could not be written: {log.write_error}"
        lines = [summary_line(entry) for entry in log.recent] or ["No round trips recorded yet: /debug on"]
        lane.emit(Panel("Debug", "\n".join([head, *lines])))


def _bundle(lane: Lane) -> Path | None:
    session = lane.conversation.session
    return session.dir if session is not None else None


def _keys(lane: Lane) -> tuple[str, ...]:
    """Every API key the config's providers would use: none of them is ever written."""
    keys = []
    for provider in lane.setup.config.providers.values():
        try:
            keys.append(settings.api_key(provider, lane.setup.cwd))
        except IotaError:
            continue
    return tuple(keys)
