"""The informer over a selected watch: it holds only the selected objects, whatever order the watch's
echo and the writer's own `remember` arrive in."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import msgspec

from tests.support.waiting import eventually
from vc_bus.testing import MemoryStore
from vc_core.store import WatchEvent, WatchOp
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta
from vc_proto.selectors import pods_bound_to
from vc_runtime.informer import Informer, revision_of


def pod(name: str) -> Pod:
    spec = PodSpec(containers=[Container(name="c", image="busybox")])
    return Pod(api_version=CORE_V1, metadata=ObjectMeta(name=name, namespace="ns"), spec=spec)


@contextlib.asynccontextmanager
async def following(informer: Informer[Pod]) -> AsyncIterator[None]:
    shutdown = asyncio.Event()
    task = asyncio.create_task(informer.run(shutdown))
    try:
        async with asyncio.timeout(5):
            await informer.synced.wait()
        yield
    finally:
        shutdown.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_selected_informer_holds_only_the_selected_objects() -> None:
    store = MemoryStore()
    changes: list[tuple[str | None, str | None]] = []
    informer = Informer(
        store,
        Pod,
        select=pods_bound_to({"n1"}),
        on_change=lambda old, new: changes.append(
            (old.metadata.name if old else None, new.metadata.name if new else None)
        ),
    )
    await store.bind(await store.create(pod("bound")), "n1")
    await store.create(pod("waiting"))
    async with following(informer):
        assert set(n for _, n in informer.items) == {"bound"}
        await store.bind(await store.get(Pod, "ns", "waiting"), "n1")
        await eventually(lambda: ("ns", "waiting") in informer.items)
    assert changes == [(None, "bound"), (None, "waiting")]


async def test_remembering_an_object_outside_the_selection_drops_it() -> None:
    """A writer's own write that takes an object out of the selection (the podgroup controller's
    annotation) must not leave it cached, whether the watch's delete came before or after."""
    store = MemoryStore()
    informer = Informer(store, Pod, select=pods_bound_to({"n1"}))
    await store.bind(await store.create(pod("p")), "n1")
    created = await store.get(Pod, "ns", "p")
    assert created.spec is not None
    async with following(informer):
        await eventually(lambda: ("ns", "p") in informer.items)
        moved = msgspec.structs.replace(created, spec=msgspec.structs.replace(created.spec, node_name="n2"))
        informer.remember(moved)  # as if our write's answer came before the watch's echo
        assert ("ns", "p") not in informer.items
        informer.remember(created)  # no newer than the write that took it out: not taken back
        assert ("ns", "p") not in informer.items
        informer.remember(at_revision(created, revision_of(created) + 1))  # selected again, later
        assert ("ns", "p") in informer.items


def at_revision(obj: Pod, revision: int) -> Pod:
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, resource_version=str(revision)))


class ScriptedStore:
    """A watch that hands over exactly the events the test puts in, in that order."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[WatchEvent] = asyncio.Queue()

    async def watch(self, kind: type[Pod], **kw: object) -> AsyncIterator[WatchEvent]:
        yield WatchEvent(WatchOp.SYNCED, 0)
        while True:
            yield await self.events.get()


async def test_a_late_copy_from_before_the_write_that_took_it_out_is_not_taken_back() -> None:
    """The watch lags: after the writer's own write took the pod out of the selection (and `remember`
    dropped it), the watch still delivers the version before that write, which was selected."""
    store = ScriptedStore()
    revisions: list[tuple[int | None, int | None]] = []  # (old, new) per change, None for absent
    informer = Informer(
        store,  # type: ignore[arg-type]
        Pod,
        select=pods_bound_to({"n1"}),
        on_change=lambda old, new: revisions.append(
            (revision_of(old) if old else None, revision_of(new) if new else None)
        ),
    )
    bound = at_revision(pod("p"), 5)
    assert bound.spec is not None
    bound = msgspec.structs.replace(bound, spec=msgspec.structs.replace(bound.spec, node_name="n1"))
    moved = at_revision(msgspec.structs.replace(bound, spec=msgspec.structs.replace(bound.spec, node_name="n2")), 6)
    async with following(informer):
        await store.events.put(WatchEvent(WatchOp.PUT, 4, "ns", "p", at_revision(bound, 4)))
        await eventually(lambda: ("ns", "p") in informer.items, what="the bound pod cached")
        informer.remember(moved)
        await store.events.put(WatchEvent(WatchOp.PUT, 5, "ns", "p", bound))  # the late copy
        await store.events.put(WatchEvent(WatchOp.DELETE, 6, "ns", "p"))  # the echo of the write
        await eventually(lambda: store.events.empty(), what="both events read")
        await asyncio.sleep(0)
        assert revisions == [(None, 4), (4, None)]  # cached, dropped: the late copy never came back
        # After the echo, the pod may come back, newer: a later write selects it again.
        await store.events.put(WatchEvent(WatchOp.PUT, 7, "ns", "p", at_revision(bound, 7)))
        await eventually(lambda: ("ns", "p") in informer.items, what="the newer version cached")
