"""Which stored changes wake the scheduling loop early (only those that can give a cycle new work), and
which change what a cycle reads at all."""

from __future__ import annotations

import json
from dataclasses import replace

import msgspec
import pytest

from tests.unit.scheduler_service.service_builders import group, pod
from vc_bus.kvwatch import RawEntry
from vc_core.store import WatchOp
from vc_proto.pod_shards import SHARDS
from vc_scheduler.cache import BOUND_BY, SchedulerCache, _new_work


def test_new_pods_and_freed_resources_wake_the_loop() -> None:
    pending = pod("a", "g")
    bound = msgspec.structs.replace(pending, node_name="n1")
    running = msgspec.structs.replace(bound, phase="Running")
    assert _new_work("Pod", None, pending)  # a new pod to place
    assert _new_work("Pod", running, None)  # deleted: its node has room again
    assert _new_work("Pod", running, msgspec.structs.replace(running, phase="Succeeded"))  # finished: room again
    assert _new_work("Pod", running, msgspec.structs.replace(running, deleting=True))  # releasing
    assert _new_work("Pod", bound, pending)  # unbound


def test_binds_and_starts_do_not() -> None:
    pending = pod("a", "g")
    bound = msgspec.structs.replace(pending, node_name="n1")
    assert not _new_work("Pod", pending, bound)  # a bind we assumed already
    assert not _new_work("Pod", bound, msgspec.structs.replace(bound, phase="Running"))


def test_podgroups_wake_it_for_new_demands_not_for_status() -> None:
    pg = group("g", min_member=2)
    assert _new_work("PodGroup", None, pg)
    assert _new_work("PodGroup", pg, replace(pg, min_member=3))
    assert not _new_work("PodGroup", pg, replace(pg, phase="Running"))
    assert _new_work("Node", None, None) and _new_work("Queue", object(), object())


def test_a_change_nothing_reads_keeps_the_object_and_the_version() -> None:
    """A node's heartbeat, a pod's status conditions: the view is equal, so the same object stays (the
    carried state compares by identity) and the version does not move (an idle loop stays idle)."""
    cache = SchedulerCache()
    node = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}
    assert cache._put("Node", "n1", json.dumps(node).encode(), cache.nodes)
    first = cache.nodes["n1"]
    beat = {**node, "status": {**node["status"], "conditions": [{"type": "Ready", "lastHeartbeatTime": "now"}]}}
    assert not cache._put("Node", "n1", json.dumps(beat).encode(), cache.nodes)
    assert cache.nodes["n1"] is first
    bigger = {**node, "status": {"allocatable": {"cpu": "8"}}}
    assert cache._put("Node", "n1", json.dumps(bigger).encode(), cache.nodes)
    assert cache.nodes["n1"] is not first


def test_the_stored_bind_of_an_assumed_pod_keeps_the_assumed_object() -> None:
    """The watch showing our own bind (the bound-by annotation aside, what we assumed) changes nothing a
    cycle reads; the pod stops counting as only assumed, and a late 'bind failed' undoes nothing."""
    cache = SchedulerCache()
    pod_doc = {
        "kind": "Pod",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u", "annotations": {"scheduling.k8s.io/group-name": "g"}},
        "spec": {"schedulerName": "volcano", "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
    }
    assert cache._put("Pod", "ns/a", json.dumps(pod_doc).encode(), cache.pods)
    cache.assume("ns/a", "n1")
    assumed = cache.pods["ns/a"]
    assert cache.assumed() == {"ns/a"}
    annotations = {**pod_doc["metadata"]["annotations"], BOUND_BY: "s0/1"}  # type: ignore[dict-item]
    bound = {**pod_doc, "metadata": {**pod_doc["metadata"], "annotations": annotations}}
    bound["spec"] = {**pod_doc["spec"], "nodeName": "n1"}  # type: ignore[dict-item]
    assert not cache._put("Pod", "ns/a", json.dumps(bound).encode(), cache.pods)
    assert cache.pods["ns/a"] is assumed and cache.assumed() == frozenset()
    version = cache.version
    cache.forget_assumed("ns/a")  # the binder's write timed out, yet the store has it
    assert cache.pods["ns/a"] is assumed and cache.version == version
    elsewhere = {**bound, "spec": {**bound["spec"], "nodeName": "n2"}}
    assert cache._put("Pod", "ns/a", json.dumps(elsewhere).encode(), cache.pods)  # bound elsewhere: a change


def test_quotas_and_disruption_budgets_reach_the_snapshot_and_their_changes_wake_the_loop() -> None:
    """The resourcequota and pdb plugins read them from the live snapshot, as from `vcctl sim cycle`'s."""
    cache = SchedulerCache()
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": "team"},
        "spec": {"hard": {"requests.cpu": "2", "pods": "4"}},
    }
    budget = {
        "apiVersion": "policy/v1beta1",  # what a 1.20 apiserver serves, mirrored as it is
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "team"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}},
    }
    assert cache._put("ResourceQuota", "team/compute", json.dumps(quota).encode(), cache._tables["ResourceQuota"])
    assert cache._put(
        "PodDisruptionBudget", "team/web", json.dumps(budget).encode(), cache._tables["PodDisruptionBudget"]
    )
    snapshot = cache.snapshot()
    (held_quota,) = snapshot.resource_quotas
    (held_budget,) = snapshot.pod_disruption_budgets
    assert (held_quota.namespace, held_quota.name, held_quota.used) == ("team", "compute", None)
    assert held_quota.hard == {"requests.cpu": 2, "pods": 4}
    assert (held_budget.max_unavailable, held_budget.disruptions_allowed) == (0, None)
    assert _new_work("ResourceQuota", held_quota, None)  # deleted: a waiting PodGroup may fit now
    assert _new_work("PodDisruptionBudget", held_budget, None)  # deleted: its pods may be victims now


