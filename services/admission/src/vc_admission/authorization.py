"""PURE: may this caller make this write? Who asks is the NATS identity (from the request's subject,
which the server vouches for), never a claim inside the request.

- Cluster-scoped kinds (Queue, Node, PriorityClass, HyperNode: every kind without a namespace, so a
  kind added later is covered too), ResourceQuotas (a namespace's limit is not its
  tenant's to lift, as Kubernetes' `admin` and `edit` roles may only read them) and Commands that act on
  a queue: admins only. A tenant may set PodDisruptionBudgets over its own pods, as those roles may.
- Namespaced kinds: an admin anywhere; a tenant only in its own namespaces. Queue tenancy
  (`spec.allowedNamespaces`) then judges the object's namespace, which is therefore one the caller
  really holds.
- Objects Tephra manages are nobody's to write: whatever carries Tephra's label
  (`app.kubernetes.io/managed-by: tephra`) or a controller ownerReference (a job's pods, PodGroup,
  ssh Secret, svc ConfigMap and Services) cannot be created, replaced or deleted through this API,
  by a tenant or an admin; deleting or changing the owning Job is the way. Commands are exempt:
  their ownerReference names their target (as Volcano's vcctl writes it), not a controller.
"""

from __future__ import annotations

from vc_core.errors import PolicyViolation
from vc_proto.bus import Command
from vc_proto.kinds import KINDS, KubeObject
from vc_proto.vocabulary import MANAGED_BY_LABEL, MANAGED_BY_TEPHRA
from vc_security.registry import Person

ADMIN_ONLY_KINDS = frozenset({"ResourceQuota"})  # besides every cluster-scoped kind


def authorize(
    caller: Person, operation: str, kind: str, namespace: str | None, *, new: KubeObject | None, old: KubeObject | None
) -> None:
    """Raises PolicyViolation saying who may not do what, and why."""
    if (kind in ADMIN_ONLY_KINDS or not KINDS[kind].namespaced) and caller.role != "admin":
        raise PolicyViolation(f"{caller.identity} may not {operation} a {kind}: {kind}s are an admin's to manage")
    if KINDS[kind].namespaced and caller.role != "admin" and namespace not in caller.namespaces:
        held = ", ".join(sorted(caller.namespaces)) or "none"
        raise PolicyViolation(
            f"{caller.identity} may not {operation} a {kind} in namespace {namespace!r} (its namespaces: {held})"
        )
    if isinstance(new, Command) and new.target is not None and new.target.kind == "Queue" and caller.role != "admin":
        raise PolicyViolation(
            f"{caller.identity} may not {operation} a Command on a queue: queues are an admin's to manage"
        )
    for obj in (old, new):
        reason = managed_by_tephra(obj)
        if reason:
            name = f"{namespace}/{obj.metadata.name}" if namespace else obj.metadata.name  # type: ignore[union-attr]
            raise PolicyViolation(
                f"{kind} {name!r} {reason}: only Tephra writes it (change or delete its owner instead)"
            )


def managed_by_tephra(obj: KubeObject | None) -> str:
    """Why `obj` is Tephra's own (a phrase), or "" when it is not."""
    if obj is None or isinstance(obj, Command):
        return ""
    meta = obj.metadata
    if (meta.labels or {}).get(MANAGED_BY_LABEL) == MANAGED_BY_TEPHRA:
        return f"is managed by Tephra (label {MANAGED_BY_LABEL}={MANAGED_BY_TEPHRA})"
    for ref in meta.owner_references or []:
        if ref.controller:
            return f"is controlled by {ref.kind} {ref.name!r}"
    return ""
