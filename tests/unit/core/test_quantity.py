"""Kubernetes quantities, resource arithmetic with Volcano's tolerance, and Go durations."""

from __future__ import annotations

from fractions import Fraction

import pytest

from vc_core.durations import format_duration, parse_duration
from vc_core.errors import InvalidObject
from vc_core.quantity import format_quantity, is_quantity, parse_quantity
from vc_core.resources import add, exceeding, format_resources, is_empty, less_equal, parse_resources, sub_floor


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("1Gi", Fraction(2**30)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("1e3", Fraction(1000)),
        ("1E-3", Fraction(1, 1000)),
        ("100Mi", Fraction(100 * 2**20)),
        ("1k", Fraction(1000)),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("+3", Fraction(3)),
        (4, Fraction(4)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse_quantity(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "lots", "1.2.3", "5 Gi", "Gi", "1e99999", "x" * 65, True])
def test_bad_quantities_name_the_field(bad: object) -> None:
    with pytest.raises(InvalidObject) as err:
        parse_quantity(bad, field="spec.capability.cpu")  # type: ignore[arg-type]
    assert err.value.field == "spec.capability.cpu" and err.value.rule == "quantity"
    assert not is_quantity(bad)


@pytest.mark.parametrize(
    ("value", "binary", "text"),
    [
        (Fraction(7, 2), False, "3500m"),
        (Fraction(4), False, "4"),
        (Fraction(2**30), True, "1Gi"),
        (Fraction(3 * 2**29), True, "1536Mi"),
        (Fraction(1000), True, "1000"),
        (Fraction(1, 3), False, "333333333n"),
    ],
)
def test_format_quantity_is_canonical(value: Fraction, binary: bool, text: str) -> None:
    assert format_quantity(value, binary=binary) == text


def test_resource_arithmetic_and_tolerance() -> None:
    a = parse_resources({"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"})
    b = parse_resources({"cpu": "500m", "memory": "1Gi"})
    assert format_resources(add(a, b)) == {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"}
    assert format_resources(sub_floor(b, a)) == {"cpu": "0", "memory": "0"}
    assert less_equal(b, a) and not less_equal(a, b)
    assert less_equal({"cpu": Fraction(1) + Fraction(1, 100_000)}, {"cpu": Fraction(1)})  # within Volcano's 0.1 milli
    assert less_equal(a, b, missing_is_infinite=True) is False
    assert less_equal({"nvidia.com/gpu": Fraction(5)}, {}, missing_is_infinite=True)
    assert exceeding(a, b) == ["cpu"]
    assert is_empty({"pods": Fraction(1)}) and not is_empty(b)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0), ("1h0m0s", 3600.0), ("0", 0.0), ("1.5s", 1.5)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "10", "1d", "s", "1m30", "99999h"])
def test_bad_durations_name_the_field(bad: str) -> None:
    with pytest.raises(InvalidObject) as err:
        parse_duration(bad, field="spec.policies[0].timeout")
    assert err.value.field == "spec.policies[0].timeout"


def test_format_duration_like_go() -> None:
    assert [format_duration(s) for s in (0, 90, 3600, 0.5)] == ["0s", "1m30s", "1h0m0s", "0.5s"]
