"""vc_core.times: the one time format (RFC 3339, UTC, to the second)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from vc_core.times import parse_rfc3339, rfc3339, rfc3339_from_epoch


def test_a_moment_is_written_in_utc_to_the_second() -> None:
    paris = timezone(timedelta(hours=1))
    assert rfc3339(datetime(2026, 1, 2, 4, 4, 5, 987654, tzinfo=paris)) == "2026-01-02T03:04:05Z"
    assert rfc3339_from_epoch(0.9) == "1970-01-01T00:00:00Z"


def test_a_naive_moment_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a time zone"):
        rfc3339(datetime(2026, 1, 2, 3, 4, 5))


@pytest.mark.parametrize("text", ["2026-01-02T03:04:05Z", "2026-01-02T04:04:05+01:00", "2026-01-02T03:04:05.5Z"])
def test_what_kubernetes_accepts_parses_to_a_utc_moment(text: str) -> None:
    moment = parse_rfc3339(text)
    assert moment.tzinfo is UTC
    assert moment.replace(microsecond=0) == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize("text", ["", "yesterday", "2026-01-02", "2026-01-02T03:04:05", "x" * 10_000])
def test_what_is_not_a_time_is_refused_with_the_text_shortened(text: str) -> None:
    with pytest.raises(ValueError, match="is not an RFC 3339 time") as refused:
        parse_rfc3339(text)
    assert len(str(refused.value)) < 200


def test_written_times_read_back_and_sort_as_text_as_in_time() -> None:
    moments = [datetime(2026, 1, 2, 3, 4, s, tzinfo=UTC) for s in (9, 10, 59)]
    written = [rfc3339(m) for m in moments]
    assert [parse_rfc3339(t) for t in written] == moments
    assert sorted(written) == written
