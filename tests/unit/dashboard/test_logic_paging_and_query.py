"""Every list is bounded; a query's every field is checked, and an error names the field and the rule."""

from __future__ import annotations

import pytest

from vc_dashboard.logic.paging import MAX_PAGE_SIZE, paginate
from vc_dashboard.logic.query import BadQuery, ListQuery, parse_list_query


def test_a_page_holds_at_most_its_size_and_says_how_many_there_are() -> None:
    page = paginate(list(range(100_000)), number=3, size=50)
    assert page.items == list(range(100, 150))
    assert (page.first, page.last, page.pages) == (101, 150, 2000)
    assert page.note == "showing 101-150 of 100,000"
    assert page.has_previous and page.has_next


@pytest.mark.parametrize(
    ("number", "size", "expected_number", "expected_len"),
    [
        pytest.param(10**6, 50, 3, 20, id="past-the-end-clamps-to-the-last-page"),
        pytest.param(0, 50, 1, 50, id="page-zero-is-the-first"),
        pytest.param(1, 10**9, 1, 120, id="size-is-capped"),
    ],
)
def test_pages_are_clamped(number: int, size: int, expected_number: int, expected_len: int) -> None:
    page = paginate(list(range(120)), number=number, size=size)
    assert page.number == expected_number and len(page.items) == expected_len
    assert page.size <= MAX_PAGE_SIZE


def test_an_empty_list_is_one_empty_page() -> None:
    page = paginate([], number=5)
    assert (page.number, page.pages, page.items, page.note) == (1, 1, [], "showing 0 of 0")


def test_a_good_query_is_parsed() -> None:
    query = parse_list_query(
        {"page": "2", "size": "20", "namespace": "team-a", "queue": "research", "phase": "Running"}
    )
    assert (query.page, query.size) == (2, 20)
    assert (query.jobs.namespace, query.jobs.queue, query.jobs.phase) == ("team-a", "research", "Running")
    assert query.link(page=3) == {
        "namespace": "team-a",
        "queue": "research",
        "phase": "Running",
        "page": "3",
        "size": "20",
    }
    assert ListQuery().link() == {}


@pytest.mark.parametrize(
    ("query", "field", "rule"),
    [
        pytest.param({"page": "x"}, "page", "whole number", id="page-not-a-number"),
        pytest.param({"page": "0"}, "page", "from 1", id="page-zero"),
        pytest.param({"page": "9" * 50}, "page", "whole number", id="page-huge"),
        pytest.param({"size": "501"}, "size", "to 500", id="size-over-the-cap"),
        pytest.param({"namespace": "A_B"}, "namespace", "DNS name", id="namespace-not-a-name"),
        pytest.param({"queue": "q" * 254}, "queue", "253", id="queue-too-long"),
        pytest.param({"phase": "<script>"}, "phase", "phase name", id="phase-not-a-word"),
        pytest.param({"sort": "x"}, "sort", "unknown field", id="unknown-field"),
        pytest.param({f"f{i}": "1" for i in range(17)}, "(query)", "at most 16", id="too-many-fields"),
    ],
)
def test_a_bad_query_names_the_field_and_the_rule(query: dict[str, str], field: str, rule: str) -> None:
    with pytest.raises(BadQuery) as caught:
        parse_list_query(query)
    assert caught.value.field == field and rule in caught.value.rule
    assert field in str(caught.value)
