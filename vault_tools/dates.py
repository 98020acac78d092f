"""Every date and time: parsing what notes and callers give, the machine's zone, instants.

Notes hold dates in Obsidian's Property formats (`2026-07-17`, `2026-07-17T08:30:00`)
in the vault's time zone; a value with an explicit offset is accepted on read.
The ledger stores UTC. Rendering values back into a note is `note_edits.render_field`'s job.
"""
from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import UsageError

Now = Callable[[], dt.datetime]  # an injectable "what time is it", aware, in any zone

DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
EARLIEST_YEAR, LATEST_YEAR = 1900, 9000  # far dates overflow date arithmetic; none is meant


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def utc_stamp(moment: dt.datetime) -> str:
    """How the ledger writes a moment: UTC, to the second, with a Z."""
    global _last_stamp
    if moment.utcoffset() is None:  # naive: local time, as `astimezone` takes it
        return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    second = (moment - _EPOCH) // _SECOND  # what the stamp keeps of it, in whole seconds (no float rounding)
    last = _last_stamp  # read once: another thread may stamp another second meanwhile
    if second != last[0]:  # a reconcile stamps thousands of events in the same second
        last = _last_stamp = (second, moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return last[1]


_EPOCH, _SECOND = dt.datetime(1970, 1, 1, tzinfo=dt.UTC), dt.timedelta(seconds=1)
_last_stamp: tuple[int, str] = (0, _EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"))


def parse_datetime(value: Any) -> dt.datetime | dt.date:
    """A property value meant as a date and time; a bare date stays a date. Raises ValueError."""
    if isinstance(value, dt.datetime | dt.date):
        return value
    text = str(value).strip()
    if DATE_ONLY.fullmatch(text):
        return dt.date.fromisoformat(text)
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def parse_date(value: Any) -> dt.date:
    """A property value meant as a date; a date and time gives its date. Raises ValueError."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value).strip())


def parse_option(name: str, value: str | None) -> dt.datetime | dt.date | None:
    """A date or date and time typed on the command line; refused with a usage error naming `name`."""
    if value is None:
        return None
    try:
        found = parse_datetime(value)
        if not EARLIEST_YEAR <= found.year <= LATEST_YEAR:
            raise ValueError
        return found
    except ValueError:
        raise UsageError(f"{name} must be a date (2026-07-17) or date and time (2026-07-17T08:30:00): {value!r}") from None


def parse_day_option(name: str, value: str | None) -> dt.date | None:
    found = parse_option(name, value)
    if isinstance(found, dt.datetime):
        return found.date()
    return found


def instant(value: dt.datetime | dt.date, tz: dt.tzinfo) -> dt.datetime:
    """A point in time in UTC; a value without offset is in the vault's time zone."""
    # the pages and the checks ask again and again for the same notes' times: worked out once each (with
    # `fold`, which equality ignores: it says which of a clock's two readings an hour set back repeats)
    return _instant(value, getattr(value, "fold", 0), tz)


@functools.lru_cache(maxsize=65536)
def _instant(value: dt.datetime | dt.date, fold: int, tz: dt.tzinfo) -> dt.datetime:
    if not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time(0, 0))
    if value.tzinfo is None:
        value = value.replace(tzinfo=tz)
    return value.astimezone(dt.UTC)


def local_date(value: dt.datetime | dt.date, tz: dt.tzinfo) -> dt.date:
    if isinstance(value, dt.datetime):
        return instant(value, tz).astimezone(tz).date()
    return value


def local_now(now: Now, tz: dt.tzinfo) -> dt.datetime:
    """The wall-clock time in the vault's zone, to the second, as notes hold it (no offset)."""
    return now().astimezone(tz).replace(tzinfo=None, microsecond=0)


def to_vault_time(value: dt.datetime | dt.date, tz: dt.tzinfo) -> dt.datetime | dt.date:
    """A value given with an offset, converted to the vault's wall-clock time; others as given."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(tz).replace(tzinfo=None)
    return value


def zone(name: str) -> ZoneInfo:
    """An IANA zone by name; ValueError when there is none such."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown timezone {name!r} (use an IANA name like Europe/Paris)") from None


def machine_timezone() -> str:
    """This machine's IANA time zone name (macOS, Windows and Linux alike), or UTC when it cannot be told."""
    try:
        from tzlocal import get_localzone_name  # only `init` asks the machine's zone

        name = get_localzone_name()
    except Exception:  # tzlocal raises its own errors for unreadable or contradictory settings
        name = None
    if name:
        try:
            zone(name)
            return name
        except ValueError:
            pass
    return "UTC"
