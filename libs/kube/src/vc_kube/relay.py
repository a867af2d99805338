"""The relay: one list+watch per kind on the apiserver, mirrored into the shared NATS KV cache.

Every service reads the KV buckets (`vc_proto.subjects.bucket(kind)`, key `vc_bus.objects.storage_key`)
whatever the backend; with `--backend kube` this process is what fills them. Values are the objects
as Kubernetes JSON *with the apiserver's resourceVersion* inside, so a service can hand an object
from its cache straight to a CAS write (vc_kube.mirrored reads them back without overriding it).

Correctness:
- start: list, put what differs from the bucket, then delete bucket keys the list does not have
  (objects deleted while no relay ran);
- then follow the watch (vc_kube.watching: re-list on 410 with a diff, bookmarks, retry forever);
- a kind's loop that fails for any other reason is logged and restarted from a fresh list after a
  backoff; it never stops while the relay runs. A KV write that fails is retried (puts are idempotent).

What: every object of Tephra's own kinds, but of the core kinds Tephra also writes (Secrets,
ConfigMaps, Services, NetworkPolicies) only those it made, by their label (`MIRRORED_ONLY`): never
the cluster's other Secrets. The list and the watch ask the apiserver for those alone; a first pass
after an older relay mirrored more deletes the rest from the bucket (they are not in the list).

Throughput: each watch line is decoded once into its typed object (vc_kube.watching) and encoded once
for KV; the KV writes of a kind are pipelined (vc_kube.kvwriter: up to a window in flight on one
connection, so a key's values still land in order), and the relay reports a kind synced only once all
of its initial writes are acknowledged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import msgspec
import structlog
from nats.aio.client import Client

from vc_bus.kvwatch import watch_bucket
from vc_bus.store import NatsStore
from vc_core.errors import VcError
from vc_core.retry import RetryPolicy
from vc_core.store import WatchOp
from vc_kube.client import KubeApiError, KubeClient
from vc_kube.kvwriter import KvWriter
from vc_kube.mirror_keys import MirrorKeys
from vc_kube.watching import watch_kind
from vc_proto import codec, subjects
from vc_proto.kinds import KINDS, Kind
from vc_proto.vocabulary import MANAGED_BY_LABEL, MANAGED_BY_TEPHRA

log = structlog.get_logger(__name__)

MAX_BACKOFF_S = 10.0
# A kind's mirror is restarted for as long as the relay runs.
KIND_RESTART = RetryPolicy((Exception,), base_s=0.2, cap_s=MAX_BACKOFF_S)
PASSING_FAILURES = 5  # failures in a row of one kind's mirror logged as a warning
# Kinds of which only Tephra's own objects are mirrored (the job plugins label what they create).
MIRRORED_ONLY: dict[str, str] = {
    kind: f"{MANAGED_BY_LABEL}={MANAGED_BY_TEPHRA}" for kind in ("Secret", "ConfigMap", "Service", "NetworkPolicy")
}


class _Meta(msgspec.Struct):
    resourceVersion: str | None = None


class _Head(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


_head = msgspec.json.Decoder(_Head)


# Events are written by the services and read by nobody's reconcile loop: the cluster's Events (every
# kubelet's, every controller's) are not mirrored into NATS.
MIRRORED_KINDS = tuple(k for k in KINDS if k != "Event")


class Relay:
    """Mirror `kinds` (default: every kind Tephra stores but Events) from `kube` into NATS KV on `nc`."""

    def __init__(
        self, kube: KubeClient, nc: Client, kinds: Iterable[str] = MIRRORED_KINDS, *, replicas: int = 1
    ) -> None:
        self._kube = kube
        self._nc = nc
        self._replicas = replicas
        self._js = nc.jetstream()
        self._kinds = [KINDS[k] for k in kinds]
        self.synced: dict[str, asyncio.Event] = {k.kind: asyncio.Event() for k in self._kinds}
        # Count of changes applied, per kind (tests and metrics).
        self.applied: dict[str, int] = dict.fromkeys(self.synced, 0)

    async def run(self, shutdown: asyncio.Event | None = None) -> None:
        await NatsStore(self._nc, replicas=self._replicas).ensure(k.kind for k in self._kinds)
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(self._supervise(row), name=f"relay:{row.kind}") for row in self._kinds]
            if shutdown is not None:
                await shutdown.wait()
                for task in tasks:
                    task.cancel()

    async def wait_synced(self) -> None:
        await asyncio.gather(*(e.wait() for e in self.synced.values()))

    async def _supervise(self, row: Kind) -> None:
        failures = 0
        while True:
            try:
                await self._mirror(row)
            except asyncio.CancelledError:
                raise
            except (VcError, KubeApiError, OSError, msgspec.MsgspecError) as exc:
                failures += 1
                delay = KIND_RESTART.delay_s(failures)
                # A few in a row are the apiserver restarting or still serving its custom resources:
                # a warning. Past that the mirror of this kind is stale for good reason: an error.
                report = log.warning if failures <= PASSING_FAILURES else log.error
                report("relay.kind_failed", kind=row.kind, error=str(exc), restart_in_s=delay, failures=failures)
                await asyncio.sleep(delay)
            else:
                failures = 0

    async def _mirror(self, row: Kind) -> None:
        bucket = subjects.bucket(row.kind)
        stored = await self._stored_versions(bucket)
        keys = MirrorKeys(row.kind)
        for found in stored:
            keys.known(found)
        seen: set[str] = set()
        synced = False
        async with KvWriter(self._js, bucket) as writer:
            async for change in watch_kind(self._kube, row, label_selector=MIRRORED_ONLY.get(row.kind)):
                if change.op is WatchOp.SYNCED:
                    # Objects deleted while nobody watched: the list no longer has them.
                    for gone in stored.keys() - seen:
                        keys.forget(gone)
                        await writer.delete(gone)
                    await writer.flush()
                    stored.clear()
                    synced = True
                    self.synced[row.kind].set()
                    log.info("relay.synced", kind=row.kind, revision=change.revision, objects=len(seen))
                    continue
                if change.op is WatchOp.PUT:
                    key, moved_from = keys.put(change.namespace, change.name, change.obj)
                    if not synced and key is not None:
                        seen.add(key)  # also when undecodable: it exists, its old value stays
                        if stored.get(key) == str(change.revision):
                            continue  # already mirrored by an earlier run
                    if change.obj is None or key is None:
                        continue  # not a valid object (reported by the watch): keep the last good one
                    if moved_from is not None:  # a pod whose PodGroup changed: one key for it, not two
                        await writer.delete(moved_from)
                    await writer.put(key, codec.encode(change.obj))
                else:
                    deleted = keys.delete(change.namespace, change.name)
                    if deleted is None:
                        continue
                    await writer.delete(deleted)
                self.applied[row.kind] += 1

    async def _stored_versions(self, bucket: str) -> dict[str, str | None]:
        """Key -> the kube resourceVersion currently mirrored for it."""
        out: dict[str, str | None] = {}
        async for entry in watch_bucket(self._js, bucket):
            if entry.op is WatchOp.SYNCED:
                return out
            if entry.op is WatchOp.PUT:
                try:
                    out[entry.key] = _head.decode(entry.value).metadata.resourceVersion
                except msgspec.DecodeError:
                    out[entry.key] = None
            else:
                out.pop(entry.key, None)
        return out
