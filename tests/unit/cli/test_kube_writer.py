"""vcctl's writer for `--backend kube` acts on each type of write request as admission does: create,
update an object that exists, apply either way, delete by kind and name."""

from __future__ import annotations

import msgspec
import pytest

from vc_bus.testing import MemoryStore
from vc_cli.client import KubeWriter
from vc_cli.errors import CliError
from vc_core.errors import AlreadyExists, NotFound
from vc_proto import api
from vc_proto.scheduling import Queue


def queue(name: str, weight: int) -> msgspec.Raw:
    doc = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}}
    return msgspec.Raw(msgspec.json.encode(doc | {"spec": {"weight": weight}}))


async def weight_of(store: MemoryStore, name: str) -> int | None:
    stored = await store.get(Queue, None, name)
    return stored.spec.weight if stored.spec else None


async def test_each_write_does_what_its_type_says() -> None:
    store = MemoryStore()
    writer = KubeWriter(store)
    await writer.write(api.Create(object=queue("q1", 1)))
    with pytest.raises(AlreadyExists):
        await writer.write(api.Create(object=queue("q1", 1)))
    await writer.write(api.Update(object=queue("q1", 2)))
    assert await weight_of(store, "q1") == 2
    with pytest.raises(NotFound):
        await writer.write(api.Update(object=queue("q2", 1)))  # update needs the object to exist
    await writer.write(api.Apply(object=queue("q2", 3)))  # apply creates it
    await writer.write(api.Apply(object=queue("q2", 4)))  # and then updates it
    assert await weight_of(store, "q2") == 4
    assert await writer.write(api.Delete(kind="Queue", name="q1")) is None
    with pytest.raises(NotFound):
        await store.get(Queue, None, "q1")


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(api.Delete(kind="Nonsense", name="x"), id="delete-unknown-kind"),
        pytest.param(api.Delete(kind="Queue"), id="delete-without-name"),
        pytest.param(api.Create(object=msgspec.Raw(b'{"kind":"Nonsense"}')), id="create-unknown-kind"),
    ],
)
async def test_a_write_that_names_nothing_tephra_knows_is_refused_and_changes_nothing(
    request_: api.WriteRequest,
) -> None:
    store = MemoryStore()
    writer = KubeWriter(store)
    await writer.write(api.Create(object=queue("q1", 1)))
    before = await store.list(Queue)
    with pytest.raises(CliError):
        await writer.write(request_)
    assert await store.list(Queue) == before
