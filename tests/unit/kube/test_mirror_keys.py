"""Where the relay mirrors each object: a pod under its PodGroup's shard, remembered for its deletion."""

from __future__ import annotations

from vc_kube.mirror_keys import MirrorKeys
from vc_proto import subjects
from vc_proto.core import CORE_V1, Pod
from vc_proto.meta import ObjectMeta
from vc_proto.pod_shards import shard_of_group
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION


def pod(group: str) -> Pod:
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name="p", namespace="ns", uid="u", annotations={GROUP_NAME_ANNOTATION: group}),
    )


def key_in(group: str) -> str:
    return subjects.pod_key("ns", shard_of_group("ns", group), "p")


def groups_in_two_shards() -> tuple[str, str]:
    first = "g-0"
    other = next(f"g-{i}" for i in range(1, 1000) if shard_of_group("ns", f"g-{i}") != shard_of_group("ns", first))
    return first, other


def test_a_pod_is_put_under_its_groups_shard_and_deleted_from_there() -> None:
    keys = MirrorKeys("Pod")
    assert keys.put("ns", "p", pod("a")) == (key_in("a"), None)
    assert keys.put("ns", "p", pod("a")) == (key_in("a"), None)  # a new version, same key
    assert keys.delete("ns", "p") == key_in("a")
    assert keys.delete("ns", "p") is None  # nothing mirrored: nothing to delete


def test_a_pod_whose_group_changed_is_moved_from_its_old_key() -> None:
    first, other = groups_in_two_shards()
    keys = MirrorKeys("Pod")
    keys.put("ns", "p", pod(first))
    assert keys.put("ns", "p", pod(other)) == (key_in(other), key_in(first))
    assert keys.delete("ns", "p") == key_in(other)


def test_keys_found_in_the_bucket_are_known_and_an_undecodable_version_keeps_its_key() -> None:
    keys = MirrorKeys("Pod")
    keys.known(key_in("a"))
    assert keys.put("ns", "p", None) == (key_in("a"), None)
    assert keys.put("ns", "unknown", None) == (None, None)
    keys.forget(key_in("a"))
    assert keys.delete("ns", "p") is None


def test_other_kinds_are_under_namespace_and_name_with_nothing_remembered() -> None:
    keys = MirrorKeys("Queue")
    queue = Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="q"))
    assert keys.put(None, "q", queue) == ("_.q", None)
    assert keys.put(None, "q", None) == ("_.q", None)
    assert keys.delete(None, "q") == "_.q"