def test_claims_and_volumes_reach_the_snapshot_and_their_changes_wake_the_loop() -> None:
    """The predicates' volume check reads them from the live snapshot, as from `vcctl sim cycle`'s."""
    cache = SchedulerCache()
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "team"},
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "disk-n2"},
    }
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "disk-n2"},
        "spec": {"local": {"path": "/mnt"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "a", "namespace": "team"},
        "spec": {
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}, {"name": "e", "emptyDir": {}}]
        },
    }
    table = cache._tables.__getitem__
    assert cache._put("PersistentVolumeClaim", "team/data", json.dumps(claim).encode(), table("PersistentVolumeClaim"))
    assert cache._put("PersistentVolume", "disk-n2", json.dumps(volume).encode(), table("PersistentVolume"))
    assert cache._put("Pod", "team/a", json.dumps(pod).encode(), cache.pods)
    snapshot = cache.snapshot()
    (held_claim,) = snapshot.persistent_volume_claims
    (held_volume,) = snapshot.persistent_volumes
    assert (held_claim.key, held_claim.volume_name) == ("team/data", "disk-n2")
    assert held_volume.node_affinity is not None and len(held_volume.node_affinity.node_selector_terms) == 1
    assert snapshot.pods[0].claims == ("data",)
    assert _new_work("PersistentVolumeClaim", None, held_claim)  # created: a waiting pod may fit now
    assert _new_work("PersistentVolume", held_volume, None)


def test_with_a_share_only_changes_to_it_count_unless_the_loop_waits_to_borrow() -> None:
    """Another instance's pods on its own nodes, its PodGroups and nodes do not make this instance cycle:
    they only move the sums outside its share. Its own do; so do queues. While a PodGroup of its share
    waits for room elsewhere (follow_all), everything counts."""
    from vc_scheduler.share import Partition

    cache = SchedulerCache()
    part = Partition("a", ("a", "b"))
    cache.index.regroup(part.owns, part.owns_node, part.shards)
    cache.follow_all = False
    mine = next(f"g{i}" for i in range(100) if part.owns(f"ns/g{i}"))
    theirs = next(f"g{i}" for i in range(100) if not part.owns(f"ns/g{i}"))
    here = next(f"n{i}" for i in range(100) if part.owns_node(f"n{i}"))
    there = next(f"n{i}" for i in range(100) if not part.owns_node(f"n{i}"))
    assert cache._concerns("Pod", "ns/p", None, pod("p", mine))
    assert cache._concerns("Pod", "ns/p", None, pod("p", theirs, node=here))
    assert not cache._concerns("Pod", "ns/p", None, pod("p", theirs, node=there))
    assert not cache._concerns("Pod", "ns/p", pod("p", theirs), pod("p", theirs, node=there))
    assert cache._concerns("PodGroup", f"ns/{mine}", None, None)
    assert not cache._concerns("PodGroup", f"ns/{theirs}", None, None)
    assert cache._concerns("Node", here, None, None) and not cache._concerns("Node", there, None, None)
    assert cache._concerns("Queue", "q", None, None)
    cache.follow_all = True
    assert cache._concerns("Pod", "ns/p", None, pod("p", theirs, node=there))


