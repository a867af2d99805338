"""Tenancy (a Tephra addition, not in Volcano): which namespaces may submit work to a queue.

A queue lists the namespaces allowed to submit Jobs and PodGroups to it in `spec.allowedNamespaces`:

- absent (`null`): every namespace may submit (Volcano's behaviour, and the default);
- a list: only those namespaces; `"*"` in the list allows every namespace;
- an empty list `[]`: no namespace may submit (a queue reserved as a parent, or being drained).

The restriction is hierarchical: a namespace must be allowed by the target queue *and by every
ancestor* up its `spec.parent` chain, so a team's parent queue bounds all of its sub-queues.
Admission enforces it on Job and PodGroup CREATE (see docs/tenancy.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from vc_proto.scheduling import Queue
from vc_validation.limits import MAX_ALLOWED_NAMESPACES, MAX_QUEUE_DEPTH
from vc_validation.names import dns1123_label_errors, format_errors
from vc_validation.verdict import Violation

ANY_NAMESPACE: Final = "*"


def allows_namespace(allowed: Sequence[str] | None, namespace: str) -> bool:
    if allowed is None:
        return True
    return ANY_NAMESPACE in allowed or namespace in allowed


def denying_queue(queues: Mapping[str, Queue], queue_name: str, namespace: str) -> str | None:
    """The first queue on the path from `queue_name` up to the root that refuses `namespace`, if any."""
    current: str | None = queue_name
    # Bounded walk: a parent loop in stored data must not make admission spin.
    for _ in range(MAX_QUEUE_DEPTH * 4):
        if current is None or current not in queues:
            return None
        spec = queues[current].spec
        if not allows_namespace(spec.allowed_namespaces if spec else None, namespace):
            return current
        current = spec.parent if spec else None
    return None


def namespace_violation(queues: Mapping[str, Queue], queue_name: str, namespace: str, *, path: str) -> Violation | None:
    refusing = denying_queue(queues, queue_name, namespace)
    if refusing is None:
        return None
    where = "" if refusing == queue_name else f" (restricted by its ancestor `{refusing}`)"
    return Violation(
        path,
        "queue-namespace-allowed",
        f"namespace `{namespace}` is not allowed to submit to queue `{queue_name}`{where}",
    )


def validate_allowed_namespaces(allowed: Sequence[str] | None, *, path: str) -> Iterator[Violation]:
    """The list itself, on Queue create/update: bounded, namespace names or `*`."""
    if allowed is None:
        return
    if len(allowed) > MAX_ALLOWED_NAMESPACES:
        yield Violation(path, "allowed-namespaces-count", f"may not list more than {MAX_ALLOWED_NAMESPACES} namespaces")
        return
    for index, name in enumerate(allowed):
        if name != ANY_NAMESPACE and (errors := dns1123_label_errors(name)):
            yield Violation(f"{path}[{index}]", "allowed-namespace-name", format_errors(errors))
