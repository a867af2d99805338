"""The embedded write API: decode, authorize, admit (mutate then validate), write through the store with CAS.

Users' writes reach the store only through here; controllers inside Tephra write directly, as
Kubernetes controllers do. Like an API server, `status` is not writable through this door: create
drops it (after admission has judged it) and update keeps the stored one. Who asks is the caller the
subject names (the request's `user` field is a claim anyone can make, and is ignored); `authorization`
decides what it may do.
"""

from __future__ import annotations

import msgspec
import structlog

from vc_admission.authorization import authorize
from vc_admission.decoding import decode_object
from vc_admission.review import Admitter, Rejected
from vc_bus.decoding import UNDECODABLE, CorruptObject, describe, report_undecodable
from vc_core.errors import AlreadyExists, Conflict, InvalidObject, NotFound, PolicyViolation, VcError
from vc_core.store import ObjectStore
from vc_proto import api, codec, subjects
from vc_proto.kinds import KINDS, KubeObject
from vc_security.registry import BUILT_IN_ADMIN, Person
from vc_validation.names import dns1123_label_errors, dns1123_subdomain_errors, format_errors

log = structlog.get_logger(__name__)
_request = msgspec.json.Decoder(api.WriteRequest)
_reply = msgspec.json.Encoder()


def error_reply(code: str, message: str, causes: list[api.Cause] | None = None) -> bytes:
    return _reply.encode(api.WriteReply(error=api.ApiError(code=code, message=message, causes=causes)))


def object_reply(obj: KubeObject) -> bytes:
    return _reply.encode(api.WriteReply(object=msgspec.Raw(codec.encode(obj))))


class WriteApi:
    def __init__(self, store: ObjectStore, admitter: Admitter) -> None:
        self._store = store
        self._admit = admitter

    async def handle(self, data: bytes, caller: Person | None = BUILT_IN_ADMIN) -> bytes:
        """The reply to one request from `caller` (None: an identity admission does not know). The
        service always names the caller; in-process callers (unit tests) are the admin."""
        if caller is None:
            return error_reply(
                api.FORBIDDEN, "this identity may not write: admission does not know it (see docs/tenancy.md)"
            )
        if len(data) > api.MAX_REQUEST_BYTES:
            return error_reply(
                api.TOO_LARGE, f"request is {len(data)} bytes; the limit is {api.MAX_REQUEST_BYTES} (3 MiB)"
            )
        try:
            request = _request.decode(data)
        except UNDECODABLE as exc:
            # Anyone on the bus can send bytes here: a bad request is answered, counted and forgotten.
            report_undecodable(source=subjects.ADMISSION_WRITE, kind="WriteRequest", error=exc, size=len(data))
            return error_reply(api.INVALID, f"malformed write request: {describe(exc)}")
        try:
            obj = await self._dispatch(request, caller)
        except msgspec.ValidationError as exc:
            return error_reply(api.INVALID, f"malformed write request: {exc}")
        except InvalidObject as exc:
            return error_reply(api.INVALID, str(exc), [api.Cause(field=exc.field, rule=exc.rule, message=exc.message)])
        except Rejected as exc:
            return error_reply(api.INVALID, exc.summary(), list(exc.causes))
        except PolicyViolation as exc:
            return error_reply(api.FORBIDDEN, str(exc))
        except AlreadyExists as exc:
            return error_reply(api.ALREADY_EXISTS, str(exc))
        except NotFound as exc:
            return error_reply(api.NOT_FOUND, str(exc))
        except Conflict as exc:
            return error_reply(api.CONFLICT, str(exc))
        except CorruptObject as exc:  # what the request must read is not an object (a delete removes it)
            return error_reply(api.INTERNAL, str(exc))
        except VcError as exc:
            return error_reply(api.UNAVAILABLE, str(exc))
        return object_reply(obj) if obj is not None else _reply.encode(api.WriteReply())

    async def _dispatch(self, request: api.WriteRequest, caller: Person) -> KubeObject | None:
        match request:
            case api.Delete():
                await self._delete(request, caller)
                return None
            case api.Create():
                obj, kind, namespace = _object_of(request)
                authorize(caller, "create", kind, namespace, new=obj, old=None)
                return await self._create(obj)
            case api.Update() | api.Apply():
                obj, kind, namespace = _object_of(request)
                old = await self._current(obj)
                authorize(caller, "create" if old is None else "update", kind, namespace, new=obj, old=old)
                if old is not None:
                    return await self._update(obj, old)
                if isinstance(request, api.Apply):
                    return await self._create(obj)
                raise NotFound(kind, obj.metadata.name or "")

    async def _current(self, obj: KubeObject) -> KubeObject | None:
        if not obj.metadata.name:  # generateName: a new object
            return None
        _check_key(obj.metadata.namespace, obj.metadata.name, "metadata.")
        try:
            return await self._store.get(type(obj), obj.metadata.namespace, obj.metadata.name)
        except NotFound:
            return None

    async def _create(self, obj: KubeObject) -> KubeObject:
        # Admission sees the status as sent, so a Queue naming no Volcano state is refused (as Volcano's
        # webhook does) rather than its status silently dropped; what is stored never carries it.
        admitted = await self._admit.create(obj)
        if hasattr(admitted, "status"):
            admitted = msgspec.structs.replace(admitted, status=None)
        return await self._store.create(admitted)

    async def _update(self, obj: KubeObject, old: KubeObject) -> KubeObject:
        meta = msgspec.structs.replace(
            obj.metadata,
            uid=old.metadata.uid,
            creation_timestamp=old.metadata.creation_timestamp,
            resource_version=obj.metadata.resource_version or old.metadata.resource_version,
        )
        candidate = msgspec.structs.replace(obj, metadata=meta)
        if hasattr(old, "status"):
            candidate = msgspec.structs.replace(candidate, status=old.status)
        admitted = await self._admit.update(candidate, old)
        return await self._store.update(admitted)

    async def _delete(self, request: api.Delete, caller: Person) -> None:
        row = KINDS.get(request.kind or "")
        if row is None or not request.name:
            raise InvalidObject("kind", "required", "delete needs a supported kind and a name")
        namespace = (request.namespace or "default") if row.namespaced else None
        _check_key(namespace, request.name, "")
        authorize(caller, "delete", row.kind, namespace, new=None, old=None)
        try:
            old = await self._store.get(row.type, namespace, request.name)
        except CorruptObject:
            # What is stored there is not an object, so no rule can judge it; deleting it is the cure.
            await self._store.delete(
                row.type, namespace, request.name, resource_version=request.resource_version, grace=False
            )
            return
        authorize(caller, "delete", row.kind, namespace, new=None, old=old)
        await self._admit.delete(old)
        await self._store.delete(
            row.type, namespace, request.name, resource_version=request.resource_version, uid=request.uid
        )