def test_its_own_status_write_coming_back_is_no_change_for_the_loop() -> None:
    """The status writer's own write of a PodGroup's status, delivered back at the revision it wrote,
    changes nothing a cycle decides: it must not make the loop cycle. Another revision, or a change of
    the PodGroup's demands, still does."""
    cache = SchedulerCache()
    pg = group("g", min_member=2)
    running = replace(pg, phase="Running")
    cache.expect_echo("ns/g", 7)
    assert cache._echo("PodGroup", "ns/g", 7, pg, running)
    assert not cache._echo("PodGroup", "ns/g", 7, pg, running)  # once only
    cache.expect_echo("ns/g", 8)
    assert not cache._echo("PodGroup", "ns/g", 9, pg, running)  # someone else's later write
    cache.expect_echo("ns/g", 10)
    assert not cache._echo("PodGroup", "ns/g", 10, pg, replace(running, min_member=3))  # demands changed
    assert not cache._echo("Pod", "ns/g", 10, pg, running)


def test_a_deleted_pod_under_a_podgroups_key_leaves_what_the_cache_keeps_of_the_podgroup() -> None:
    """What is kept per PodGroup key (its owning job, its stored bytes, an expected echo of its status)
    goes with the PodGroup's delete, not with the delete of a pod that happens to have the same key."""
    cache = SchedulerCache()
    podgroup = {
        "kind": "PodGroup",
        "metadata": {"name": "a", "namespace": "ns", "ownerReferences": [{"kind": "Job", "name": "job-a", "uid": "j"}]},
        "spec": {"minMember": 1, "queue": "default"},
    }
    cache.apply("PodGroup", RawEntry(WatchOp.PUT, 1, "ns.a", json.dumps(podgroup).encode()))
    stored_unbound(cache)  # pod ns/a
    cache.expect_echo("ns/a", 5)
    cache.apply("Pod", RawEntry(WatchOp.DELETE, 3, "ns.a"))
    assert "ns/a" not in cache.pods
    assert cache.owner_job["ns/a"] == "job-a"
    assert cache.stored_podgroup("ns/a") is not None
    assert "ns/a" in cache._echoes
    cache.apply("PodGroup", RawEntry(WatchOp.DELETE, 4, "ns.a"))
    assert "ns/a" not in cache.podgroups and "ns/a" not in cache.owner_job
    assert cache.stored_podgroup("ns/a") is None and "ns/a" not in cache._echoes


