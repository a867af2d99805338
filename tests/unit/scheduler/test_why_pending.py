"""Why a job is pending: the lasting blocker first, in whole units, and only what blocks.

Three jobs a new user meets: one larger than the cluster, one larger than its queue's capability
while the cluster is busy, and one that only has to wait for GPUs others hold.
"""

from __future__ import annotations

from typing import Any

from tests.unit.scheduler.scheduler_builders import node, pod, podgroup, snapshot
from vc_core.why_pending import readable, split
from vc_sched_core.cycle import load_scheduler_conf, run_cycle

GPU = "nvidia.com/gpu"


def _gpu_nodes(count: int, gpus: int) -> list[dict[str, Any]]:
    return [node(f"n{i}", cpu="32", memory="256Gi", **{GPU: str(gpus)}) for i in range(count)]


def _gpu_pod(name: str, group: str, *, gpus: int = 1, node_name: str = "", phase: str = "Pending") -> dict[str, Any]:
    created = pod(name, group, cpu="4", node_name=node_name, phase=phase)
    created["spec"]["containers"][0]["resources"]["requests"][GPU] = str(gpus)
    return created


def _gang(name: str, *, pods: int, gpus_each: int, queue: str = "default", phase: str = "Pending") -> dict[str, Any]:
    group = podgroup(name, min_member=pods, phase=phase, queue=queue)
    group["spec"]["minResources"] = {"cpu": str(4 * pods), GPU: str(gpus_each * pods)}
    return group


def _queue(name: str, **capability: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": 1}
    if capability:
        spec["capability"] = capability
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec}


def _why(objects: list[dict[str, Any]], key: str = "default/big") -> tuple[str, str]:
    result = run_cycle(snapshot(*objects), load_scheduler_conf())
    (condition,) = [c for c in result.podgroups[key].conditions if c.type == "Unschedulable"]
    return split(condition.message)[0], condition.message


def _running(name: str, *, pods: int, queue: str = "default") -> list[dict[str, Any]]:
    """A gang of `pods` one-GPU pods Running, one per node n0, n1, ..."""
    group = _gang(name, pods=pods, gpus_each=1, queue=queue, phase="Running")
    return [group] + [_gpu_pod(f"{name}-{i}", name, node_name=f"n{i % 4}", phase="Running") for i in range(pods)]


def test_a_job_larger_than_the_cluster_says_it_can_never_run_in_whole_units() -> None:
    why, message = _why([*_gpu_nodes(4, 8), _gang("big", pods=10, gpus_each=4)])
    first = why.split(". ")[0]
    assert "40 nvidia.com/gpu" in first and "32 nvidia.com/gpu" in first and "10 pods" in first
    assert "never run as submitted" in first
    assert "40000m" not in why and "x1.2" not in first
    # Volcano's own text stays in the condition, first; a person reads the sentence first.
    assert message.startswith("10/0 tasks in gang unschedulable")
    assert readable(message).startswith("Needs 40 nvidia.com/gpu for 10 pods")


def test_a_job_over_its_queue_capability_names_the_queue_even_while_the_cluster_is_busy() -> None:
    busy = _running("others", pods=32)  # every GPU of the cluster is held
    objects = [*_gpu_nodes(4, 8), _queue("default"), _queue("team-b", **{GPU: "16"}), *busy]
    why, _ = _why([*objects, _gang("big", pods=8, gpus_each=4, queue="team-b")])
    first = why.split(". ")[0]
    assert '"team-b"\'s capability' in first and "16 nvidia.com/gpu" in first and "32 nvidia.com/gpu" in first
    assert "raise the capability or shrink the job" in first
    assert "waiting for" not in why  # waiting does not help: no transient shortfall is offered


def test_a_gang_that_only_waits_names_what_is_missing_and_nothing_that_does_not_block() -> None:
    held = _running("others", pods=6)  # 6 of the 8 GPUs held, 2 free, CPUs plenty
    gang = _gang("big", pods=8, gpus_each=1, phase="Inqueue")
    pods = [_gpu_pod(f"big-{i}", "big") for i in range(8)]
    why, _ = _why([*_gpu_nodes(4, 2), *held, gang, *pods])
    assert why.startswith("Waiting for 8 nvidia.com/gpu: 2 are free and 6 more must be released")
    assert 'held: 6 by 1 running job in queue "default"' in why
    assert "cpu" not in why and "never" not in why


def test_every_waiting_gang_counts_what_the_others_hold_but_not_its_own() -> None:
    """What each resource's holders hold is counted once per session for all the waiting jobs; each job's
    sentence leaves its own holding out."""
    held = _running("others", pods=5)  # 5 of the 8 GPUs, in queue default
    part = _gang("part", pods=4, gpus_each=1, phase="Inqueue")  # one pod Running, three waiting
    part_pods = [_gpu_pod("part-0", "part", node_name="n1", phase="Running")]
    part_pods += [_gpu_pod(f"part-{i}", "part") for i in range(1, 4)]
    big = [_gang(name, pods=8, gpus_each=1, phase="Inqueue") for name in ("big", "big2")]
    big_pods = [_gpu_pod(f"{name}-{i}", name) for name in ("big", "big2") for i in range(8)]
    objects = [*_gpu_nodes(4, 2), *held, part, *part_pods, *big, *big_pods]
    for key in ("default/big", "default/big2"):
        why, _ = _why(objects, key)
        assert 'held: 6 by 2 running jobs in queue "default"' in why
    why, _ = _why(objects, "default/part")
    assert 'held: 5 by 1 running job in queue "default"' in why
