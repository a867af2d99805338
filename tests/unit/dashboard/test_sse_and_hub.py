"""Server-sent events on the wire, and the hub that wakes the streams a change concerns."""

from __future__ import annotations

import pytest

from vc_dashboard.hub import Hub, TooManyStreams, Wake, job_topic
from vc_dashboard.sse import encode_event


def test_an_event_has_one_data_line_per_line() -> None:
    assert encode_event("update", "<p>a</p>\n<p>b</p>") == b"event: update\ndata: <p>a</p>\ndata: <p>b</p>\n\n"
    assert encode_event("update", "a\r\nb\rc") == b"event: update\ndata: a\ndata: b\ndata: c\n\n"
    assert encode_event("update", "") == b"event: update\ndata: \n\n"


def test_only_cr_and_lf_break_lines() -> None:
    # U+2028 is no line break for EventSource: splitting there would alter the message.
    assert encode_event("update", "a\u2028b") == "event: update\ndata: a\u2028b\n\n".encode()
    with pytest.raises(ValueError, match="one line"):
        encode_event("up\ndate", "x")


async def test_a_change_wakes_only_the_streams_it_concerns() -> None:
    hub = Hub()
    with hub.subscribe({"Queue"}) as queues, hub.subscribe({job_topic("default", "tf")}) as job:
        hub.publish({"Pod", job_topic("default", "tf")})
        assert await job.wait(0.01) is Wake.CHANGED
        assert await queues.wait(0.01) is Wake.IDLE
        hub.publish({"Queue"})
        hub.publish({"Queue"})  # two changes before the stream wakes: one update
        assert await queues.wait(0.01) is Wake.CHANGED
        assert await queues.wait(0.01) is Wake.IDLE
        hub.close()
        assert await queues.wait(10) is Wake.CLOSED
        assert await job.pause(10) is True
    assert hub.open_streams == 0


async def test_streams_are_bounded() -> None:
    hub = Hub(max_streams=1)
    with hub.subscribe({"Queue"}):
        with pytest.raises(TooManyStreams), hub.subscribe({"Queue"}):
            pass
    with hub.subscribe({"Queue"}) as again:
        assert not again.closed
