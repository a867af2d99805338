"""Work-queue depth on /metrics: every live KeyedDispatcher, by its name, read at scrape time.

`workqueue_depth{name}` is client-go's name for the same figure (keys waiting for a worker), so a
Kubernetes controller dashboard's depth panel reads Tephra's controllers too; the rest are Tephra's
(keys being handled, keys waiting out a retry back-off, and keys handled or failed since start).
Reading `statistics()` at scrape time costs the dispatchers nothing between scrapes.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from vc_bus.dispatch import KeyedDispatcher

_LIVE: weakref.WeakSet[KeyedDispatcher[Any]] = weakref.WeakSet()


def track(dispatcher: KeyedDispatcher[Any]) -> None:
    """Report `dispatcher` until it is garbage."""
    _LIVE.add(dispatcher)


class WorkQueueCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        figures: dict[str, list[int]] = {}
        for dispatcher in list(_LIVE):
            stats = dispatcher.statistics()
            sums = figures.setdefault(dispatcher.name, [0, 0, 0, 0, 0])
            for i, v in enumerate((stats.waiting, stats.active, stats.delayed, stats.handled, stats.failed)):
                sums[i] += v
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue (keys waiting)", labels=["name"])
        active = GaugeMetricFamily("tephra_workqueue_active", "Keys being handled now", labels=["name"])
        delayed = GaugeMetricFamily("tephra_workqueue_delayed", "Keys waiting out a retry back-off", labels=["name"])
        handled = CounterMetricFamily("tephra_workqueue_handled", "Keys handled without error", labels=["name"])
        failed = CounterMetricFamily("tephra_workqueue_failed", "Handler runs that failed", labels=["name"])
        for name, (waiting, running, backing_off, done, errors) in sorted(figures.items()):
            depth.add_metric([name], waiting)
            active.add_metric([name], running)
            delayed.add_metric([name], backing_off)
            handled.add_metric([name], done)
            failed.add_metric([name], errors)
        yield from (depth, active, delayed, handled, failed)

    def describe(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        # Families without samples: the registry learns the names (and refuses a clash) at registration.
        yield GaugeMetricFamily("workqueue_depth", "", labels=["name"])
        yield GaugeMetricFamily("tephra_workqueue_active", "", labels=["name"])
        yield GaugeMetricFamily("tephra_workqueue_delayed", "", labels=["name"])
        yield CounterMetricFamily("tephra_workqueue_handled", "", labels=["name"])
        yield CounterMetricFamily("tephra_workqueue_failed", "", labels=["name"])


REGISTRY.register(WorkQueueCollector())
