"""Go duration text (`30s`, `1m30s`, `500ms`, `2h`), as Volcano's metav1.Duration fields and annotations use."""

from __future__ import annotations

import re
from typing import Final

from vc_core.errors import InvalidObject

_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
MAX_DURATION_S: Final = 10 * 365 * 24 * 3600.0


def parse_duration(text: str, *, field: str = "duration") -> float:
    """Seconds; raises InvalidObject naming `field` for anything Go's time.ParseDuration would reject."""
    value = text.strip()
    if value in ("0", ""):
        if value == "":
            raise InvalidObject(field, "duration", "empty duration (expected e.g. '30s', '1m30s', '2h')")
        return 0.0
    sign = -1.0 if value.startswith("-") else 1.0
    body = value.lstrip("+-")
    pos, total = 0, 0.0
    while pos < len(body):
        match = _PART.match(body, pos)
        if match is None:
            raise InvalidObject(field, "duration", f"{text!r} is not a duration (expected e.g. '30s', '1m30s', '2h')")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if total > MAX_DURATION_S:
        raise InvalidObject(field, "duration", f"{text!r} is longer than ten years")
    return sign * total


def format_duration(seconds: float) -> str:
    """Go-style text, e.g. 90 -> '1m30s'."""
    if seconds == 0:
        return "0s"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    frac = seconds - whole
    out = f"{hours}h" if hours else ""
    out += f"{minutes}m" if minutes or hours else ""
    return out + f"{secs + frac:g}s"
