"""The dashboard's own metrics (served on its probes port with every other service's)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

STREAMS = Gauge("tephra_dashboard_streams", "Live update streams (server-sent events) open")
UPDATES = Counter("tephra_dashboard_updates_total", "Page updates sent over live streams", ["view"])
PAGES = Counter("tephra_dashboard_pages_total", "Pages served, by view and HTTP status", ["view", "code"])
