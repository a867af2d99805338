"""The queue page's figures (hierarchy, limits per resource without quota-only keys) and the YAML view."""

from __future__ import annotations

import msgspec
import yaml

from vc_dashboard.logic.queue_detail import queue_detail
from vc_dashboard.logic.yaml_view import object_yaml, yaml_url
from vc_proto.scheduling import Queue


def _queue(name: str, parent: str | None = None, **spec: object) -> Queue:
    doc = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 2, **({"parent": parent} if parent else {}), **spec},
        "status": {
            "state": "Open",
            "allocated": {"cpu": "3", "memory": "4Gi"},
            "inqueueResources": {"requests.memory": "32Gi", "count/pods": "4", "nvidia.com/gpu": "2"},
        },
    }
    return msgspec.convert(doc, Queue)


def test_a_queue_shows_its_place_in_the_hierarchy_and_its_limits_per_resource() -> None:
    root, team = _queue("root"), _queue("team", "root")
    leaf = _queue("research", "team", capability={"cpu": "64", "nvidia.com/gpu": "8"}, deserved={"cpu": "16"},
                  guarantee={"resource": {"cpu": "4"}})  # fmt: skip
    detail = queue_detail(leaf, [root, team, leaf])
    assert detail.lineage == ["root", "team", "research"] and detail.children == []
    assert queue_detail(team, [root, team, leaf]).children == ["research"]
    rows = {r.resource: r for r in detail.limits}
    assert set(rows) == {"cpu", "memory", "nvidia.com/gpu"}  # no requests.memory, no count/pods
    cpu = rows["cpu"]
    assert (cpu.allocated, cpu.deserved, cpu.guarantee, cpu.capability) == ("3", "16", "4", "64")
    assert rows["memory"].capability == "unlimited" and rows["nvidia.com/gpu"].inqueue == "2"


def test_the_yaml_view_is_the_object_in_its_wire_form() -> None:
    text = object_yaml(_queue("research", capability={"nvidia.com/gpu": "8"}))
    doc = yaml.safe_load(text)
    assert doc["kind"] == "Queue" and doc["spec"]["capability"] == {"nvidia.com/gpu": "8"}
    assert "inqueueResources" in doc["status"]
    assert yaml_url("queue", None, "research") == "/yaml/queue/research"
    assert yaml_url("job", "ml", "train") == "/yaml/job/ml/train"


def test_the_timeline_axis_reads_in_minutes_and_seconds() -> None:
    from vc_dashboard.logic.timeline import Timeline, elapsed

    assert [elapsed(s) for s in (0, 0.5, 1.25, 45, 90, 3600, 7500)] == [
        "0s",
        "0.5s",
        "1.2s",
        "45s",
        "1m30s",
        "1h",
        "2h5m",
    ]
    axis = Timeline(start=None, span=120, lanes=[], hidden_pods=0).ticks()
    assert axis == [
        (0.0, "0s", "start"),
        (25.0, "30s", "middle"),
        (50.0, "1m", "middle"),
        (75.0, "1m30s", "middle"),
        (100.0, "2m", "end"),
    ]


def test_a_queue_that_names_no_parent_sits_under_root() -> None:
    root, loose = _queue("root"), _queue("research")
    assert queue_detail(loose, [root, loose]).lineage == ["root", "research"]
    assert queue_detail(root, [root, loose]).children == ["research"]
