"""A job's volumes[].volumeClaim (Volcano's createJobIOIfNotExist): one claim each, created once when the
job is initiated, under a deterministic name, controlled by the job; every pod mounts it; a named claim
is mounted as it is and never created."""

from __future__ import annotations

from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import job, podgroup, run, task, view
from vc_job_controller.logic import names
from vc_job_controller.logic.plan import WriteMode
from vc_job_controller.logic.pods import build_job_pod
from vc_proto.batch import Job, VolumeSpec
from vc_proto.core import PersistentVolumeClaim
from vc_proto.vocabulary import MANAGED_BY_LABEL, JobPhase

CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast"}


def volumed_job(**kw: object) -> Job:
    volumes = [
        VolumeSpec(mount_path="/data", volume_claim=CLAIM),
        VolumeSpec(mount_path="/shared", volume_claim_name="team-shared"),
        VolumeSpec(mount_path="/scratch", volume_claim=CLAIM),
    ]
    return job([task("worker", 2)], volumes=volumes, **kw)  # type: ignore[arg-type]


def claims_written(plan: object) -> list[PersistentVolumeClaim]:
    writes = plan.objects_to_write  # type: ignore[attr-defined]
    return [w.obj for w in writes if isinstance(w.obj, PersistentVolumeClaim)]


def test_the_claim_name_is_deterministic_per_job_uid_and_volume_and_fits_63_characters() -> None:
    assert names.claim_name("job", "uid-1", 0) == names.claim_name("job", "uid-1", 0)
    assert names.claim_name("job", "uid-1", 0) != names.claim_name("job", "uid-1", 1)
    assert names.claim_name("job", "uid-1", 0) != names.claim_name("job", "uid-2", 0)  # a recreated job
    assert names.claim_name("job", "uid-1", 0).startswith("job-pvc-")
    assert len(names.claim_name("j" * 80, "uid-1", 0)) <= 63


def test_a_new_job_creates_one_claim_per_volume_claim_owned_by_it_and_records_them() -> None:
    j = volumed_job()
    plan = run(view(j, {}, None))
    created = claims_written(plan)
    uid = j.metadata.uid or ""
    expected = [names.claim_name("job", uid, 0), names.claim_name("job", uid, 2)]
    assert [c.metadata.name for c in created] == expected  # not the named claim: it exists already
    assert all(w.mode is WriteMode.CREATE_IF_ABSENT for w in plan.objects_to_write)
    for claim in created:
        assert claim.metadata.namespace == j.metadata.namespace
        (owner,) = claim.metadata.owner_references or []
        assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Job", "job", uid, True)
        assert (claim.metadata.labels or {}).get(MANAGED_BY_LABEL) == "tephra"
        assert claim.spec is not None and claim.spec.access_modes == ["ReadWriteOnce"]
        assert claim.spec.resources == {"requests": {"storage": "1Gi"}} and claim.spec.storage_class_name == "fast"
    assert plan.status is not None
    assert plan.status.controlled_resources == {f"volume-pvc-{name}": name for name in expected}


def test_the_claims_are_created_once() -> None:
    j = volumed_job()
    first = run(view(j, {}, None))
    again = run(view(replace(j, status=first.status), {}, podgroup(j, "Pending")))
    assert claims_written(again) == []
    assert again.status is None or again.status.controlled_resources == first.status.controlled_resources  # type: ignore[union-attr]


def test_every_pod_mounts_the_created_and_the_named_claims() -> None:
    j = volumed_job(phase=JobPhase.PENDING)
    plan = run(view(j, {}, podgroup(j, "Inqueue")))
    uid = j.metadata.uid or ""
    assert len(plan.pods_to_create) == 2
    for pod in plan.pods_to_create:
        assert pod.spec is not None
        claims = [v.persistent_volume_claim["claimName"] for v in pod.spec.volumes or [] if v.persistent_volume_claim]
        assert claims == [names.claim_name("job", uid, 0), "team-shared", names.claim_name("job", uid, 2)]
        by_volume = {
            v.name: v.persistent_volume_claim["claimName"] for v in pod.spec.volumes or [] if v.persistent_volume_claim
        }
        mounts = [(by_volume[m.name], m.mount_path) for m in (pod.spec.containers or [])[0].volume_mounts or []]
        assert mounts == list(zip(claims, ["/data", "/shared", "/scratch"], strict=True))
    assert build_job_pod(j, j.spec.tasks[0], 0) == build_job_pod(j, j.spec.tasks[0], 0)  # type: ignore[union-attr, index]


def test_a_job_naming_an_existing_claim_creates_nothing_and_mounts_it() -> None:
    j = job([task("worker", 1)], volumes=[VolumeSpec(mount_path="/d", volume_claim_name="mine")])
    plan = run(view(j, {}, None))
    assert claims_written(plan) == []
    assert plan.status is not None and not plan.status.controlled_resources
    pod = build_job_pod(j, j.spec.tasks[0], 0)  # type: ignore[union-attr, index]
    assert pod.spec is not None
    assert [v.persistent_volume_claim for v in pod.spec.volumes or []] == [{"claimName": "mine"}]
