"""Reading a metav1.Time stamp that anyone could have written (writing one: vc_core.times.rfc3339). Pure."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(text: str | None) -> datetime | None:
    """The instant, or None for an absent or unreadable stamp (a status field anyone could write)."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
