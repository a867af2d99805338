"""Queue tenancy for plain pods: the queue a pod's PodGroup will be in must admit the pod's namespace.

A pod for a Volcano scheduler that names no PodGroup gets one from the podgroup controller, in the
queue of the pod's `scheduling.volcano.sh/queue-name` annotation, else the namespace's default (its own
`scheduling.volcano.sh/queue-name` annotation, else `default`). Refusing only that PodGroup would leave
the pod stored, waiting for a group it can never have; refusing the pod says so where it is submitted,
with the same rule and message as a Job's or a PodGroup's `spec.queue`. A pod that names its PodGroup
(a vcjob's pods) is in that group's queue, checked when the group was admitted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from vc_proto.core import Pod
from vc_proto.scheduling import Queue
from vc_proto.vocabulary import DEFAULT_QUEUE, GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from vc_validation.context import AdmissionContext
from vc_validation.pods import is_volcano_pod, validate_pod_create
from vc_validation.tenancy import namespace_violation
from vc_validation.verdict import Violation

DEFAULT_NAMESPACE = "default"
QUEUE_FIELD = f"metadata.annotations[{QUEUE_NAME_ANNOTATION}]"


def gets_podgroup(pod: Pod, scheduler_names: Sequence[str]) -> bool:
    """The podgroup controller makes this pod's PodGroup (it names none, and a Volcano scheduler serves it)."""
    return is_volcano_pod(pod, scheduler_names) and GROUP_NAME_ANNOTATION not in (pod.metadata.annotations or {})


def pod_queue(pod: Pod, namespace_annotations: Mapping[str, str]) -> str:
    """The queue the pod's PodGroup is put in: the pod's annotation, else the namespace's default."""
    named = (pod.metadata.annotations or {}).get(QUEUE_NAME_ANNOTATION)
    return named or namespace_annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE


def validate_pod_queue(
    pod: Pod,
    queues: Mapping[str, Queue],
    namespace_annotations: Mapping[str, str],
    scheduler_names: Sequence[str],
) -> Iterator[Violation]:
    if not gets_podgroup(pod, scheduler_names):
        return
    namespace = pod.metadata.namespace or DEFAULT_NAMESPACE
    refused = namespace_violation(queues, pod_queue(pod, namespace_annotations), namespace, path=QUEUE_FIELD)
    if refused is not None:
        yield refused


def validate_pod_submission(pod: Pod, ctx: AdmissionContext) -> list[Violation]:
    """Every rule of a pod's CREATE: what the pod must be, and the queue its PodGroup will draw on. Both
    front-ends (the embedded write API and the Kubernetes webhook) call this."""
    namespace = ctx.namespace_annotations(pod.metadata.namespace or DEFAULT_NAMESPACE)
    return [
        *validate_pod_create(pod, ctx.scheduler_names),
        *validate_pod_queue(pod, ctx.queues, namespace, ctx.scheduler_names),
    ]
