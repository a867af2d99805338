"""Which Request an observed change raises: Volcano's job controller informer handlers, as a table."""

from __future__ import annotations

import pytest

from vc_job_controller import requests as rq
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec, JobState, JobStatus, TaskSpec
from vc_proto.core import (
    CORE_V1,
    ContainerState,
    ContainerStateTerminated,
    ContainerStatus,
    Pod,
    PodStatus,
)
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupStatus
from vc_proto.vocabulary import Event

JOB = Job(
    api_version=BATCH_V1ALPHA1,
    metadata=ObjectMeta(name="j", namespace="ns", uid="job-uid"),
    spec=JobSpec(tasks=[TaskSpec(name="w", replicas=2, max_retry=2)]),
)


def pod(
    name: str = "j-w-0",
    phase: str | None = "Pending",
    *,
    exit_code: int | None = None,
    restarts: int = 0,
    version: str = "3",
    out_of_sync: bool = False,
    owned: bool = True,
) -> Pod:
    annotations = {"volcano.sh/job-name": "j", "volcano.sh/job-version": version, "volcano.sh/task-spec": "w"}
    if out_of_sync:
        annotations["volcano.sh/controller-out-of-sync"] = "true"
    owners = (
        [OwnerReference(api_version=BATCH_V1ALPHA1, kind="Job", name="j", uid="job-uid", controller=True)]
        if owned
        else None
    )
    state = ContainerState(terminated=ContainerStateTerminated(exit_code=exit_code)) if exit_code is not None else None
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(
            name=name, namespace="ns", uid=f"uid-{name}", annotations=annotations, owner_references=owners
        ),
        status=PodStatus(
            phase=phase, container_statuses=[ContainerStatus(name="c", restart_count=restarts, state=state)]
        ),
    )


def test_only_pods_a_job_controls_with_volcanos_annotations_count() -> None:
    assert rq.owning_job(pod()) == ("j", "job-uid")
    assert rq.owning_job(pod(owned=False)) is None
    bare = Pod(api_version=CORE_V1, metadata=ObjectMeta(name="x", owner_references=pod().metadata.owner_references))
    assert rq.owning_job(bare) is None


@pytest.mark.parametrize(
    ("new", "event"),
    [
        pytest.param(pod(), Event.POD_PENDING, id="new-pod-is-pending"),
        pytest.param(pod(out_of_sync=True), Event.OUT_OF_SYNC, id="out-of-sync-pod"),
    ],
)
def test_pod_added(new: Pod, event: Event) -> None:
    request = rq.for_pod_added(new, "job-uid")
    assert (
        request.event == event and request.task_name == "w" and request.job_version == 3 and request.pod_name == "j-w-0"
    )


@pytest.mark.parametrize(
    ("old", "new", "siblings", "event", "exit_code"),
    [
        pytest.param(
            pod(phase="Running"), pod(phase="Failed", exit_code=3), {}, Event.POD_FAILED, 3, id="failed-with-exit-code"
        ),
        pytest.param(
            pod(phase="Failed"), pod(phase="Failed", exit_code=3), {}, Event.OUT_OF_SYNC, 0, id="still-failed"
        ),
        pytest.param(
            pod(phase="Running"),
            pod(phase="Succeeded"),
            {"j-w-0": pod(phase="Succeeded"), "j-w-1": pod("j-w-1", phase="Succeeded")},
            Event.TASK_COMPLETED,
            0,
            id="last-replica-succeeded",
        ),
        pytest.param(
            pod(phase="Running"),
            pod(phase="Succeeded"),
            {"j-w-0": pod(phase="Succeeded"), "j-w-1": pod("j-w-1", phase="Running")},
            Event.OUT_OF_SYNC,
            0,
            id="one-of-two-succeeded",
        ),
        pytest.param(pod(phase="Pending"), pod(phase="Running"), {}, Event.POD_RUNNING, 0, id="started"),
        pytest.param(
            pod(phase="Running", restarts=1),
            pod(phase="Running", restarts=2),
            {"j-w-0": pod(phase="Running", restarts=2)},
            Event.TASK_FAILED,
            0,
            id="restarts-reach-task-max-retry",
        ),
        pytest.param(
            pod(phase="Pending", restarts=1),
            pod(phase="Running", restarts=2),
            {"j-w-0": pod(phase="Running", restarts=2)},
            Event.POD_RUNNING,
            0,
            id="pod-running-overrides-task-failed",
        ),
        pytest.param(
            pod(phase="Running"), pod(phase="Failed", out_of_sync=True), {}, Event.OUT_OF_SYNC, 0, id="killed-by-us"
        ),
    ],
)
def test_pod_updated(old: Pod, new: Pod, siblings: dict[str, Pod], event: Event, exit_code: int) -> None:
    request = rq.for_pod_updated(old, new, "job-uid", JOB, siblings)
    assert request.event == event and request.exit_code == exit_code
    assert request.previous_phase == (old.status.phase if old.status else "")


@pytest.mark.parametrize(
    ("gone", "event"), [(pod(phase="Running"), Event.POD_EVICTED), (pod(out_of_sync=True), Event.OUT_OF_SYNC)]
)
def test_pod_deleted(gone: Pod, event: Event) -> None:
    request = rq.for_pod_deleted(gone, "job-uid")
    assert request.event == event and request.pod is gone


def podgroup(phase: str) -> PodGroup:
    return PodGroup(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name="j-job-uid", namespace="ns"),
        status=PodGroupStatus(phase=phase),
    )


def test_podgroup_phase_changes_wake_the_job() -> None:
    assert rq.for_podgroup_changed(podgroup("Pending"), podgroup("Inqueue")) is not None
    assert rq.for_podgroup_changed(podgroup("Inqueue"), podgroup("Inqueue")) is None
    unknown = rq.for_podgroup_changed(podgroup("Running"), podgroup("Unknown"))
    assert unknown is not None and unknown.event == Event.JOB_UNKNOWN


def test_status_echoes_of_our_own_writes_are_ignored() -> None:
    import msgspec

    running = msgspec.structs.replace(JOB, status=JobStatus(state=JobState(phase="Running"), running=1))
    counted = msgspec.structs.replace(running, status=JobStatus(state=JobState(phase="Running"), running=2))
    assert rq.for_job_changed(running, counted) is None
    scaled = msgspec.structs.replace(running, spec=JobSpec(tasks=[TaskSpec(name="w", replicas=3)]))
    request = rq.for_job_changed(running, scaled)
    assert request is not None and request.event == Event.OUT_OF_SYNC
    assert rq.for_job_changed(None, JOB) is not None


def test_commands_carry_their_action() -> None:
    request = rq.for_command("AbortJob")
    assert request.event == Event.COMMAND_ISSUED and request.action == "AbortJob"
