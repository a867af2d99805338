"""pdb's budget arithmetic and resourcequota's counted usage (the scenario files show the plugins at work)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from vc_sched_core.plugins.pdb import disruptions_allowed, scaled, selects
from vc_sched_core.plugins.resourcequota import counted_usage
from vc_sched_core.snapshot import load_snapshot
from vc_sched_core.snapshot.cluster import PodDisruptionBudgetObj, ResourceQuotaObj
from vc_sched_core.snapshot.kube import LabelSelector

PODS = load_snapshot(
    "\n---\n".join(
        f"{{kind: Pod, metadata: {{name: p{i}, namespace: ns, labels: {{app: a}}}}, spec: {{nodeName: n, "
        f'containers: [{{resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]}}, status: {{phase: {phase}}}}}'
        for i, phase in enumerate(["Running", "Running", "Running", "Pending", "Succeeded"])
    )
).pods


def budget(**spec: object) -> PodDisruptionBudgetObj:
    fields: dict[str, object] = {"min_available": None, "max_unavailable": None, "disruptions_allowed": None, **spec}
    return PodDisruptionBudgetObj("b", "ns", LabelSelector(match_labels={"app": "a"}), **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "total", "expected"), [(2, 10, 2), ("50%", 5, 3), ("10%", 4, 1), ("3", 9, 3)])
def test_int_or_percent_rounds_up(value: int | str, total: int, expected: int) -> None:
    assert scaled(value, total) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"disruptions_allowed": 5}, 5),  # the controller's figure wins
        ({"min_available": 2}, 1),  # 3 running of 4 unfinished, 2 must stay
        ({"min_available": "100%"}, 0),
        ({"max_unavailable": 2}, 1),  # 4 expected - 2 = 2 must stay; 3 healthy
        ({"max_unavailable": "50%"}, 1),
        ({}, 0),
    ],
)
def test_disruptions_allowed_without_a_controller(spec: dict[str, object], expected: int) -> None:
    assert disruptions_allowed(budget(**spec), PODS) == expected


def test_an_empty_or_missing_selector_selects_nothing() -> None:
    empty = PodDisruptionBudgetObj("b", "ns", LabelSelector(), 1, None, None)
    missing = PodDisruptionBudgetObj("b", "ns", None, 1, None, None)
    other_namespace = PodDisruptionBudgetObj("b", "other", LabelSelector(match_labels={"app": "a"}), 1, None, None)
    assert not any(selects(b, PODS[0]) for b in (empty, missing, other_namespace))
    assert selects(budget(), PODS[0])


def test_quota_usage_counts_unfinished_pods_by_quota_name() -> None:
    hard = {"pods": Fraction(10), "count/pods": Fraction(10), "requests.cpu": Fraction(8), "limits.memory": Fraction(8)}
    quota = ResourceQuotaObj("q", "ns", hard, None)
    unfinished = [p for p in PODS if p.phase != "Succeeded"]
    used = counted_usage(quota, unfinished)
    assert used == {"pods": 4, "count/pods": 4, "requests.cpu": 4, "limits.memory": 4 * 1024**3}
