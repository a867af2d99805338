"""A stored delayed action is fired only if it can be: a known action and a readable due time."""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest

from vc_job_controller.delays import decode_delay
from vc_job_controller.logic.view import DelayedAction


def stored(**fields: object) -> bytes:
    good = {"key": "p-0", "action": "RestartJob", "delay": "PT30S", "due_at": "2030-01-01T00:00:00Z"}
    return msgspec.json.encode({**good, **fields})


def test_a_good_delay_decodes() -> None:
    assert decode_delay(stored()) == DelayedAction(
        key="p-0", action="RestartJob", delay=timedelta(seconds=30), due_at="2030-01-01T00:00:00Z"
    )


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\xff", id="not-json"),
        pytest.param(stored(action="Explode"), id="unknown-action"),
        pytest.param(stored(due_at="tomorrow"), id="unreadable-due-time"),
        pytest.param(stored(delay="forever"), id="unreadable-delay"),
    ],
)
def test_a_bad_delay_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_delay(data)
