"""Counters under Volcano's names that have no `_total` suffix (`volcano_total_preemption_attempts`,
`volcano_job_retry_counts`, `volcano_job_completed_phase_count`, ...).

Go's Prometheus client exposes a counter under the name it is given; prometheus_client always appends
`_total` to a Counter's samples. A `BareCounter` is a collector whose samples keep the bare name, typed
counter, so dashboards query Volcano's names and rate() reads a counter. `exposition` writes the
registry as prometheus_client does, with each bare counter's HELP and TYPE lines under its own name
(prometheus_client would name them `<name>_total`, which no sample carries).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

_BARE_NAMES: set[str] = set()


class _Child:
    def __init__(self, counter: BareCounter, key: tuple[str, ...]) -> None:
        self._counter = counter
        self._key = key

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        self._counter._add(self._key, amount)


class BareCounter(Collector):
    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Iterable[str] = (),
        *,
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._values: dict[tuple[str, ...], float] = {} if self.labelnames else {(): 0.0}
        self._lock = threading.Lock()
        _BARE_NAMES.add(name)
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> _Child:
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values}")
        key = tuple(str(v) for v in values)
        with self._lock:
            self._values.setdefault(key, 0.0)
        return _Child(self, key)

    def inc(self, amount: float = 1.0) -> None:
        if self.labelnames:
            raise ValueError(f"{self.name} has labels {self.labelnames}: use .labels(...)")
        _Child(self, ()).inc(amount)

    def remove(self, *values: str) -> None:
        with self._lock:
            del self._values[tuple(str(v) for v in values)]

    def _add(self, key: tuple[str, ...], amount: float) -> None:
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def collect(self) -> Iterator[Metric]:
        metric = Metric(self.name, self.documentation, "counter")
        with self._lock:
            values = list(self._values.items())
        for key, value in values:
            metric.add_sample(self.name, dict(zip(self.labelnames, key, strict=True)), value)
        yield metric


def bare_counter_names() -> frozenset[str]:
    """The names of every BareCounter made in this process (their series carry the name as it is)."""
    return frozenset(_BARE_NAMES)


def exposition(registry: CollectorRegistry = REGISTRY) -> bytes:
    """The Prometheus text format of `registry`, bare counters under their own names."""
    text = generate_latest(registry)
    for name in _BARE_NAMES:
        wrong = name.encode() + b"_total "
        if b"# TYPE " + wrong in text:
            text = text.replace(b"# HELP " + wrong, b"# HELP " + name.encode() + b" ", 1)
            text = text.replace(b"# TYPE " + wrong, b"# TYPE " + name.encode() + b" ", 1)
    return text
