"""The one entry point the front-ends call: default (on CREATE), then validate, then decide.

    verdict = review("CREATE", job, None, ctx)
    if verdict.allowed: store(verdict.patched)  # else report verdict.violations

Job, Queue, PodGroup, Pod, JobFlow, JobTemplate, CronJob, HyperNode, ResourceQuota and PodDisruptionBudget
are reviewed; any other kind passes unchanged, as an admission webhook that is not registered for it would let
it through.
"""

from __future__ import annotations

from typing import Final, Literal

from vc_proto.batch import Job
from vc_proto.core import Pod, ResourceQuota
from vc_proto.cronjob import CronJob
from vc_proto.flow import JobFlow, JobTemplate
from vc_proto.policy import PodDisruptionBudget
from vc_proto.scheduling import PodGroup, Queue
from vc_proto.topology import HyperNode
from vc_proto.vocabulary import DEFAULT_SCHEDULER_NAME
from vc_validation.context import AdmissionContext
from vc_validation.disruption_budgets import validate_pod_disruption_budget
from vc_validation.hypernodes import validate_hypernode
from vc_validation.jobs_mutate import mutate_job
from vc_validation.jobs_update import validate_job_update
from vc_validation.jobs_validate import validate_job_create
from vc_validation.podgroups import mutate_podgroup, validate_podgroup_create
from vc_validation.pods_mutate import mutate_pod
from vc_validation.pods_tenancy import validate_pod_submission
from vc_validation.queues_mutate import mutate_queue
from vc_validation.queues_validate import validate_queue_delete, validate_queue_write
from vc_validation.resource_quotas import validate_resource_quota
from vc_validation.simulation import validate_sim_annotations
from vc_validation.verdict import Verdict, allow, decide, deny
from vc_validation.workloads_review import review_workload

Operation = Literal["CREATE", "UPDATE", "DELETE"]
OPERATIONS: Final = frozenset({"CREATE", "UPDATE", "DELETE"})


def review(operation: Operation, obj: object | None, old: object | None, ctx: AdmissionContext) -> Verdict:
    """`obj` is the submitted object (for DELETE, the object being deleted, or pass it as `old`)."""
    if operation not in OPERATIONS:
        expected = "expect operation to be `CREATE`, `UPDATE` or `DELETE`"
        return deny("request", "operation", f"invalid operation `{operation}`, {expected}")
    subject = obj if obj is not None else old
    match subject:
        case Job():
            return review_job(operation, subject, old, ctx)
        case Queue():
            return review_queue(operation, subject, old, ctx)
        case PodGroup():
            return review_podgroup(operation, subject, ctx)
        case Pod():
            return review_pod(operation, subject, ctx)
        case JobFlow() | JobTemplate() | CronJob():
            return review_workload(operation, subject, ctx)
        case HyperNode():
            return allow(None) if operation == "DELETE" else decide(validate_hypernode(subject), subject)
        case ResourceQuota():
            return allow(None) if operation == "DELETE" else decide(validate_resource_quota(subject), subject)
        case PodDisruptionBudget():
            return allow(None) if operation == "DELETE" else decide(validate_pod_disruption_budget(subject), subject)
        case None:
            return deny("request", "object-required", "the request carries no object")
        case _:
            return allow(None if operation == "DELETE" else subject)


def review_job(operation: Operation, job: Job, old: object | None, ctx: AdmissionContext) -> Verdict:
    if operation == "CREATE":
        default_scheduler = ctx.scheduler_names[0] if ctx.scheduler_names else DEFAULT_SCHEDULER_NAME
        patched = mutate_job(job, scheduler_name=default_scheduler)
        return decide(validate_job_create(patched, ctx), patched)
    if operation == "UPDATE":
        if not isinstance(old, Job):
            return deny("request", "old-object-required", "an update must carry the stored job")
        return decide(validate_job_update(job, old), job)
    return allow(None)


def review_queue(operation: Operation, queue: Queue, old: object | None, ctx: AdmissionContext) -> Verdict:
    if operation == "CREATE":
        patched = mutate_queue(queue)
        return decide(validate_queue_write(patched, None, ctx), patched)
    if operation == "UPDATE":
        if not isinstance(old, Queue):
            return deny("request", "old-object-required", "an update must carry the stored queue")
        return decide(validate_queue_write(queue, old, ctx), queue)
    return decide(validate_queue_delete(queue, ctx), None)


def review_podgroup(operation: Operation, podgroup: PodGroup, ctx: AdmissionContext) -> Verdict:
    # Volcano validates PodGroups on CREATE only; updates come from the controllers and the scheduler.
    if operation != "CREATE":
        return allow(podgroup if operation == "UPDATE" else None)
    patched = mutate_podgroup(podgroup, ctx)
    return decide(validate_podgroup_create(patched, ctx), patched)


def review_pod(operation: Operation, pod: Pod, ctx: AdmissionContext) -> Verdict:
    if operation == "UPDATE":  # annotations may change on a running pod; node-sim's must stay readable
        return decide(validate_sim_annotations(pod.metadata.annotations, path="metadata.annotations"), pod)
    if operation != "CREATE":
        return allow(None)
    patched = mutate_pod(pod, resource_groups=ctx.resource_groups, queue_gate=ctx.queue_allocation_gate)
    return decide(validate_pod_submission(patched, ctx), patched)
