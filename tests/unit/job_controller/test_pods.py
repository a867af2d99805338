"""Pod construction (Volcano createJobPod, semantics 2.6): name, labels, annotations, owner, spec."""

from __future__ import annotations

from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import UID, job, load_seed, task, tasks_of, with_spec
from vc_job_controller.logic.pods import build_job_pod
from vc_proto.batch import PartitionPolicySpec, VolumeSpec
from vc_proto.meta import ObjectMeta


def test_seed_mpi_master_pod_labels_and_annotations_are_volcanos() -> None:
    j = load_seed("lm-mpi-job.yaml")
    j = replace(with_spec(j, queue="default"), status=None)
    master = tasks_of(j)[0]
    p = build_job_pod(j, master, 0)
    assert p.metadata.name == "lm-mpi-job-mpimaster-0"
    assert p.metadata.namespace == "default"
    assert p.metadata.annotations == {
        "volcano.sh/task-index": "0",
        "volcano.sh/task-spec": "mpimaster",
        "scheduling.k8s.io/group-name": f"lm-mpi-job-{UID}",
        "volcano.sh/job-name": "lm-mpi-job",
        "volcano.sh/queue-name": "default",
        "volcano.sh/job-version": "0",
        "volcano.sh/template-uid": "lm-mpi-job-mpimaster",
        "volcano.sh/job-retry-count": "0",
    }
    assert p.metadata.labels == {
        "volcano.sh/task-index": "0",
        "volcano.sh/job-name": "lm-mpi-job",
        "volcano.sh/task-spec": "mpimaster",
        "volcano.sh/job-namespace": "default",
        "volcano.sh/queue-name": "default",
    }
    owner = (p.metadata.owner_references or [])[0]
    assert (owner.api_version, owner.kind, owner.uid, owner.controller) == (
        "batch.volcano.sh/v1alpha1",
        "Job",
        UID,
        True,
    )
    assert p.spec is not None and p.spec.scheduler_name == "volcano"
    assert p.spec.restart_policy == "OnFailure" and p.spec.image_pull_secrets == [{"name": "default-secret"}]


def test_pod_carries_job_version_retry_count_and_copied_job_metadata() -> None:
    j = job([task("w", 2, topology_policy="best-effort")], phase="Restarting", version=3, retry_count=2)
    annotations = {
        "volcano.sh/preemptable": "true",
        "volcano.sh/revocable-zone": "*",
        "volcano.sh/jdb-min-available": "1",
        "volcano.sh/jdb-max-unavailable": "2",
        "unrelated": "x",
    }
    labels = {"volcano.sh/preemptable": "false", "volcano.sh/cooldown-time": "60s", "team": "a"}
    j = replace(j, metadata=replace(j.metadata, annotations=annotations, labels=labels))
    p = build_job_pod(j, j.spec.tasks[0], 1)  # type: ignore[union-attr, index]
    got = p.metadata.annotations or {}
    assert got["volcano.sh/job-version"] == "3" and got["volcano.sh/job-retry-count"] == "2"
    assert got["volcano.sh/numa-topology-policy"] == "best-effort"
    assert got["volcano.sh/preemptable"] == "true" and got["volcano.sh/revocable-zone"] == "*"
    assert got["volcano.sh/jdb-min-available"] == "1" and "volcano.sh/jdb-max-unavailable" not in got
    assert "unrelated" not in got
    assert (p.metadata.labels or {})["volcano.sh/preemptable"] == "false"
    assert (p.metadata.labels or {})["volcano.sh/cooldown-time"] == "60s"
    assert "team" not in (p.metadata.labels or {})


def test_template_metadata_is_kept_and_volcano_keys_win() -> None:
    t = task("w", 1)
    assert t.template is not None
    meta = ObjectMeta(labels={"app": "x", "volcano.sh/task-index": "9"}, annotations={"a": "b"})
    template = replace(t.template, metadata=meta)
    j = job([replace(t, template=template)])
    p = build_job_pod(j, j.spec.tasks[0], 0)  # type: ignore[union-attr, index]
    assert (p.metadata.labels or {})["app"] == "x" and (p.metadata.labels or {})["volcano.sh/task-index"] == "0"
    assert (p.metadata.annotations or {})["a"] == "b"


def test_scheduler_and_priority_class_fall_back_to_the_job() -> None:
    j = job([task("w", 1)], priority_class_name="high")
    p = build_job_pod(j, j.spec.tasks[0], 0)  # type: ignore[union-attr, index]
    assert p.spec is not None and (p.spec.scheduler_name, p.spec.priority_class_name) == ("volcano", "high")


def test_partition_label_is_index_over_partition_size() -> None:
    j = job([task("w", 6, partition_policy=PartitionPolicySpec(total_partitions=3, partition_size=2))])
    ids = [(build_job_pod(j, j.spec.tasks[0], i).metadata.labels or {})["volcano.sh/partition-id"] for i in range(6)]  # type: ignore[union-attr, index]
    assert ids == ["0", "0", "1", "1", "2", "2"]


def test_job_volumes_are_mounted_in_every_container_with_a_stable_name() -> None:
    j = job([task("w", 1)], volumes=[VolumeSpec(mount_path="/data", volume_claim_name="shared")])
    first = build_job_pod(j, j.spec.tasks[0], 0)  # type: ignore[union-attr, index]
    again = build_job_pod(j, j.spec.tasks[0], 0)  # type: ignore[union-attr, index]
    assert first == again
    assert first.spec is not None and first.spec.volumes is not None
    volume = first.spec.volumes[-1]
    assert volume.persistent_volume_claim == {"claimName": "shared"} and volume.name.startswith("job-")
    mounts = (first.spec.containers or [])[0].volume_mounts or []
    assert [(m.name, m.mount_path) for m in mounts] == [(volume.name, "/data")]


def test_long_names_are_shortened_but_keep_the_index() -> None:
    j = job([task("worker", 2)], name="j" * 70)
    p = build_job_pod(j, j.spec.tasks[0], 1)  # type: ignore[union-attr, index]
    name = p.metadata.name or ""
    assert len(name) <= 63 and name.endswith("-1")
    assert len((p.metadata.annotations or {})["scheduling.k8s.io/group-name"]) <= 63
