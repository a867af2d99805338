"""Capped exponential backoff for retry loops."""

from __future__ import annotations

# 2.0 ** 1024 does not fit a float: past this many doublings every delay is at its cap anyway.
_MAX_DOUBLINGS = 64


def capped(base_s: float, doublings: int, cap_s: float) -> float:
    """`base_s` doubled `doublings` times, at most `cap_s`, for any count: a loop retrying through a
    long outage counts past a thousand failures (2 ** failures then overflowed a float and crashed
    the retrying service: found in the job controller by kube-mode chaos)."""
    return min(base_s * 2.0 ** min(max(doublings, 0), _MAX_DOUBLINGS), cap_s)
