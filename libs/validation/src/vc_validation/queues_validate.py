"""Queue validation on CREATE, UPDATE and DELETE (Volcano `queues/validate/validate_queue.go`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from vc_proto.scheduling import Queue, QueueSpec
from vc_proto.vocabulary import DEFAULT_QUEUE, ROOT_QUEUE, QueueState
from vc_validation.context import AdmissionContext
from vc_validation.limits import MAX_LABEL_NAME_LENGTH, MAX_QUEUE_WEIGHT
from vc_validation.names import dns1123_subdomain_errors, format_errors, validate_metadata_bounds
from vc_validation.queue_hierarchy import (
    children_of,
    parent_busy_reason,
    parent_of,
    validate_hierarchy_resources,
    validate_parent,
)
from vc_validation.queue_resources import guarantee_of, validate_queue_resources
from vc_validation.queues_mutate import HIERARCHY_ANNOTATION, HIERARCHY_WEIGHTS_ANNOTATION
from vc_validation.tenancy import validate_allowed_namespaces
from vc_validation.verdict import Violation

DEQUEUE_STRATEGIES = frozenset({"fifo", "traverse"})


def validate_queue_write(queue: Queue, old: Queue | None, ctx: AdmissionContext) -> list[Violation]:
    """CREATE (`old` is None) or UPDATE. Expects a CREATE already defaulted by `mutate_queue`."""
    spec = queue.spec or QueueSpec()
    violations = [
        *_validate_name(queue),
        *validate_metadata_bounds(queue.metadata),
        *_validate_spec_fields(spec),
        *validate_queue_resources(spec),
        *_validate_state(queue),
        *validate_allowed_namespaces(spec.allowed_namespaces, path="spec.allowedNamespaces"),
        *_validate_hierarchy_annotations(queue, ctx.queues),
    ]
    if violations:
        return violations
    return list(_validate_tree(queue, old, ctx))


def validate_queue_delete(queue: Queue, ctx: AdmissionContext) -> list[Violation]:
    name = queue.metadata.name or ""
    if name in (DEFAULT_QUEUE, ROOT_QUEUE):
        return [Violation("metadata.name", "queue-protected", f"`{name}` queue can not be deleted")]
    violations = []
    if ctx.queue_has_workloads(name):
        violations.append(
            Violation(
                "metadata.name",
                "queue-has-workloads",
                f"queue {name} can not be deleted because it has jobs or podgroups",
            )
        )
    children = [child.metadata.name or "" for child in children_of(ctx.queues, name)]
    if children:
        violations.append(
            Violation(
                "metadata.name",
                "queue-has-children",
                f"queue {name} can not be deleted because it has {len(children)} child queues: {', '.join(children)}",
            )
        )
    return violations


def _validate_name(queue: Queue) -> Iterator[Violation]:
    # A queue's name is the `volcano.sh/queue-name` label of every pod in it, hence the 63 limit.
    name = queue.metadata.name or ""
    if errors := dns1123_subdomain_errors(name, max_length=MAX_LABEL_NAME_LENGTH):
        yield Violation("metadata.name", "queue-name", format_errors(errors))


def _validate_spec_fields(spec: QueueSpec) -> Iterator[Violation]:
    if spec.weight is not None and not 1 <= spec.weight <= MAX_QUEUE_WEIGHT:
        yield Violation(
            "spec.weight", "queue-weight", f"queue weight must be between 1 and {MAX_QUEUE_WEIGHT}, got {spec.weight}"
        )
    if spec.priority is not None and spec.priority < 0:
        yield Violation("spec.priority", "queue-priority", "must be greater than or equal to 0")
    if spec.dequeue_strategy not in (None, "", *DEQUEUE_STRATEGIES):
        yield Violation("spec.dequeueStrategy", "queue-dequeue-strategy", "must be one of [fifo traverse]")
    if spec.parent and (errors := dns1123_subdomain_errors(spec.parent, max_length=MAX_LABEL_NAME_LENGTH)):
        yield Violation("spec.parent", "queue-parent-name", format_errors(errors))


def _validate_state(queue: Queue) -> Iterator[Violation]:
    state = queue.status.state if queue.status else None
    if state and state not in (QueueState.OPEN, QueueState.CLOSED):
        yield Violation("status.state", "queue-state", "queue state must be in [Open Closed]")


def _validate_hierarchy_annotations(queue: Queue, queues: Mapping[str, Queue]) -> Iterator[Violation]:
    """hierarchical DRF's `volcano.sh/hierarchy` and `-weights`: same length, positive weights, no nesting."""
    annotations = queue.metadata.annotations or {}
    path = annotations.get(HIERARCHY_ANNOTATION, "")
    weights = annotations.get(HIERARCHY_WEIGHTS_ANNOTATION, "")
    if not path and not weights:
        return
    field = "metadata.annotations"
    if len(path.split("/")) != len(weights.split("/")):
        yield Violation(
            field,
            "queue-hierarchy",
            f"{HIERARCHY_ANNOTATION} must have the same length with {HIERARCHY_WEIGHTS_ANNOTATION}",
        )
        return
    for weight in weights.split("/"):
        problem = _weight_problem(weight, weights)
        if problem:
            yield Violation(field, "queue-hierarchy-weights", problem)
            return
    for other_name, other in sorted(queues.items()):
        other_path = (other.metadata.annotations or {}).get(HIERARCHY_ANNOTATION, "")
        if other_path and other_name != queue.metadata.name and other_path.startswith(path + "/"):
            yield Violation(
                field,
                "queue-hierarchy",
                f"{path} is not allowed to be in the sub path of {other_path} of queue {other_name}",
            )
            return


def _weight_problem(weight: str, weights: str) -> str | None:
    try:
        value = float(weight)
    except ValueError:
        return f"{weight[:32]} in the {weights[:256]} is invalid number"
    if not value > 0:  # also refuses NaN
        return f"{weight[:32]} in the {weights[:256]} must be larger than 0"
    return None


def _validate_tree(queue: Queue, old: Queue | None, ctx: AdmissionContext) -> Iterator[Violation]:
    name = queue.metadata.name or ""
    queues = {**ctx.queues, name: queue}
    if old is None or parent_of(old) != parent_of(queue):
        parent = parent_of(queue)
        busy = None
        if parent is not None and parent in queues:
            busy = parent_busy_reason(queues[parent], name, queues, has_workloads=ctx.queue_has_workloads(parent))
        yield from validate_parent(queue, queues, max_depth=ctx.max_queue_depth, parent_busy=busy)
    if old is not None and name == ROOT_QUEUE and _resources_changed(queue, old):
        yield Violation(
            "spec",
            "root-queue-protected",
            "root queue's resource attributes (capability, deserved, guarantee) cannot be modified",
        )
    if name != ROOT_QUEUE and (old is None or parent_of(old) != parent_of(queue) or _resources_changed(queue, old)):
        yield from validate_hierarchy_resources(queue, queues)


def _resources_changed(new: Queue, old: Queue) -> bool:
    n, o = new.spec or QueueSpec(), old.spec or QueueSpec()
    return (n.capability, n.deserved, guarantee_of(n)) != (o.capability, o.deserved, guarantee_of(o))
