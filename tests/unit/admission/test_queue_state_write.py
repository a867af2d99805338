"""A Queue created through the write API with a status.state that is not a Volcano state is refused
(field and rule named, nothing stored); a valid state is admitted and, status being server-owned, not stored."""

from __future__ import annotations

import msgspec
import pytest

from vc_admission.context import CacheContext
from vc_admission.review import Admitter
from vc_admission.write_api import WriteApi
from vc_bus.testing import MemoryStore
from vc_core.errors import NotFound
from vc_proto import api
from vc_proto.scheduling import Queue

_reply = msgspec.json.Decoder(api.WriteReply)


def create_queue(name: str, state: str) -> bytes:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "status": {"state": state},
    }
    return msgspec.json.encode({"operation": "create", "object": queue})


async def test_a_queue_with_an_unknown_state_is_refused_and_not_stored() -> None:
    store = MemoryStore()
    reply = _reply.decode(await WriteApi(store, Admitter(CacheContext(store))).handle(create_queue("q1", "Running")))
    assert reply.error is not None and reply.error.code == api.INVALID
    refusal = api.Cause(field="status.state", rule="queue-state", message="queue state must be in [Open Closed]")
    assert reply.error.causes == [refusal]
    with pytest.raises(NotFound):
        await store.get(Queue, None, "q1")


@pytest.mark.parametrize("state", ["Open", "Closed"])
async def test_a_queue_with_a_volcano_state_is_admitted(state: str) -> None:
    store = MemoryStore()
    reply = _reply.decode(await WriteApi(store, Admitter(CacheContext(store))).handle(create_queue("q1", state)))
    assert reply.error is None
    stored = await store.get(Queue, None, "q1")
    assert stored.metadata.name == "q1" and stored.status is None
