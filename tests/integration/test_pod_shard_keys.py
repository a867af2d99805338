"""Pods in the NATS store are kept under their PodGroup's shard, on a real nats-server."""

from __future__ import annotations

import msgspec
import pytest
from nats.aio.client import Client

from tests.support.buckets import live_keys
from vc_bus.objects import stamp_new
from vc_bus.pod_rekeying import rekey_pods
from vc_bus.store import NatsStore
from vc_core.errors import InvalidObject, NotFound
from vc_proto import codec, subjects
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta
from vc_proto.pod_shards import SHARDS, shard_of_group
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION

pytestmark = [pytest.mark.nats]


def pod(name: str, group: str | None = None) -> Pod:
    annotations = {GROUP_NAME_ANNOTATION: group} if group else None
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=name, namespace="team-a", annotations=annotations),
        spec=PodSpec(containers=[Container(name="main", image="busybox")]),
    )


async def stored_keys(nc: Client) -> list[str]:
    return await live_keys(nc, subjects.bucket("Pod"))


async def test_the_pods_of_a_group_are_under_its_shard_and_read_by_their_names(
    nc: Client, nats_store: NatsStore
) -> None:
    for i in range(3):
        await nats_store.create(pod(f"train-worker-{i}", "train"))
    shard = shard_of_group("team-a", "train")
    assert await stored_keys(nc) == [f"team-a.{shard}.train-worker-{i}" for i in range(3)]
    assert (await nats_store.get(Pod, "team-a", "train-worker-1")).metadata.name == "train-worker-1"
    listed, _ = await nats_store.list(Pod, "team-a")
    assert sorted(p.metadata.name or "" for p in listed) == [f"train-worker-{i}" for i in range(3)]


async def test_a_bare_pod_is_under_the_shard_of_the_group_made_for_it(nc: Client, nats_store: NatsStore) -> None:
    created = await nats_store.create(pod("lone"))
    shard = shard_of_group("team-a", f"podgroup-{created.metadata.uid}")
    assert await stored_keys(nc) == [f"team-a.{shard}.lone"]
    # The podgroup controller names that group in the pod: the same key, one write.
    named = msgspec.structs.replace(
        created,
        metadata=msgspec.structs.replace(
            created.metadata, annotations={GROUP_NAME_ANNOTATION: f"podgroup-{created.metadata.uid}"}
        ),
    )
    await nats_store.update(named)
    assert await stored_keys(nc) == [f"team-a.{shard}.lone"]


async def test_an_update_naming_another_group_is_refused_and_changes_nothing(nats_store: NatsStore) -> None:
    groups = {shard_of_group("team-a", f"g-{i}"): f"g-{i}" for i in range(4 * SHARDS)}
    first, other = list(groups.values())[:2]
    created = await nats_store.create(pod("p1", first))
    moved = msgspec.structs.replace(
        created, metadata=msgspec.structs.replace(created.metadata, annotations={GROUP_NAME_ANNOTATION: other})
    )
    with pytest.raises(InvalidObject) as refused:
        await nats_store.update(moved)
    assert refused.value.field == f"metadata.annotations[{GROUP_NAME_ANNOTATION}]"
    assert refused.value.rule == "immutable"
    assert await nats_store.get(Pod, "team-a", "p1") == created


async def test_a_name_no_key_can_hold_is_not_found(nats_store: NatsStore) -> None:
    for name in (" ", "+1", "a*b", "x>"):
        with pytest.raises(NotFound):
            await nats_store.get(Pod, "team-a", name)


async def test_pods_under_the_old_keys_are_moved_under_their_shards_once(nc: Client, nats_store: NatsStore) -> None:
    kv = await nc.jetstream().key_value(subjects.bucket("Pod"))
    old = [stamp_new(pod(f"old-{i}", "train"), now="2026-01-01T00:00:00Z") for i in range(3)]
    for p in old:
        await kv.put(subjects.object_key("team-a", p.metadata.name or ""), codec.encode(p))
    held = await nats_store.create(pod("old-2", "train"))  # its name already written under the new key
    await kv.put("team-a.not-a-pod", b"{not json")

    assert await rekey_pods(nc.jetstream()) == 3
    shard = shard_of_group("team-a", "train")
    assert await stored_keys(nc) == [*(f"team-a.{shard}.old-{i}" for i in range(3)), "team-a.not-a-pod"]
    assert (await nats_store.get(Pod, "team-a", "old-0")).metadata.uid == old[0].metadata.uid
    assert (await nats_store.get(Pod, "team-a", "old-2")).metadata.uid == held.metadata.uid
    assert await rekey_pods(nc.jetstream()) == 0
