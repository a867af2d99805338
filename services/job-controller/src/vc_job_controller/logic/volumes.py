"""A job's `spec.volumes` (Volcano's createJobIOIfNotExist): the claims it mounts, and those it creates.

Each entry names an existing PersistentVolumeClaim (`volumeClaimName`) or describes a new one
(`volumeClaim`, a PersistentVolumeClaimSpec). A new claim is created once, when the job is initiated:
named `names.claim_name` (deterministic, not written into the spec as Volcano does), controlled by the
job (gc deletes it with the job, as Kubernetes' garbage collector does Volcano's), and recorded in
`status.controlledResources["volume-pvc-<name>"]` as Volcano does. An existing claim is not checked here:
a pod mounting a claim that does not exist waits in the scheduler with kube-scheduler's message
(`persistentvolumeclaim "<name>" not found`) where Volcano's controller keeps the job Pending with an
error; both create the pods' claims only when they exist.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from vc_job_controller.logic import names
from vc_job_controller.logic.ownership import owned_meta
from vc_job_controller.logic.plan import ObjectWrite, WriteMode
from vc_proto.batch import Job, JobSpec
from vc_proto.core import CORE_V1, PersistentVolumeClaim, PersistentVolumeClaimSpec

CONTROLLED_PREFIX = "volume-pvc-"


def claims(job: Job) -> Iterator[tuple[str, str, bool]]:
    """(claim name, mount path, whether the job creates it) per volume, in spec order."""
    name, uid = job.metadata.name or "", job.metadata.uid or ""
    for index, volume in enumerate((job.spec or JobSpec()).volumes or []):
        if volume.volume_claim_name:
            yield volume.volume_claim_name, volume.mount_path or "", False
        elif volume.volume_claim is not None:
            yield names.claim_name(name, uid, index), volume.mount_path or "", True


def claim_spec(raw: dict[str, object]) -> PersistentVolumeClaimSpec | None:
    """The typed spec of a `volumeClaim`; None when it does not decode (admission refuses those)."""
    try:
        return msgspec.convert(raw, PersistentVolumeClaimSpec, strict=False)
    except msgspec.ValidationError:
        return None


def claims_to_create(job: Job, controlled: dict[str, str]) -> tuple[list[ObjectWrite], dict[str, str]]:
    """The claims not yet recorded in `controlled`, and the entries recording them."""
    writes: list[ObjectWrite] = []
    recorded: dict[str, str] = {}
    volumes = (job.spec or JobSpec()).volumes or []
    for index, volume in enumerate(volumes):
        if volume.volume_claim_name or volume.volume_claim is None:
            continue
        name = names.claim_name(job.metadata.name or "", job.metadata.uid or "", index)
        spec = claim_spec(volume.volume_claim)
        if controlled.get(CONTROLLED_PREFIX + name) == name or spec is None:
            continue
        claim = PersistentVolumeClaim(api_version=CORE_V1, metadata=owned_meta(job, name), spec=spec)
        writes.append(ObjectWrite(obj=claim, mode=WriteMode.CREATE_IF_ABSENT))
        recorded[CONTROLLED_PREFIX + name] = name
    return writes, recorded