def test_own_binds_count_as_occupying_while_in_flight_and_as_unseen_until_the_watch_shows_them() -> None:
    """A node's owner weighs loans against what occupies the node with its own binds in flight included
    (assumed, not stored yet); it gives a node up only once its cache shows every bind it wrote."""
    cache = SchedulerCache()
    doc = {
        "kind": "Pod",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u", "annotations": {"scheduling.k8s.io/group-name": "g"}},
        "spec": {"schedulerName": "volcano", "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
    }
    assert cache._put("Pod", "ns/a", json.dumps(doc).encode(), cache.pods)
    cache.index.place("ns/a", None, cache.pods["ns/a"])
    assert cache.occupying("n1") == {}
    cache.assume("ns/a", "n1")
    assert cache.occupying("n1") == {"u": {"cpu": 1, "pods": 1}}
    assert cache.bound("ns/a") is not None  # the binder wrote it
    assert cache.unseen_binds() == 1
    assert cache.occupying("n1") == {"u": {"cpu": 1, "pods": 1}}  # written, not yet seen: still there
    stored = {**doc, "spec": {**doc["spec"], "nodeName": "n1"}}  # type: ignore[dict-item]
    cache._put("Pod", "ns/a", json.dumps(stored).encode(), cache.pods)
    assert cache.unseen_binds() == 0
    assert cache.occupying("n1") == {"u": {"cpu": 1, "pods": 1}}  # now as stored


def stored_unbound(cache: SchedulerCache) -> dict[str, object]:
    """Pod ns/a (uid u, 1 cpu) stored unbound, as the watch delivers it; its stored document."""
    doc: dict[str, object] = {
        "kind": "Pod",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u", "annotations": {"scheduling.k8s.io/group-name": "g"}},
        "spec": {"schedulerName": "volcano", "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
    }
    cache.apply("Pod", RawEntry(WatchOp.PUT, 1, "ns.a", json.dumps(doc).encode()))
    return doc


def bind_written_not_seen(cache: SchedulerCache) -> dict[str, object]:
    """Pod ns/a (stored_unbound) assumed on n1 and its bind written, the watch not yet past it; its
    stored document."""
    doc = stored_unbound(cache)
    cache.assume("ns/a", "n1")
    assert cache.bound("ns/a") is not None
    return doc


def test_a_pod_bound_and_started_is_a_quiet_change_and_a_pod_finishing_is_new_work() -> None:
    """What the idle gate holds back (idle.py, quiet changes): a pod bound or started moves `quiet`, not
    `version`, and wakes nothing; a pod finishing frees room, moves `version` and wakes the loop."""
    cache = SchedulerCache()
    doc = stored_unbound(cache)
    version, quiet = cache.version, cache.quiet
    cache.changed.clear()
    bound = {**doc, "spec": {**doc["spec"], "nodeName": "n1"}}  # type: ignore[dict-item]
    cache.apply("Pod", RawEntry(WatchOp.PUT, 2, "ns.a", json.dumps(bound).encode()))
    running = {**bound, "status": {"phase": "Running"}}
    cache.apply("Pod", RawEntry(WatchOp.PUT, 3, "ns.a", json.dumps(running).encode()))
    assert (cache.version, cache.quiet) == (version, quiet + 2) and not cache.changed.is_set()
    finished = {**bound, "status": {"phase": "Succeeded"}}
    cache.apply("Pod", RawEntry(WatchOp.PUT, 4, "ns.a", json.dumps(finished).encode()))
    assert (cache.version, cache.quiet) == (version + 1, quiet + 2) and cache.changed.is_set()


def test_a_written_bind_occupies_its_node_until_seen_even_past_an_older_version_of_its_pod() -> None:
    """Between the bind's write and the watch's delivery of it (on Kubernetes through the apiserver and
    the relay) the watch may still deliver the pod as it was before the bind: its node stays taken for
    the owner's loans and own commits all the same, until the stored bind, the pod's deletion or the
    unseen bind's expiry. (A kube chaos run lent that room: two pods on one node past its allocatable.)"""
    cache = SchedulerCache()
    doc = bind_written_not_seen(cache)
    older = {**doc, "status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    cache.apply("Pod", RawEntry(WatchOp.PUT, 2, "ns.a", json.dumps(older).encode()))
    assert cache.occupying("n1") == {"u": {"cpu": 1, "pods": 1}}
    assert cache.occupying("n2") == {}
    cache.apply("Pod", RawEntry(WatchOp.DELETE, 3, "ns.a"))
    assert cache.occupying("n1") == {} and cache.unseen_binds() == 0


def test_a_cycle_sees_an_own_bind_not_the_older_version_the_watch_delivers_after_it() -> None:
    """A cycle's view is the same as the loans': the pod stays on its node, not pending again with its
    node's room free (where the next cycle would plan another pod, or this one twice). kube-scheduler's
    cache likewise never lets an informer's unbound pod replace an assumed one."""
    cache = SchedulerCache()
    doc = bind_written_not_seen(cache)
    version = cache.version
    older = {**doc, "status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    cache.apply("Pod", RawEntry(WatchOp.PUT, 2, "ns.a", json.dumps(older).encode()))
    assert cache.pods["ns/a"].node_name == "n1"
    assert [p.node_name for p in cache.snapshot().pods] == ["n1"]
    assert list(cache.index.pods_on["n1"]) == ["ns/a"] and cache.version == version
    stored = {**doc, "spec": {**doc["spec"], "nodeName": "n1"}}  # type: ignore[dict-item]
    cache.apply("Pod", RawEntry(WatchOp.PUT, 3, "ns.a", json.dumps(stored).encode()))
    assert cache.pods["ns/a"].node_name == "n1" and cache.unseen_binds() == 0


def test_a_bind_in_flight_stays_shown_past_an_unbound_version_and_undone_shows_the_latest() -> None:
    """While the bind is in flight an unbound version may be older than it or not yet past it: the cache
    shows the bind; if the binder then reports it failed, the cache shows the version the watch last
    delivered (not the assumed object without its node), and the pod is a candidate again."""
    cache = SchedulerCache()
    doc = stored_unbound(cache)
    cache.assume("ns/a", "n1")
    relabelled = {**doc, "metadata": {**doc["metadata"], "labels": {"tier": "x"}}}  # type: ignore[dict-item]
    cache.apply("Pod", RawEntry(WatchOp.PUT, 2, "ns.a", json.dumps(relabelled).encode()))
    assert cache.pods["ns/a"].node_name == "n1" and cache.assumed() == {"ns/a"}
    cache.forget_assumed("ns/a")  # the bind's compare-and-set met the newer version
    assert not cache.pods["ns/a"].node_name and cache.pods["ns/a"].labels == {"tier": "x"}
    assert not cache.index.pods_on.get("n1") and cache.shared_work


def test_a_pod_recreated_under_an_own_binds_name_is_a_new_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only versions of the same pod (its uid) are kept behind the bind. A pod deleted and created again
    under the name (its delete passed by a watch that lagged) replaces the bind, which went with the old
    pod, and what was kept for it: the new pod's own bind later is not undone by the old one's expiry."""
    from vc_scheduler import cache as cache_module
    from vc_scheduler.ledger import UNSEEN_AFTER_S

    now = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    cache = SchedulerCache()
    doc = bind_written_not_seen(cache)
    cache.apply("Pod", RawEntry(WatchOp.PUT, 2, "ns.a", json.dumps(doc).encode()))  # older: kept aside
    again = {**doc, "metadata": {**doc["metadata"], "uid": "u2"}}  # type: ignore[dict-item]
    cache.apply("Pod", RawEntry(WatchOp.PUT, 3, "ns.a", json.dumps(again).encode()))
    assert not cache.pods["ns/a"].node_name and cache.pods["ns/a"].uid == "u2"
    assert cache.unseen_binds() == 0 and cache.occupying("n1") == {}
    cache.assume("ns/a", "n2")
    now[0] += 2 * UNSEEN_AFTER_S
    assert cache.unseen_binds() == 0
    assert cache.pods["ns/a"].node_name == "n2" and cache.occupying("n2") == {"u2": {"cpu": 1, "pods": 1}}


def test_a_version_kept_behind_a_bind_keeps_its_bytes_when_held_brief(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a share, a version the share does not take is held brief, its bytes beside it. One kept
    behind an own bind keeps them for itself: the pod shown (the bind) is not replaced by decoding them,
    and once the bind is given up the kept version is shown and made whole from them."""
    from vc_scheduler import cache as cache_module
    from vc_scheduler.ledger import UNSEEN_AFTER_S

    now = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    cache = SchedulerCache(share_only=True)
    cache.regroup(lambda _group: True, lambda _node: True, frozenset(range(SHARDS)))
    doc = bind_written_not_seen(cache)
    # The members changed: the pod is not of its share any more (its shard still covered: a pod that
    # names no PodGroup on another instance's node is held so).
    cache.regroup(lambda _group: False, lambda _node: False, frozenset(range(SHARDS)))
    relabelled = {**doc, "metadata": {**doc["metadata"], "labels": {"tier": "x"}}}  # type: ignore[dict-item]
    cache.apply("Pod", RawEntry(WatchOp.PUT, 2, "ns.a", json.dumps(relabelled).encode()))
    shown = cache.full_pod("ns/a")
    assert shown is not None and shown.node_name == "n1"
    now[0] += 2 * UNSEEN_AFTER_S
    assert cache.unseen_binds() == 0
    whole = cache.full_pod("ns/a")
    assert whole is not None and not whole.node_name and whole.labels == {"tier": "x"}


def test_a_written_bind_never_seen_stops_holding_its_node_after_the_unseen_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The safety net: a bind the watch never shows (its pod went another way) is given up after
    UNSEEN_AFTER_S, by the hand-over's count and by occupying alike."""
    from vc_scheduler import cache as cache_module
    from vc_scheduler.ledger import UNSEEN_AFTER_S

    now = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    cache = SchedulerCache()
    doc = bind_written_not_seen(cache)
    cache.apply("Pod", RawEntry(WatchOp.PUT, 2, "ns.a", json.dumps(doc).encode()))  # an older version
    now[0] += UNSEEN_AFTER_S / 2
    assert cache.occupying("n1") == {"u": {"cpu": 1, "pods": 1}}
    assert cache.pods["ns/a"].node_name == "n1"
    now[0] += UNSEEN_AFTER_S
    assert cache.occupying("n1") == {} and cache.unseen_binds() == 0
    assert not cache.pods["ns/a"].node_name  # shown as the watch last delivered it: pending again
