"""CronJob time zones: IANA names only, checked as Volcano's admission checks them, loaded with zoneinfo."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vc_validation.verdict import Violation
from vc_validation.workload_limits import MAX_TIME_ZONE_LENGTH

_PART: Final = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


class UnknownTimeZone(ValueError):
    """Not a time zone of the IANA database on this machine."""


def load_zone(name: str) -> ZoneInfo:
    """The zone, or UnknownTimeZone (names are checked first: a path such as `../x` is never opened)."""
    if time_zone_errors(name):
        raise UnknownTimeZone(name[:MAX_TIME_ZONE_LENGTH])
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownTimeZone(name[:MAX_TIME_ZONE_LENGTH]) from None


def time_zone_errors(name: str) -> list[str]:
    if not name:
        return ["timeZone must be nil or non-empty string, got empty string"]
    if len(name) > MAX_TIME_ZONE_LENGTH:
        return [f"must be no more than {MAX_TIME_ZONE_LENGTH} characters"]
    if name.lower() == "local":
        return ["timeZone can't be Local, and must be defined in https://www.iana.org/time-zones"]
    for part in name.split("/"):
        if part in (".", "..") or part.startswith("-") or not _PART.match(part):
            return ["unknown timeZone"]
    return []


def validate_time_zone(name: str | None, *, path: str) -> Iterator[Violation]:
    if name is None:
        return
    errors = time_zone_errors(name)
    if errors:
        yield Violation(path, "time-zone", errors[0])
        return
    try:
        load_zone(name)
    except UnknownTimeZone:
        yield Violation(path, "time-zone", f"invalid timeZone {name!r}: not in the IANA time zone database")
