"""Hierarchical queues through `spec.parent` (Volcano `validateHierarchicalQueue` and
`validateHierarchicalQueueResources`).

Structure: a queue is not its own parent or ancestor, the tree is at most `max_queue_depth` deep, the
parent exists and holds no work of its own. Resources: a capability never exceeds the nearest ancestor's,
a parent's capability covers its descendants', and children's guarantee/deserved sums fit the parent's.

One deliberate difference from Volcano: a resource the parent does not declare does not constrain its
children (Volcano treats an undeclared parent deserved/guarantee as zero, so a parent without `deserved`
could have no child with one). Undeclared means unlimited, as it does for capability.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fractions import Fraction

from vc_core.resources import Resources, add
from vc_proto.scheduling import Queue
from vc_validation.queue_resources import guarantee_of, safe_resources, show, show_resources
from vc_validation.verdict import Violation

_ROOTS = (None, "", "root")


def parent_of(queue: Queue) -> str | None:
    parent = queue.spec.parent if queue.spec else None
    return None if parent in _ROOTS else parent


def children_of(queues: Mapping[str, Queue], name: str) -> list[Queue]:
    return [q for key, q in sorted(queues.items()) if key != name and parent_of(q) == name]


def validate_parent(
    queue: Queue, queues: Mapping[str, Queue], *, max_depth: int, parent_busy: str | None
) -> Iterator[Violation]:
    """Structure checks, for CREATE or a changed parent. `queues` already holds the new version of `queue`."""
    name, parent = queue.metadata.name or "", parent_of(queue)
    if parent is None:
        return
    if parent == name:
        yield Violation("spec.parent", "queue-parent-self", f"queue {name} cannot use itself as parent")
        return
    problem = _ancestry_problem(name, parent, queues, max_depth=max_depth)
    if problem is not None:
        yield problem
        return
    if parent_busy:
        yield Violation(
            "spec.parent",
            "queue-parent-has-workloads",
            f"queue {parent} cannot be the parent queue of queue {name} because it has {parent_busy}",
        )


def _ancestry_problem(name: str, parent: str, queues: Mapping[str, Queue], *, max_depth: int) -> Violation | None:
    """Walk up from `parent`: too deep, back to `name` (a cycle), or an ancestor that does not exist."""
    depth = 1
    current: str | None = parent
    while current is not None:
        depth += 1
        if depth > max_depth:
            return Violation(
                "spec.parent", "queue-depth", f"queue {name} exceeds the maximum allowed depth of {max_depth}"
            )
        if current == name:
            return Violation("spec.parent", "queue-parent-cycle", f"queue {name} cannot be an ancestor of itself")
        if current not in queues:
            return Violation(
                "spec.parent",
                "queue-parent-exists",
                f'failed to get parent queue of queue {name}: queue.scheduling.volcano.sh "{current}" not found',
            )
        current = parent_of(queues[current])
    return None


def parent_busy_reason(parent: Queue, child: str, queues: Mapping[str, Queue], *, has_workloads: bool) -> str | None:
    """Why `parent` cannot take children: work submitted to it, or (Volcano's check, for a queue that has
    no children yet, since allocation is propagated up to ancestors) pods allocated in it."""
    if has_workloads:
        return "jobs or podgroups"
    if any(c.metadata.name != child for c in children_of(queues, parent.metadata.name or "")):
        return None
    pods = safe_resources(parent.status.allocated if parent.status else None).get("pods", Fraction(0))
    return f"allocated Pods: {int(pods)}" if pods > 0 else None


def validate_hierarchy_resources(queue: Queue, queues: Mapping[str, Queue]) -> Iterator[Violation]:
    parent_name = parent_of(queue)
    if parent_name is not None and parent_name in queues:
        yield from _against_ancestors(queue, queues)
        yield from _children_sums(queues[parent_name], children_of(queues, parent_name), prefix="parent queue")
    children = children_of(queues, queue.metadata.name or "")
    if children:
        yield from _capability_covers_descendants(queue, children, queues)
        yield from _children_sums(queue, children, prefix="queue")


def _against_ancestors(queue: Queue, queues: Mapping[str, Queue]) -> Iterator[Violation]:
    name = queue.metadata.name or ""
    for resource, amount in safe_resources(queue.spec.capability if queue.spec else None).items():
        limit = _nearest_ancestor_capability(queue, resource, queues)
        if limit is not None and amount > limit:
            yield Violation(
                f"spec.capability.{resource}",
                "queue-capability-ancestor",
                f"queue {name} capability[{resource}]={show(resource, amount)} "
                f"exceeds its ancestor's capability={show(resource, limit)}",
            )


def _nearest_ancestor_capability(queue: Queue, resource: str, queues: Mapping[str, Queue]) -> Fraction | None:
    current, steps = parent_of(queue), 0
    while current is not None and current in queues and steps < len(queues):
        ancestor = queues[current]
        value = safe_resources(ancestor.spec.capability if ancestor.spec else None).get(resource)
        if value:
            return value
        current, steps = parent_of(ancestor), steps + 1
    return None


def _capability_covers_descendants(
    queue: Queue, children: list[Queue], queues: Mapping[str, Queue]
) -> Iterator[Violation]:
    name = queue.metadata.name or ""
    for resource, amount in safe_resources(queue.spec.capability if queue.spec else None).items():
        largest = max(
            (_subtree_max_capability(child, resource, queues, set()) for child in children), default=Fraction(0)
        )
        if amount < largest:
            yield Violation(
                f"spec.capability.{resource}",
                "queue-capability-descendants",
                f"queue {name} capability[{resource}]={show(resource, amount)} "
                f"is smaller than its descendants' max capability={show(resource, largest)}",
            )


def _subtree_max_capability(queue: Queue, resource: str, queues: Mapping[str, Queue], seen: set[str]) -> Fraction:
    name = queue.metadata.name or ""
    if name in seen:
        return Fraction(0)
    seen.add(name)
    own = safe_resources(queue.spec.capability if queue.spec else None).get(resource)
    if own:
        return own
    return max(
        (_subtree_max_capability(c, resource, queues, seen) for c in children_of(queues, name)), default=Fraction(0)
    )


def _children_sums(parent: Queue, children: list[Queue], *, prefix: str) -> Iterator[Violation]:
    spec = parent.spec
    limits = {
        "guarantee": safe_resources(guarantee_of(spec)),
        "deserved": safe_resources(spec.deserved if spec else None),
    }
    for kind, limit in limits.items():
        total = _sum(children, kind)
        if any(total.get(r, Fraction(0)) > v for r, v in limit.items()):
            shown = {r: total.get(r, Fraction(0)) for r in limit}
            yield Violation(
                f"spec.{'guarantee.resource' if kind == 'guarantee' else 'deserved'}",
                f"queue-children-{kind}",
                f"{prefix} {parent.metadata.name} validation failed: "
                f"sum of children's {kind} ({show_resources(shown)}) "
                f"exceeds parent's {kind} limit ({show_resources(limit)})",
            )


def _sum(children: list[Queue], kind: str) -> Resources:
    lists = [
        safe_resources(guarantee_of(c.spec) if kind == "guarantee" else (c.spec.deserved if c.spec else None))
        for c in children
    ]
    return add(*lists)
