"""Go duration text (metav1.Duration, e.g. `10m`, `1m30s`, `500ms`) as a timedelta."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Final

_UNITS: Final = {
    "ns": timedelta(microseconds=0.001),
    "us": timedelta(microseconds=1),
    "µs": timedelta(microseconds=1),
    "μs": timedelta(microseconds=1),
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
}
_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class InvalidDuration(ValueError):
    """The text is not a Go duration."""


def parse_go_duration(text: str) -> timedelta:
    """Parse like Go's time.ParseDuration; negative durations are refused (a timeout cannot be)."""
    body = text.strip()
    if body.startswith("+"):
        body = body[1:]
    if body == "0":
        return timedelta(0)
    if not body or body.startswith("-"):
        raise InvalidDuration(f"invalid duration {text!r}")
    total = timedelta(0)
    position = 0
    for match in _PART.finditer(body):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(body):
        raise InvalidDuration(f"invalid duration {text!r} (expected e.g. '30s', '10m', '1h30m')")
    return total


def format_go_duration(value: timedelta) -> str:
    """Go's Duration.String() for whole-millisecond values: `1h2m3s`, `1m30s`, `0s`, `1.5s`, `500ms`."""
    millis = round(value.total_seconds() * 1000)
    if millis == 0:
        return "0s"
    sign = "-" if millis < 0 else ""
    millis = abs(millis)
    if millis < 1000:
        return f"{sign}{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "") + f"{seconds}s"
    return sign + text
