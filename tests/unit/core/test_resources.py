"""Resource arithmetic: `add` sums in integer thousandths where it can, and must equal Fraction sums."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from vc_core.resources import add


def fraction_sums(*parts: dict[str, Fraction]) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for part in parts:
        for name, value in part.items():
            out[name] = out.get(name, Fraction(0)) + value
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]),
            st.fractions(min_value=0, max_value=10**12, max_denominator=3000),
            max_size=3,
        ),
        max_size=12,
    )
)
def test_add_is_exactly_the_fraction_sum_in_the_same_order(parts: list[dict[str, Fraction]]) -> None:
    total, expected = add(*parts), fraction_sums(*parts)
    assert total == expected
    assert list(total) == list(expected)  # names in the order first met, as before
    assert all(type(value) is Fraction for value in total.values())


def test_add_of_nothing_is_empty_and_a_third_stays_exact() -> None:
    assert add() == {}
    assert add({"cpu": Fraction(1, 3)}, {"cpu": Fraction(1, 2)}, {"cpu": Fraction(1)}) == {"cpu": Fraction(11, 6)}
