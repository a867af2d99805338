"""Counters of gc's work."""

from __future__ import annotations

from prometheus_client import Counter

DELETED = Counter("tephra_gc_deleted_total", "Objects deleted by gc", ["kind", "reason"])
DEFERRED = Counter("tephra_gc_deferred_total", "Deletions deferred", ["reason"])
