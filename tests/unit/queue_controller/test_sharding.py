"""The write fence: once the lease has lapsed no write reaches the store; reads still work."""

from __future__ import annotations

import pytest

from vc_bus.testing import MemoryStore
from vc_core.errors import Fenced, TemporaryError
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue
from vc_runtime.sharding import FencedStore, SoleOwner


class LapsedLease(SoleOwner):
    def can_write(self) -> bool:
        return False


def queue(name: str) -> Queue:
    return Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name=name))


async def test_fenced_store_refuses_every_write_after_the_lease_lapsed() -> None:
    store = MemoryStore()
    stored = await store.create(queue("q"))
    fenced = FencedStore(store, LapsedLease())
    for write in (fenced.create(queue("other")), fenced.update(stored), fenced.delete(Queue, None, "q")):
        with pytest.raises(Fenced) as caught:
            await write
        assert isinstance(caught.value, TemporaryError)  # the dispatcher retries it later
    assert (await fenced.get(Queue, None, "q")).metadata.uid == stored.metadata.uid
    assert [q.metadata.name for q in (await store.list(Queue))[0]] == ["q"]
