"""The `kube` store adapter: the ObjectStore port on a real kube-apiserver.

Writes keep the port's compare-and-set promise with the apiserver's own preconditions:
- update sends a JSON merge patch of what changed, carrying `metadata.resourceVersion`; the apiserver
  refuses it with 409 if the object moved on (-> Conflict). A merge patch, not a PUT, so fields Tephra's
  types do not model (server defaults, other controllers' fields) are never wiped.
- status goes to the `/status` subresource where the kind has one (a write to the main resource
  silently ignores status there), also with a resourceVersion precondition.
- `bind` is one `pods/binding` request carrying the uid and the annotations (the apiserver copies a
  Binding's annotations onto the pod). The apiserver refuses a pod that is bound or being deleted; it
  checks the uid only from Kubernetes 1.23 (kubernetes#105913): before that, the uid is checked here
  against the newest version of the pod this store has seen (its own writes, and the NATS mirror's
  watch through `remember`), so a pod recreated under the same name is refused once that version is
  known. An `update` giving a pod a node binds the same way (nodeName is immutable on the pod itself).
- delete carries uid/resourceVersion preconditions; graceful pod deletion is the apiserver's own.

Reads here go to the apiserver. Services read the NATS mirror instead (vc_kube.mirrored); this class
is the port's reference implementation against kube and what the contract suite checks.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import Any, TypeVar, cast

import structlog

from vc_bus.binding import display as pod_display
from vc_bus.binding import refuse_unbindable, required_uid
from vc_bus.decoding import selected
from vc_bus.objects import check_identity, identity
from vc_core.errors import AlreadyExists, Conflict, PreconditionFailed, TemporaryError
from vc_core.store import WatchEvent, WatchOp, refuse_unlistable_namespace
from vc_kube.client import MERGE_PATCH, Json, KubeApiError, KubeClient, map_error, resource_path
from vc_kube.watching import decode_object, from_list_item, list_raw, watch_kind
from vc_proto import codec
from vc_proto.core import Pod
from vc_proto.kinds import KINDS, Kind, KubeObject, kind_of
from vc_proto.selectors import Selector

O = TypeVar("O", bound=KubeObject)  # noqa: E741


def _row(kind: type[O]) -> Kind:
    """The kinds-table row of a store method's `kind` (kind_of takes the union's own types; a bound
    TypeVar is one of them, which mypy cannot see through)."""
    return kind_of(cast("type[KubeObject]", kind))


log = structlog.get_logger(__name__)

# Kinds whose status lives behind the /status subresource (built-ins, and the CRDs in deploy/k8s/crds).
STATUS_SUBRESOURCE = frozenset(
    {"Pod", "Node", "Service", "Job", "PodGroup", "Queue", "JobFlow", "JobTemplate", "CronJob", "HyperNode"}
)
_GENERATE_NAME_ATTEMPTS = 8
# Versions remembered per store (LRU). They are the objects the caller's caches hold anyway; a miss only
# costs the GET that fetches the diff base.
SEEN_MAX = 16384


def decode(kind: Kind, raw: Json) -> KubeObject:
    """Raw apiserver JSON -> typed object. List items lack kind/apiVersion; managedFields is noise."""
    return from_list_item(kind, raw)


def encode(obj: KubeObject) -> Json:
    return codec.to_dict(obj)


def merge_diff(old: Any, new: Any) -> Any:
    """RFC 7386 merge patch turning `old` into `new` (None when equal). Lists are replaced whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        patch: Json = {}
        for key in old.keys() | new.keys():
            if key not in new:
                patch[key] = None
            elif key not in old:
                patch[key] = new[key]
            else:
                sub = merge_diff(old[key], new[key])
                if sub is not None:
                    patch[key] = sub
        return patch or None
    return None if old == new else new


