"""What the benchmarks measure about JetStream: the writes each stream took during a phase.

With `sync_interval: always` every JetStream write is one fsync (and one pwrite) in nats-server, so
writes per pod, stream by stream, say where nats-server's CPU goes and which writes a change could
save. A stream's last sequence counts every message it ever took (a KV bucket's every revision,
deletes included), so the difference over a phase is the writes of that phase.
"""

from __future__ import annotations

from collections.abc import Mapping

from nats.aio.client import Client


async def stream_sequences(nc: Client) -> dict[str, int]:
    """Every stream's last sequence, by stream name (a KV bucket's stream is `KV_<bucket>`)."""
    infos = await nc.jetstream().streams_info()
    return {info.config.name: info.state.last_seq for info in infos if info.config.name}


def writes_per_pod(before: Mapping[str, int], after: Mapping[str, int], pods: int) -> dict[str, float]:
    """Writes per pod of each stream that took any between `before` and `after`, most first; a stream
    created during the phase counts from zero."""
    per_pod = {name: (last - before.get(name, 0)) / max(1, pods) for name, last in after.items()}
    return dict(sorted(((n, w) for n, w in per_pod.items() if w > 0), key=lambda kv: (-kv[1], kv[0])))


def describe(per_pod: Mapping[str, float]) -> str:
    """ "T writes/pod [stream a, ...]", KV buckets by their bucket name."""
    total = sum(per_pod.values())
    parts = ", ".join(f"{name.removeprefix('KV_')} {n:.2f}" for name, n in per_pod.items())
    return f"{total:.2f} writes/pod [{parts}]"
