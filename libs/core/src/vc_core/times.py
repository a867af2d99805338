"""The one time format Tephra writes: RFC 3339 in UTC to the second, "2026-11-24T06:57:34Z", as Kubernetes
writes a metav1.Time. Stored objects, history events and statuses all use it, so that times from different
services compare as text and as instants alike. Pure: the caller reads the clock and passes the moment."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

RFC3339: Final = "%Y-%m-%dT%H:%M:%SZ"


def rfc3339(moment: datetime) -> str:
    """An aware moment as RFC 3339 in UTC; a naive one is refused (its zone would be a guess)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"a time to write needs a time zone: {moment.isoformat()} has none")
    return moment.astimezone(UTC).strftime(RFC3339)


def rfc3339_from_epoch(epoch: float) -> str:
    """Seconds since the epoch (time.time()) as RFC 3339 in UTC."""
    return datetime.fromtimestamp(epoch, UTC).strftime(RFC3339)


def parse_rfc3339(text: str) -> datetime:
    """An RFC 3339 time as Kubernetes accepts it ("Z" or an offset, fractions of a second allowed), as an
    aware UTC moment. Raises ValueError naming the text when it is not one."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text[:64]!r} is not an RFC 3339 time (e.g. 2026-01-02T03:04:05Z)") from None
    if moment.tzinfo is None or "T" not in text:
        raise ValueError(f"{text[:64]!r} is not an RFC 3339 time: it needs a date, a time and a zone")
    return moment.astimezone(UTC)
