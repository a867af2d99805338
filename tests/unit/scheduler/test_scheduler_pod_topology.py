"""Inter-pod affinity, topology spread and host ports: the selector rules, the incremental counts
against a recount, and cases the scenario files do not show."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from vc_sched_core.cycle import load_scheduler_conf, run_cycle
from vc_sched_core.framework.framework import open_session
from vc_sched_core.plugins import in_tree_plugins
from vc_sched_core.plugins.label_selectors import NamespaceScope, selector_mask, selector_matches, with_label_keys
from vc_sched_core.plugins.placed_pods import PlacedPods, RowCounter
from vc_sched_core.snapshot import load_objects
from vc_sched_core.snapshot.kube import LabelSelector, PodAffinityTerm, SelectorRequirement


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi"}},
    }


def pod(
    name: str, *, node_name: str = "", group: str = "", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels or {}}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    body = {"schedulerName": "volcano", "containers": [{"resources": {"requests": {"cpu": "1"}}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": "Running" if node_name else "Pending"}}


def gang(name: str, size: int = 1) -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": size},
        "status": {"phase": "Inqueue"},
    }


def anti(app: str, key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {"a": "1"}, False),
        (LabelSelector(), {"a": "1"}, True),
        (LabelSelector(match_labels={"a": "1"}), {"a": "1", "b": "2"}, True),
        (LabelSelector(match_labels={"a": "1"}), {"a": "2"}, False),
        (LabelSelector(match_expressions=(SelectorRequirement(key="a", operator="NotIn", values=("1",)),)), {}, True),
        (LabelSelector(match_expressions=(SelectorRequirement(key="a", operator="Exists"),)), {"a": ""}, True),
        (LabelSelector(match_expressions=(SelectorRequirement(key="a", operator="DoesNotExist"),)), {"a": "x"}, False),
        (
            LabelSelector(match_expressions=(SelectorRequirement(key="a", operator="Gt", values=("1",)),)),
            {"a": "5"},
            False,
        ),
    ],
)
def test_selector_rules_one_and_vectorised_agree(
    selector: LabelSelector | None, labels: dict[str, str], expected: bool
) -> None:
    assert selector_matches(selector, labels) is expected
    assert selector_mask(selector, [labels, labels]).tolist() == [expected, expected]


def test_match_label_keys_narrow_to_the_pods_own_values() -> None:
    narrowed = with_label_keys(LabelSelector(match_labels={"app": "x"}), ["rev"], {"rev": "7", "app": "x"})
    assert narrowed is not None
    assert selector_matches(narrowed, {"app": "x", "rev": "7"})
    assert not selector_matches(narrowed, {"app": "x", "rev": "6"})


def test_namespace_scope_defaults_lists_and_selects() -> None:
    scope = NamespaceScope({"prod": {"env": "prod"}})
    assert scope.reaches(PodAffinityTerm(), "mine")("mine") and not scope.reaches(PodAffinityTerm(), "mine")("prod")
    listed = PodAffinityTerm(namespaces=("a",))
    assert scope.reaches(listed, "mine")("a") and not scope.reaches(listed, "mine")("mine")
    selected = PodAffinityTerm(namespace_selector=LabelSelector(match_labels={"env": "prod"}))
    assert scope.reaches(selected, "mine")("prod") and not scope.reaches(selected, "mine")("dev")
    by_name = PodAffinityTerm(namespace_selector=LabelSelector(match_labels={"kubernetes.io/metadata.name": "dev"}))
    assert scope.reaches(by_name, "mine")("dev")
    everything = PodAffinityTerm(namespace_selector=LabelSelector())
    assert scope.reaches(everything, "mine")("anything")


def test_row_counts_follow_placements_and_evictions() -> None:
    objects = [node(f"n{i}") for i in range(4)]
    objects += [pod(f"r{i}", node_name=f"n{i % 4}", labels={"app": "a" if i % 2 else "b"}) for i in range(8)]
    deleting = pod("r8", node_name="n2", labels={"app": "a"})
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    objects += [deleting, {"kind": "Queue", "metadata": {"name": "default"}}, gang("g", 2)]
    objects += [pod(f"g-{i}", group="g", labels={"app": "a"}) for i in range(2)]
    snapshot = load_objects(objects)
    conf = load_scheduler_conf()
    ssn, _ = open_session(snapshot, conf, plugins=in_tree_plugins(), now=None, uid="s")
    pods = PlacedPods(ssn.nodes)

    def is_app_a(table: PlacedPods, start: int, stop: int) -> np.ndarray:
        return selector_mask(LabelSelector(match_labels={"app": "a"}), table.labels[start:stop])

    all_pods, spread = RowCounter(pods, is_app_a), RowCounter(pods, is_app_a, spread=True)
    # A pod already being deleted counts for inter-pod affinity, not for spread (Kubernetes).
    assert all_pods.current().tolist() == [0, 2, 1, 2]
    assert spread.current().tolist() == [0, 2, 0, 2]
    job = ssn.jobs["default/g"]
    tasks = sorted(job.tasks.values(), key=lambda t: t.name)
    ssn.allocate(tasks[0], ssn.nodes.by_name["n0"])
    ssn.allocate(tasks[1], ssn.nodes.by_name["n0"])
    running = next(t for n in ssn.nodes.nodes for t in n.tasks.values() if t.name == "r1")
    ssn.evict(running, "test")
    # A pod this session evicts is gone for both at once (Volcano's predicates drop it on deallocate).
    assert all_pods.current().tolist() == [2, 1, 1, 2]
    assert spread.current().tolist() == [2, 1, 0, 2]


def test_an_existing_pods_anti_affinity_keeps_a_matching_newcomer_off_its_zone() -> None:
    objects = [node("a1", zone="a"), node("b1", zone="b"), {"kind": "Queue", "metadata": {"name": "default"}}]
    objects.append(pod("guard", node_name="b1", labels={"app": "guard"}, affinity=anti("noisy", "zone")))
    objects += [gang("noisy"), pod("noisy-0", group="noisy", labels={"app": "noisy"})]
    objects += [gang("quiet"), pod("quiet-0", group="quiet", labels={"app": "quiet"}, nodeSelector={"zone": "b"})]
    result = run_cycle(load_objects(objects), load_scheduler_conf())
    assert result.binds == {"default/noisy-0": "a1", "default/quiet-0": "b1"}


def test_a_gang_with_anti_affinity_to_itself_takes_one_node_each_or_waits() -> None:
    objects = [node(f"n{i}") for i in range(3)] + [{"kind": "Queue", "metadata": {"name": "default"}}]
    objects += [gang("spread", 3)] + [
        pod(f"spread-{i}", group="spread", labels={"app": "s"}, affinity=anti("s")) for i in range(3)
    ]
    objects += [gang("toomany", 4)] + [
        pod(f"toomany-{i}", group="toomany", labels={"app": "t"}, affinity=anti("t")) for i in range(4)
    ]
    result = run_cycle(load_objects(objects), load_scheduler_conf())
    spread = [n for p, n in result.binds.items() if "spread" in p]
    assert sorted(spread) == ["n0", "n1", "n2"]
    assert not any("toomany" in p for p in result.binds)
    message = result.podgroups["default/toomany"].conditions[-1].message
    assert "didn't satisfy existing pods anti-affinity rules" in message  # its own placed pods' terms, checked first


def test_disabling_pod_affinity_in_the_conf_ignores_the_terms() -> None:
    conf = load_scheduler_conf(
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
        "    arguments: {predicate.PodAffinityEnable: false}\n"
    )
    objects = [node("n0"), {"kind": "Queue", "metadata": {"name": "default"}}]
    objects += [gang("pair", 2)] + [
        pod(f"pair-{i}", group="pair", labels={"app": "p"}, affinity=anti("p")) for i in range(2)
    ]
    assert len(run_cycle(load_objects(objects), conf).binds) == 2
    assert not run_cycle(load_objects(objects), load_scheduler_conf()).binds
