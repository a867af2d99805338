"""A page's query string, checked: every field bounded, every error naming the field and the rule."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from vc_dashboard.logic.jobs import JobFilter
from vc_dashboard.logic.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_NUMBER, MAX_PAGE_SIZE

MAX_NAME_LENGTH: Final = 253
MAX_QUERY_FIELDS: Final = 16
_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_PHASE: Final = re.compile(r"^[A-Za-z]{1,32}$")
KNOWN: Final = frozenset({"page", "size", "namespace", "queue", "phase"})


class BadQuery(ValueError):
    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"query field {field!r}: {rule}")
        self.field = field
        self.rule = rule


@dataclass(frozen=True, slots=True)
class ListQuery:
    page: int = 1
    size: int = DEFAULT_PAGE_SIZE
    jobs: JobFilter = field(default_factory=JobFilter)

    def link(self, **changes: int | str) -> dict[str, str]:
        """Query parameters for a link to this list with some fields changed (empty ones left out)."""
        fields = {
            "namespace": self.jobs.namespace,
            "queue": self.jobs.queue,
            "phase": self.jobs.phase,
            "page": str(self.page),
            "size": str(self.size) if self.size != DEFAULT_PAGE_SIZE else "",
        }
        fields.update({k: str(v) for k, v in changes.items()})
        return {k: v for k, v in fields.items() if v and not (k == "page" and v == "1")}


def parse_list_query(query: Mapping[str, str]) -> ListQuery:
    if len(query) > MAX_QUERY_FIELDS:
        raise BadQuery("(query)", f"at most {MAX_QUERY_FIELDS} fields")
    unknown = sorted(set(query) - KNOWN)
    if unknown:
        raise BadQuery(unknown[0], f"unknown field (known: {', '.join(sorted(KNOWN))})")
    return ListQuery(
        page=_number(query, "page", 1, 1, MAX_PAGE_NUMBER),
        size=_number(query, "size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE),
        jobs=JobFilter(
            namespace=_name(query, "namespace"),
            queue=_name(query, "queue"),
            phase=_phase(query),
        ),
    )


def check_name(field: str, value: str) -> str:
    """A Kubernetes object name (DNS subdomain, at most 253 characters)."""
    if len(value) > MAX_NAME_LENGTH:
        raise BadQuery(field, f"at most {MAX_NAME_LENGTH} characters")
    if not _NAME.match(value):
        raise BadQuery(field, "must be a lowercase DNS name (a-z, 0-9, '-', '.')")
    return value


def _number(query: Mapping[str, str], field: str, default: int, low: int, high: int) -> int:
    text = query.get(field, "")
    if not text:
        return default
    if len(text) > 7 or not text.isdigit():
        raise BadQuery(field, f"must be a whole number from {low} to {high}")
    value = int(text)
    if not low <= value <= high:
        raise BadQuery(field, f"must be a whole number from {low} to {high}")
    return value


def _name(query: Mapping[str, str], field: str) -> str:
    value = query.get(field, "")
    return check_name(field, value) if value else ""


def _phase(query: Mapping[str, str]) -> str:
    value = query.get("phase", "")
    if value and not _PHASE.match(value):
        raise BadQuery("phase", "must be a phase name such as Running (letters only, at most 32)")
    return value
