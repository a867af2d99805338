"""The store services get with `--backend kube`: writes to the apiserver, reads from the NATS mirror.

Design rule: every service reads the shared NATS cache, whatever the backend; only writes differ.
- create/update/delete/evict and `get` go to the apiserver (KubeStore). `get` is there because it is
  the read half of a CAS loop ("re-read and retry" after a Conflict must see the newest version).
- list/watch read the KV buckets the relay fills. The values carry the apiserver's resourceVersion,
  and unlike NatsStore this reader keeps it (NatsStore overwrites it with the KV revision), so an
  object from the cache can be written back with a correct precondition. `WatchEvent.revision` is
  the KV revision: it is what a watch resumes from.
- Every version a watch here delivers is also handed to the KubeStore (`remember`): a service writes
  objects it got from its watch, so the write finds its diff base without a GET.
- Any client that reaches NATS can put into a bucket: a value that is not an object of the bucket's
  kind under its own key is reported (vc_bus.decoding) and skipped, as NatsStore's watch does; it is
  never remembered as a diff base, and the watch goes on with the next entry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TypeVar

from nats.aio.client import Client

from vc_bus.decoding import CorruptObject, report_undecodable
from vc_bus.kvwatch import watch_bucket
from vc_bus.store import NatsStore, decode_stored
from vc_core.store import WatchEvent, WatchOp, collect_list, refuse_unlistable_namespace
from vc_kube.store import KubeStore
from vc_proto import subjects
from vc_proto.core import Pod
from vc_proto.kinds import KubeObject
from vc_proto.selectors import Selector

O = TypeVar("O", bound=KubeObject)  # noqa: E741


class MirroredStore:
    def __init__(self, kube_store: KubeStore, nc: Client, *, replicas: int = 1) -> None:
        self.kube = kube_store
        self._nc = nc
        self._replicas = replicas
        self._js = nc.jetstream()

    async def ensure(self) -> None:
        """The buckets exist even before the relay's first pass (same config as the NATS backend)."""
        await NatsStore(self._nc, replicas=self._replicas).ensure()

    async def aclose(self) -> None:
        """Close the apiserver connections (a service's shutdown; left open, aiohttp warns of them)."""
        await self.kube.kube.close()

    async def get(self, kind: type[O], namespace: str | None, name: str) -> O:
        return await self.kube.get(kind, namespace, name)

    async def create(self, obj: O) -> O:
        return await self.kube.create(obj)

    async def update(self, obj: O) -> O:
        return await self.kube.update(obj)

    def remember(self, obj: KubeObject) -> None:
        """A version a caller read from the mirror without this store's watch (vc_core.store.VersionMemory)."""
        self.kube.remember(obj)

    async def bind(self, pod: Pod, node: str, *, annotations: Mapping[str, str] | None = None) -> None:
        await self.kube.bind(pod, node, annotations=annotations)

    async def delete(
        self,
        kind: type[O],
        namespace: str | None,
        name: str,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
        grace: bool = True,
    ) -> None:
        await self.kube.delete(kind, namespace, name, resource_version=resource_version, uid=uid, grace=grace)

    async def evict(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        await self.kube.evict(namespace, name, uid=uid)

    async def list(self, kind: type[O], namespace: str | None = None) -> tuple[list[O], int]:
        return await collect_list(self.watch(kind, namespace=namespace), kind)

    async def watch(
        self,
        kind: type[O],
        *,
        namespace: str | None = None,
        from_revision: int = 0,
        select: Selector | None = None,
    ) -> AsyncIterator[WatchEvent]:
        refuse_unlistable_namespace(namespace)  # a watch on such a key filter is never answered
        kind_name = kind.__name__
        bucket = subjects.bucket(kind_name)
        feed = watch_bucket(self._js, bucket, subjects.namespace_filter(namespace), from_revision, select=select)
        async for entry in feed:
            if entry.op is WatchOp.SYNCED:
                yield WatchEvent(WatchOp.SYNCED, entry.revision)
                continue
            namespace_, name = subjects.split_key(entry.key)
            if entry.op is WatchOp.PUT:
                try:
                    # The apiserver's resourceVersion stays: it is the precondition of a write back.
                    obj = decode_stored(kind_name, entry.key, entry.value, entry.revision, keep_resource_version=True)
                except CorruptObject as exc:
                    where = {"key": entry.key, "revision": entry.revision}
                    report_undecodable(source=bucket, kind=kind_name, error=exc.reason, **where)
                    continue  # readers see only objects; the watch resumes after it all the same
                self.kube.remember(obj)
                yield WatchEvent(WatchOp.PUT, entry.revision, namespace_, name, obj)
            else:
                self.kube.forget(kind_name, namespace_, name)
                yield WatchEvent(WatchOp.DELETE, entry.revision, namespace_, name)


async def open_mirrored_store(
    kubeconfig: str | None, nc: Client, *, replicas: int = 1, agent: str = "tephra"
) -> MirroredStore:
    """What `open_store` returns for `--backend kube`: kubeconfig file, else in-cluster credentials."""
    from vc_core.errors import ConfigError
    from vc_kube.client import KubeClient

    try:
        kube = await KubeClient.connect(kubeconfig, agent=agent)
    except Exception as exc:  # kubeconfig/in-cluster loading raises assorted types; all mean bad config
        raise ConfigError(
            f"--backend kube: cannot load kube credentials ({kubeconfig or 'in-cluster'}): {exc}"
        ) from exc
    store = MirroredStore(KubeStore(kube), nc, replicas=replicas)
    await store.ensure()
    return store
