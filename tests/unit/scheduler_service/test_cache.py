"""Which stored changes wake the scheduling loop early (only those that can give a cycle new work), and
which change what a cycle reads at all."""

from __future__ import annotations

import json
from dataclasses import replace

from service_builders import group, pod

from vc_scheduler.cache import SchedulerCache, _new_work


def test_new_pods_and_freed_resources_wake_the_loop() -> None:
    pending = pod("a", "g")
    bound = replace(pending, node_name="n1")
    running = replace(bound, phase="Running")
    assert _new_work("Pod", None, pending)  # a new pod to place
    assert _new_work("Pod", running, None)  # deleted: its node has room again
    assert _new_work("Pod", running, replace(running, phase="Succeeded"))  # finished: room again
    assert _new_work("Pod", running, replace(running, deleting=True))  # releasing
    assert _new_work("Pod", bound, pending)  # unbound


def test_binds_and_starts_do_not() -> None:
    pending = pod("a", "g")
    bound = replace(pending, node_name="n1")
    assert not _new_work("Pod", pending, bound)  # a bind we assumed already
    assert not _new_work("Pod", bound, replace(bound, phase="Running"))


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
