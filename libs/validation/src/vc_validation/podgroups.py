"""PodGroup defaulting and validation on CREATE (Volcano `podgroups/{mutate,validate}`).

Defaulting: an unset queue is `default` (the CRD default); a PodGroup in `default` moves to the queue
named by its namespace's `scheduling.volcano.sh/queue-name` annotation. Validation: the queue exists,
is Open, is a leaf and admits the namespace (tenancy, see `tenancy.py`); counts are non-negative; the
network topology sets only one of its two tier fields.
"""

from __future__ import annotations

from collections.abc import Iterator

from msgspec.structs import replace

from vc_proto.scheduling import PodGroup, PodGroupSpec
from vc_proto.vocabulary import DEFAULT_QUEUE, QUEUE_NAME_ANNOTATION
from vc_validation.context import AdmissionContext
from vc_validation.job_tasks import TOPOLOGY_BOTH_MESSAGE, validate_network_topology
from vc_validation.limits import MAX_TASKS, MAX_TOTAL_REPLICAS
from vc_validation.names import dns1123_subdomain_errors, format_errors, validate_metadata_bounds
from vc_validation.queue_resources import safe_resources
from vc_validation.submission import validate_submission
from vc_validation.verdict import Violation

DEFAULT_NAMESPACE = "default"


def mutate_podgroup(podgroup: PodGroup, ctx: AdmissionContext) -> PodGroup:
    spec = podgroup.spec or PodGroupSpec()
    queue = spec.queue or DEFAULT_QUEUE
    if queue == DEFAULT_QUEUE:
        namespace = podgroup.metadata.namespace or DEFAULT_NAMESPACE
        queue = ctx.namespace_annotations(namespace).get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE
    return replace(podgroup, spec=replace(spec, queue=queue))


def validate_podgroup_create(podgroup: PodGroup, ctx: AdmissionContext) -> list[Violation]:
    spec = podgroup.spec or PodGroupSpec()
    namespace = podgroup.metadata.namespace or DEFAULT_NAMESPACE
    violations = [
        *_validate_name(podgroup),
        *validate_metadata_bounds(podgroup.metadata),
        *_validate_counts(spec),
        *validate_network_topology(spec.network_topology, path="spec.networkTopology"),
        *_validate_sub_groups(spec),
    ]
    violations.extend(validate_submission(ctx, spec.queue or DEFAULT_QUEUE, namespace, kind="PodGroup"))
    return violations


def _validate_name(podgroup: PodGroup) -> Iterator[Violation]:
    name = podgroup.metadata.name or ""
    if errors := dns1123_subdomain_errors(name):
        yield Violation("metadata.name", "podgroup-name", format_errors(errors))


def _validate_counts(spec: PodGroupSpec) -> Iterator[Violation]:
    if spec.min_member is not None and not 0 <= spec.min_member <= MAX_TOTAL_REPLICAS:
        yield Violation("spec.minMember", "min-member", f"'minMember' must be between 0 and {MAX_TOTAL_REPLICAS}")
    members = spec.min_task_member or {}
    if len(members) > MAX_TASKS:
        yield Violation("spec.minTaskMember", "min-task-member-count", f"may not have more than {MAX_TASKS} tasks")
    for task, count in members.items():
        if not 0 <= count <= MAX_TOTAL_REPLICAS:
            yield Violation(
                f"spec.minTaskMember.{task[:63]}", "min-task-member", f"must be between 0 and {MAX_TOTAL_REPLICAS}"
            )
    if spec.min_resources is not None and spec.min_resources and not safe_resources(spec.min_resources):
        yield Violation("spec.minResources", "quantity", "minResources must be valid quantities")


def _validate_sub_groups(spec: PodGroupSpec) -> Iterator[Violation]:
    policies = spec.sub_group_policy or []
    if len(policies) > MAX_TASKS:
        yield Violation(
            "spec.subGroupPolicy", "sub-group-count", f"may not have more than {MAX_TASKS} sub-group policies"
        )
        return
    for index, policy in enumerate(policies):
        topology = policy.network_topology
        if topology is not None and topology.highest_tier_allowed is not None and topology.highest_tier_name:
            yield Violation(
                f"spec.subGroupPolicy[{index}].networkTopology",
                "network-topology",
                f"in subGroupPolicy '{policy.name}': {TOPOLOGY_BOTH_MESSAGE}",
            )
