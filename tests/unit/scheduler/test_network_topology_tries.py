"""network-topology-aware, hard mode: a gang whose try in a hypernode fails is tried in the next one,
at most MAX_HYPERNODE_TRIES per job and session."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.unit.scheduler.scheduler_scenarios import SCENARIO_DIR, load_scenario
from vc_sched_core.cycle import load_scheduler_conf
from vc_sched_core.plugins.network_topology import MAX_HYPERNODE_TRIES
from vc_sched_core.sim import simulate
from vc_sched_core.snapshot import load_snapshot

CONF = load_scenario(SCENARIO_DIR / "network-topology-hard-next-hypernode.yaml").conf_text


def racks(good: int, count: int) -> str:
    """`count` one-node racks r00, r01...; every node but rack `good`'s carries a taint the pod lacks."""
    docs = []
    for i in range(count):
        taints = "[]" if i == good else "[{key: dedicated, value: infra, effect: NoSchedule}]"
        docs.append(
            f"{{apiVersion: v1, kind: Node, metadata: {{name: n{i:02}}}, spec: {{taints: {taints}}}, "
            'status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}}'
        )
        docs.append(
            f"{{apiVersion: topology.volcano.sh/v1alpha1, kind: HyperNode, metadata: {{name: r{i:02}}}, "
            f"spec: {{tier: 1, members: [{{type: Node, selector: {{exactMatch: {{name: n{i:02}}}}}}}]}}}}"
        )
    docs.append(
        "{apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, metadata: {name: job, namespace: default, "
        'creationTimestamp: "2024-01-01T00:00:00Z"}, spec: {minMember: 1, networkTopology: {mode: hard, '
        "highestTierAllowed: 1}}, status: {phase: Inqueue}}"
    )
    docs.append(
        "{apiVersion: v1, kind: Pod, metadata: {name: job-0, namespace: default, annotations: "
        "{scheduling.k8s.io/group-name: job}}, spec: {schedulerName: volcano, containers: "
        '[{resources: {requests: {cpu: "4"}}}]}}'
    )
    return "\n---\n".join(docs)


@pytest.mark.parametrize(("good", "bound"), [(MAX_HYPERNODE_TRIES - 1, True), (MAX_HYPERNODE_TRIES, False)])
def test_a_gang_is_tried_in_at_most_the_capped_number_of_hypernodes(good: int, bound: bool) -> None:
    snapshot = load_snapshot(racks(good, MAX_HYPERNODE_TRIES + 2))
    result = simulate(snapshot, load_scheduler_conf(CONF), cycles=1, now=datetime.now(UTC))
    assert result["binds"] == ({"default/job-0": f"n{good:02}"} if bound else {})
