"""Stored objects a service will not act on because admission would refuse them (they reached the store
some other way): one warning and one count per object and reason, in one metric for the whole project,
`tephra_refused_objects_total{kind,rule}` (`rule` is the first violated admission rule)."""

from __future__ import annotations

from typing import Final

import structlog
from prometheus_client import Counter

log = structlog.get_logger(__name__)

REFUSED: Final = Counter(
    "tephra_refused_objects_total",
    "Stored objects a service did not act on (or failed, on a node) because admission would refuse them",
    ["kind", "rule"],
)


def report_refused(*, kind: str, key: str, rule: str, message: str, **where: object) -> None:
    """Call once per object and reason (not per reconcile), so the count is of objects."""
    REFUSED.labels(kind, rule).inc()
    log.warning("object.refused", kind=kind, key=key, rule=rule, message=message, **where)
