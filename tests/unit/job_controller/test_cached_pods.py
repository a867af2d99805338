"""What the job controller caches of a pod (logic/cached_pods.py): the fields it reads, so every decision
on cached pods is the one on whole pods; equal parts shared between pods."""

from __future__ import annotations

from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import job, pod, pods, run, task, view
from vc_job_controller import requests as rq
from vc_job_controller.logic.cached_pods import cached_pod
from vc_job_controller.logic.pods import build_job_pod
from vc_job_controller.logic.view import Request
from vc_proto.core import Container, ContainerState, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus


def _whole(p: Pod, *, restarts: int = 0) -> Pod:
    """A pod as the store holds it: containers, conditions and addresses beside what the controller reads."""
    assert p.spec is not None and p.status is not None
    statuses = [
        replace(s, restart_count=restarts, image="busybox", image_id="sha256:1")
        for s in p.status.container_statuses or []
    ]
    status = replace(
        p.status,
        container_statuses=statuses,
        conditions=[PodCondition(type="Ready", status="True", last_transition_time="2026-01-02T03:01:00Z")],
        host_ip="10.0.0.1",
        pod_ip="10.0.0.2",
        reason="Evicted",
        message="the node ran out of memory",
    )
    spec = replace(p.spec, containers=[Container(name="main", image="busybox")], restart_policy="Never")
    return replace(p, spec=spec, status=status)


def test_decisions_on_cached_pods_are_those_on_whole_pods() -> None:
    j = job([task("worker", 3, max_retry=2)], name="train", phase="Running")
    whole = pods(
        _whole(pod(j, "worker", 0, "Running"), restarts=2),
        _whole(pod(j, "worker", 1, "Failed", exit_code=3)),
        _whole(pod(j, "worker", 2, "Pending", terminating=True, node=None)),
    )
    cached = {name: cached_pod(p) for name, p in whole.items()}
    for request in (Request(), Request(event="PodFailed", task_name="worker", exit_code=3)):
        assert run(view(j, cached), request) == run(view(j, whole), request)
    # The request a pod's change raises (its event, exit code, task) is the same but for the pod it carries.
    before, after = "train-worker-0", "train-worker-1"
    on_whole = rq.for_pod_updated(whole[before], whole[after], "uid", j, whole)
    on_cached = rq.for_pod_updated(cached[before], cached[after], "uid", j, cached)
    assert on_whole.event == "PodFailed" and replace(on_cached, pod=on_whole.pod) == on_whole
    assert rq.task_failed(j, "worker", cached) == rq.task_failed(j, "worker", whole)


def test_pods_share_equal_parts_and_leave_out_what_the_controller_does_not_read() -> None:
    j = job([task("worker", 2)], name="train")
    spec = j.spec.tasks[0]  # type: ignore[index, union-attr]
    running = PodStatus(
        phase="Running",
        start_time="2026-01-02T03:01:00Z",
        container_statuses=[ContainerStatus(name="main", ready=True, state=ContainerState(running={}))],
    )
    first, second = (
        cached_pod(replace(build_job_pod(j, spec, i), spec=PodSpec(node_name="n1", containers=[]), status=running))
        for i in range(2)
    )
    assert first.spec is second.spec and first.spec == PodSpec(node_name="n1")
    assert first.status is second.status and first.status is not None
    assert first.status.container_statuses == [ContainerStatus(name="main", ready=True)]  # no running state
    assert first.metadata.owner_references is second.metadata.owner_references
    assert first.metadata.name != second.metadata.name