def _object_of(request: api.ObjectWrite) -> tuple[KubeObject, str, str | None]:
    """The request's object (in the request's namespace when it names none), its kind and the
    namespace it is in (None for a cluster-scoped kind)."""
    if api.is_absent(request.object):
        raise InvalidObject("object", "required", f"{api.operation_of(request)} needs an object")
    obj = _with_namespace(decode_object(bytes(request.object)), request.namespace)
    kind = type(obj).__name__
    return obj, kind, obj.metadata.namespace if KINDS[kind].namespaced else None


def _check_key(namespace: str | None, name: str, path: str) -> None:
    """No stored object has a name or namespace that is not a DNS name: refuse one before it is looked up
    (found by fuzzing: a name " " or a namespace "." reached the store as an invalid key)."""
    if errors := dns1123_subdomain_errors(name):
        raise InvalidObject(f"{path}name", "dns-1123-subdomain", f"name {name[:64]!r}: {format_errors(errors)}")
    if namespace is not None and (errors := dns1123_label_errors(namespace)):
        raise InvalidObject(
            f"{path}namespace", "dns-1123-label", f"namespace {namespace[:64]!r}: {format_errors(errors)}"
        )


def _with_namespace(obj: KubeObject, namespace: str | None) -> KubeObject:
    row = KINDS[type(obj).__name__]
    if not row.namespaced:
        return obj
    ns = obj.metadata.namespace or namespace or "default"
    if namespace and obj.metadata.namespace and obj.metadata.namespace != namespace:
        raise InvalidObject(
            "metadata.namespace",
            "namespace-match",
            f"the object is in namespace {obj.metadata.namespace!r} but -n says {namespace!r}",
        )
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, namespace=ns))