def _display(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


class KubeStore:
    """ObjectStore over a kube-apiserver. `auto_namespaces` creates a missing namespace on first use,
    so Tephra behaves like its NATS backend, where namespaces need no object of their own."""

    def __init__(self, kube: KubeClient, *, auto_namespaces: bool = True) -> None:
        self.kube = kube
        self._auto_namespaces = auto_namespaces
        self._namespaces: dict[str, asyncio.Future[None]] = {}
        # The newest version this store read, wrote or was told of (`remember`), per object. A
        # resourceVersion names exactly one state of an object, so when a caller updates the version
        # seen here, it is the diff base and the GET before the patch is saved (the patch's own
        # precondition still catches a lost race).
        self._seen: OrderedDict[tuple[str, str | None, str], KubeObject] = OrderedDict()

    # --- reads ---------------------------------------------------------------------------------

    async def get(self, kind: type[O], namespace: str | None, name: str) -> O:
        row = _row(kind)
        obj = await self._get(row, namespace, name)
        assert isinstance(obj, kind)
        return obj

    async def _get(self, row: Kind, namespace: str | None, name: str) -> KubeObject:
        row = await self.kube.served(row)
        try:
            data = await self.kube.request_bytes("GET", resource_path(row, namespace, name))
        except KubeApiError as exc:
            raise map_error(exc, row.kind, _display(namespace, name)) from exc
        return self._remember(decode_object(row, data))

    def remember(self, obj: KubeObject) -> None:
        """A version of an object read elsewhere (the NATS mirror's watch): a write of exactly that
        version then needs no GET. An older version than the one known is ignored."""
        self._remember(obj)

    def forget(self, kind: str, namespace: str | None, name: str) -> None:
        """The object was deleted, or changed outside the mirror watch's selection (the version known is stale)."""
        self._seen.pop((kind, namespace, name), None)

    def _remember(self, obj: KubeObject) -> KubeObject:
        key = identity(obj)
        known = self._seen.get(key)
        if known is not None and _revision(known) > _revision(obj):
            return obj  # a watch delivering an older version after this store wrote a newer one
        self._seen[key] = obj
        self._seen.move_to_end(key)
        if len(self._seen) > SEEN_MAX:
            self._seen.popitem(last=False)
        return obj

    async def list(self, kind: type[O], namespace: str | None = None) -> tuple[list[O], int]:
        refuse_unlistable_namespace(namespace)  # the apiserver would answer an empty list
        row = _row(kind)
        items, revision = await list_raw(self.kube, row, namespace)
        out = [decode(row, raw) for raw in items]
        return [o for o in out if isinstance(o, kind)], revision

    def watch(
        self,
        kind: type[O],
        *,
        namespace: str | None = None,
        from_revision: int = 0,
        select: Selector | None = None,
    ) -> AsyncIterator[WatchEvent]:
        refuse_unlistable_namespace(namespace)
        return self._watch(_row(kind), namespace, from_revision, select)

    async def _watch(
        self, row: Kind, namespace: str | None, from_revision: int, select: Selector | None
    ) -> AsyncIterator[WatchEvent]:
        async for change in watch_kind(self.kube, row, namespace=namespace, from_revision=from_revision):
            if change.op is WatchOp.SYNCED:
                yield WatchEvent(WatchOp.SYNCED, change.revision)
                continue
            ns, name = change.namespace, change.name
            if change.op is WatchOp.PUT and change.obj is None:
                continue  # not a valid object here (reported by the watch): keep the last one seen
            obj = change.obj if change.op is WatchOp.PUT else None
            if obj is not None and select is not None and not selected(select, codec.encode(obj), source="kube"):
                yield WatchEvent(WatchOp.DELETE, change.revision, ns, name)  # it left the selection
                continue
            yield WatchEvent(change.op, change.revision, ns, name, obj)

    # --- writes --------------------------------------------------------------------------------

    async def create(self, obj: O) -> O:
        kind, namespace, name = identity(obj)
        row = await self.kube.served(KINDS[kind])
        if row.namespaced and not namespace:
            namespace = "default"
        if name:
            check_identity(kind, namespace, name)
        elif namespace is not None:
            check_identity(kind, namespace, "x")  # the namespace alone; the server generates the name
        body = {**encode(obj), "apiVersion": row.api_version}  # an older version's path takes only its own
        meta = body.setdefault("metadata", {})
        for key in ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "generation", "managedFields"):
            meta.pop(key, None)
        if row.namespaced:
            meta["namespace"] = namespace
            await self._ensure_namespace(namespace)
        for _ in range(_GENERATE_NAME_ATTEMPTS):
            try:
                data = await self.kube.request_bytes("POST", resource_path(row, namespace), body=body)
            except KubeApiError as exc:
                # A generateName collision is a 409 too; the apiserver draws a new suffix on retry.
                if exc.status == 409 and not name and meta.get("generateName"):
                    continue
                raise map_error(exc, kind, _display(namespace, name)) from exc
            created = decode_object(row, data)
            wanted_status = body.get("status")
            if kind in STATUS_SUBRESOURCE and wanted_status and encode(created).get("status") != wanted_status:
                # The apiserver drops status on create where status is a subresource; the NATS backend
                # keeps it, and services rely on that (a queue created Open): write it right after.
                meta_c = created.metadata
                created = await self._patch(
                    row, namespace, meta_c.name or "", {"status": wanted_status}, meta_c.resource_version, sub="status"
                )
            assert isinstance(created, type(obj))
            self._remember(created)
            return created
        raise AlreadyExists(kind, _display(namespace, name))

    async def _ensure_namespace(self, namespace: str | None) -> None:
        """One request per namespace, shared by the creates that need it at the same time (a job's pods)."""
        if not self._auto_namespaces or not namespace:
            return
        made = self._namespaces.get(namespace)
        if made is None:
            made = self._namespaces[namespace] = asyncio.ensure_future(self._create_namespace(namespace))
        try:
            await asyncio.shield(made)  # one waiter cancelled must not cancel the others' request
        except Exception:
            if self._namespaces.get(namespace) is made:
                del self._namespaces[namespace]  # the next create tries again
            raise

    async def _create_namespace(self, namespace: str) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        try:
            await self.kube.request("POST", "/api/v1/namespaces", body=body)
        except KubeApiError as exc:
            # 409: it exists. 403: this service may not create namespaces (least-privilege RBAC in
            # deploy/k8s); then the object's own create reports a missing namespace.
            if exc.status not in (409, 403):
                raise map_error(exc, "Namespace", namespace) from exc

    async def update(self, obj: O) -> O:
        kind, namespace, name = identity(obj)
        check_identity(kind, namespace, name)
        row = await self.kube.served(KINDS[kind])
        display = _display(namespace, name)
        expected = obj.metadata.resource_version
        if not expected:
            raise Conflict(kind, display, expected=None)
        current = self._seen.get((kind, namespace, name))
        from_cache = current is not None and current.metadata.resource_version == expected
        if current is not None and _revision(current) > _revision(obj) > 0:
            raise Conflict(kind, display, expected=int(expected))  # it has moved on: no request can succeed
        if not from_cache:
            current = await self._get(row, namespace, name)
        assert current is not None
        if current.metadata.resource_version != expected:
            raise Conflict(kind, display, expected=int(expected))
        new = {**encode(obj), "apiVersion": row.api_version}  # the version is the path's, not a change
        old = encode(current)
        if kind == "Pod" and _node(new) and not _node(old):
            current = await self._bind(current, _node(new) or "")
            old = encode(current)
        # Where status is a subresource it is written separately; elsewhere it is part of the object.
        new_status = new.pop("status", None) if kind in STATUS_SUBRESOURCE else None
        old_status = old.pop("status", None) if kind in STATUS_SUBRESOURCE else None
        for doc in (new, old):
            doc.get("metadata", {}).pop("resourceVersion", None)
        result = current
        patch = merge_diff(old, new)
        if from_cache and not patch and merge_diff(old_status, new_status) is None:
            # Nothing to write: still confirm the version is current, as a write would have.
            result = await self._get(row, namespace, name)
            if result.metadata.resource_version != expected:
                raise Conflict(kind, display, expected=int(expected))
        if patch:
            result = await self._patch(row, namespace, name, patch, result.metadata.resource_version, sub=None)
        status_patch = merge_diff(old_status, new_status)
        if status_patch is not None:
            body = {"status": status_patch if isinstance(status_patch, dict) else new_status}
            result = await self._patch(row, namespace, name, body, result.metadata.resource_version, sub="status")
        assert isinstance(result, type(obj))
        return result

    async def _patch(
        self, row: Kind, namespace: str | None, name: str, patch: Json, rv: str | None, *, sub: str | None
    ) -> KubeObject:
        # The resourceVersion inside a merge patch is a precondition: 409 if the object moved on.
        patch = {**patch, "metadata": {**(patch.get("metadata") or {}), "resourceVersion": rv}}
        try:
            data = await self.kube.request_bytes(
                "PATCH", resource_path(row, namespace, name, sub), body=patch, content_type=MERGE_PATCH
            )
        except KubeApiError as exc:
            raise map_error(exc, row.kind, _display(namespace, name), expected=int(rv or 0)) from exc
        return self._remember(decode_object(row, data))

    async def bind(self, pod: Pod, node: str, *, annotations: Mapping[str, str] | None = None) -> None:
        """One pods/binding request (see the module docstring for what fences it)."""
        uid = required_uid(pod)
        refuse_unbindable(pod, uid)
        known = self._seen.get(("Pod", pod.metadata.namespace, pod.metadata.name or ""))
        if isinstance(known, Pod) and _revision(known) >= _revision(pod):
            refuse_unbindable(known, uid)
        meta: Json = {"name": pod.metadata.name, "namespace": pod.metadata.namespace, "uid": uid}
        if annotations:
            meta["annotations"] = dict(annotations)
        target = {"apiVersion": "v1", "kind": "Node", "name": node}
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": target}
        path = resource_path(KINDS["Pod"], pod.metadata.namespace, pod.metadata.name, "binding")
        try:
            await self.kube.request("POST", path, body=body)
        except KubeApiError as exc:
            raise _binding_error(exc, pod) from exc

    async def _bind(self, pod: KubeObject, node: str) -> KubeObject:
        """`update`'s way to bind: the binding, then the bound pod (update goes on from its version)."""
        assert isinstance(pod, Pod)
        await self.bind(pod, node)
        return await self._get(KINDS["Pod"], pod.metadata.namespace, pod.metadata.name or "")

    async def evict(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        """The eviction subresource (honours PodDisruptionBudgets); 429 means a budget blocks it for now.

        policy/v1 first (the only one from Kubernetes 1.25), policy/v1beta1 where v1 is unknown (< 1.22).
        """
        path = resource_path(KINDS["Pod"], namespace, name, "eviction")
        for version in ("policy/v1", "policy/v1beta1"):
            body: Json = {"apiVersion": version, "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
            if uid:
                body["deleteOptions"] = {"preconditions": {"uid": uid}}
            try:
                await self.kube.request("POST", path, body=body)
                return
            except KubeApiError as exc:
                if exc.status == 400 and version == "policy/v1":
                    continue
                if exc.status == 429:
                    raise TemporaryError(
                        f"eviction of {namespace}/{name} blocked: {exc.body.get('message', '')}", delay=5.0
                    ) from exc
                raise map_error(exc, "Pod", f"{namespace}/{name}") from exc

    async def delete(
        self,
        kind: type[O],
        namespace: str | None,
        name: str,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
        grace: bool = True,
    ) -> None:
        row = await self.kube.served(_row(kind))
        options: Json = {"apiVersion": "v1", "kind": "DeleteOptions"}
        preconditions = {k: v for k, v in (("resourceVersion", resource_version), ("uid", uid)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        if not grace:
            options["gracePeriodSeconds"] = 0
        # With grace, the apiserver itself defers a running pod on a node (deletionTimestamp + grace
        # period, the node finishes it) and removes unscheduled or finished pods at once, as NATS does.
        try:
            await self.kube.request("DELETE", resource_path(row, namespace, name), body=options)
        except KubeApiError as exc:
            expected = int(resource_version) if resource_version else None
            raise map_error(exc, row.kind, _display(namespace, name), expected=expected) from exc
        self.forget(row.kind, namespace, name)


def _binding_error(exc: KubeApiError, pod: Pod) -> Exception:
    """A refused binding -> the port's errors. Apiservers that check the uid (>= 1.23) say so in the
    message of their 409, as every storage precondition does ("Precondition failed: UID ...")."""
    revision = _revision(pod) or None
    if exc.status == 409 and "Precondition failed" in str(exc.body.get("message", "")):
        return PreconditionFailed("Pod", pod_display(pod), expected=revision)
    return map_error(exc, "Pod", pod_display(pod), expected=revision)


def _revision(obj: KubeObject) -> int:
    """The resourceVersion as a number (etcd's revision), 0 when absent or opaque."""
    rv = obj.metadata.resource_version
    return int(rv) if rv and rv.isdigit() else 0


def _node(doc: Json) -> str | None:
    spec = doc.get("spec") or {}
    node = spec.get("nodeName")
    return node if isinstance(node, str) and node else None


__all__ = ["STATUS_SUBRESOURCE", "KubeStore", "decode", "encode", "merge_diff"]
