"""The scheduler's event and status timestamps: formatted once per second, always the current second."""

from __future__ import annotations

from datetime import UTC, datetime

from vc_scheduler.events import timestamp


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_stamp_is_the_current_second() -> None:
    for _ in range(1000):
        before = _now()
        stamp = timestamp()
        after = _now()
        assert before <= stamp <= after
