"""A pod's shard is its PodGroup's: every pod of a group in one, whatever names or annotates it."""

from __future__ import annotations

from vc_proto.core import Pod
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.pod_shards import SHARDS, default_group, group_of, shard_of, shard_of_group
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION


def pod(name: str, *, uid: str = "", group: str | None = None, owner: str | None = None) -> Pod:
    owners = [OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="rs", uid=owner or "", controller=True)]
    return Pod(
        api_version="v1",
        metadata=ObjectMeta(
            name=name,
            namespace="team-a",
            uid=uid,
            annotations={GROUP_NAME_ANNOTATION: group} if group else None,
            owner_references=owners if owner else None,
        ),
    )


def test_the_pods_of_one_group_share_a_shard() -> None:
    shards = {shard_of(pod(f"train-worker-{i}", uid=f"u{i}", group="train")) for i in range(50)}
    assert shards == {shard_of_group("team-a", "train")}


def test_a_pod_without_a_group_is_in_the_shard_of_the_group_the_podgroup_controller_will_make() -> None:
    owned = pod("web-1", uid="u1", owner="rs-uid")
    assert default_group(owned) == "podgroup-rs-uid"
    annotated = pod("web-1", uid="u1", owner="rs-uid", group="podgroup-rs-uid")
    assert shard_of(owned) == shard_of(annotated)
    bare = pod("lone", uid="pod-uid")
    assert group_of(bare) == "podgroup-pod-uid"


def test_the_shard_is_a_stable_hash_into_the_range() -> None:
    # Fixed across processes and releases: stores written by an earlier run are read by this one.
    assert shard_of_group("team-a", "train") == shard_of_group("team-a", "train")
    assert all(0 <= shard_of_group("ns", f"g{i}") < SHARDS for i in range(500))
    assert len({shard_of_group("ns", f"g{i}") for i in range(500)}) > SHARDS // 2
