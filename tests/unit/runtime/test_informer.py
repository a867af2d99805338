"""The informer over a selected watch: it holds only the selected objects, whatever order the watch's
echo and the writer's own `remember` arrive in."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import msgspec

from tests.support.waiting import eventually
from vc_bus.testing import MemoryStore
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta
from vc_proto.selectors import pods_bound_to
from vc_runtime.informer import Informer


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
        informer.remember(created)
        assert ("ns", "p") in informer.items
