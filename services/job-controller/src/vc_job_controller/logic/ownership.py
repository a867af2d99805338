"""Metadata for objects the controller creates on a job's behalf: namespace and a controller ownerRef."""

from __future__ import annotations

from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.vocabulary import MANAGED_BY_LABEL, MANAGED_BY_TEPHRA

JOB_KIND = "Job"


def owner_reference(job: Job) -> OwnerReference:
    """metav1.NewControllerRef(job, JobKind): gc cascades and the controller recognises its objects."""
    return OwnerReference(
        api_version=BATCH_V1ALPHA1,
        kind=JOB_KIND,
        name=job.metadata.name or "",
        uid=job.metadata.uid or "",
        controller=True,
        block_owner_deletion=True,
    )


def owned_meta(job: Job, name: str, *, labels: dict[str, str] | None = None) -> ObjectMeta:
    """The plugins' objects carry Tephra's label: the kube relay mirrors only those Secrets,
    ConfigMaps, Services and NetworkPolicies, and users may not write them (admission)."""
    return ObjectMeta(
        name=name,
        namespace=job.metadata.namespace,
        labels={**(labels or {}), MANAGED_BY_LABEL: MANAGED_BY_TEPHRA},
        owner_references=[owner_reference(job)],
    )
