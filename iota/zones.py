"""Time zones by their IANA names, and wall-clock times in them.

The config's `timezone:` is checked when the config loads, and a bot's schedules run in a zone;
both use these, so they sit below the config and the bots. (Aware datetimes that share a tzinfo
subtract and compare as wall-clock times, wrong across a DST change: compare instants by their
timestamps.)
"""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from typing import TYPE_CHECKING

from iota.errors import ToolError

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo


class ZoneError(ToolError):
    """A time zone name that is not an IANA zone; a tool reports it, the config names its key."""


def wall_time(naive: datetime, zone: tzinfo) -> datetime:
    """`naive` read as a wall-clock time in `zone`. A time the clocks skip (a spring-forward gap)
    becomes the instant that far after the change; a repeated one is its first occurrence."""
    return naive.replace(tzinfo=zone, fold=0).astimezone(timezone.utc).astimezone(zone)


def zone_named(name: object, what: str = "timezone") -> ZoneInfo:
    if not isinstance(name, str) or not name.strip():
        raise ZoneError(f"{what} must be an IANA time zone name such as Europe/Berlin")
    # zoneinfo loads on the first zone named: the config imports this module on every start, and
    # most configs name none (2 ms of a headless turn).
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ZoneError(f'unknown time zone "{name}" (want an IANA name such as Europe/Berlin)') from None


def local_zone() -> tzinfo | None:
    """The machine's time zone (tzlocal reads it, `TZ` first); None when it cannot be told."""
    import tzlocal

    try:
        return tzlocal.get_localzone()
    except Exception:  # a TZ tzlocal cannot name, a broken /etc/localtime: the caller says so
        return None


def zone_name(zone: tzinfo) -> str:
    return getattr(zone, "key", None) or str(zone)
