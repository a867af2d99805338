"""The embedded write API: every create/update/delete is a NATS request to admission (`vc.rpc.admission.write`).

A request is one of Create, Update, Apply and Delete (a tagged union: `operation` names the type).
The object travels as raw JSON (`msgspec.Raw`) so admission decodes it once, with its own limits.
A rejection carries the field and rule of every violation, and nothing is stored.
"""

from __future__ import annotations

from typing import Final

import msgspec

from vc_proto.base import Wire

MAX_REQUEST_BYTES: Final = 3 * 1024 * 1024

# Error codes, after the Kubernetes status reasons they correspond to.
INVALID: Final = "Invalid"
ALREADY_EXISTS: Final = "AlreadyExists"
NOT_FOUND: Final = "NotFound"
CONFLICT: Final = "Conflict"
FORBIDDEN: Final = "Forbidden"
TOO_LARGE: Final = "RequestEntityTooLarge"
INTERNAL: Final = "InternalError"
UNAVAILABLE: Final = "ServiceUnavailable"


class Cause(Wire, frozen=True, kw_only=True):
    field: str
    rule: str
    message: str


class ApiError(Wire, frozen=True, kw_only=True):
    code: str
    message: str
    causes: list[Cause] | None = None


NULL: Final = msgspec.Raw(b"null")


def is_absent(raw: msgspec.Raw) -> bool:
    return bytes(raw) in (b"", b"null")


# msgspec cannot decode `Raw | None`, so an absent object is the JSON literal null.
class _Write(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel", tag_field="operation"):
    """One write; its `operation` on the wire is the tag of its type."""

    # Who asks, as the sender claims it (admission ignores it: the subject names the caller).
    user: str | None = None


class _ObjectWrite(_Write, frozen=True, kw_only=True):
    object: msgspec.Raw = NULL  # absent: refused, naming the field
    namespace: str | None = None  # the namespace of an `object` that names none


class Create(_ObjectWrite, frozen=True, kw_only=True, tag="create"):
    """Create `object`."""


class Update(_ObjectWrite, frozen=True, kw_only=True, tag="update"):
    """Replace the stored object `object` names (it must exist)."""


class Apply(_ObjectWrite, frozen=True, kw_only=True, tag="apply"):
    """Create `object`, or update it when it exists."""


class Delete(_Write, frozen=True, kw_only=True, tag="delete"):
    """Delete the object of `kind` named `name`, if still at `resource_version` / `uid` when given."""

    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    resource_version: str | None = None
    uid: str | None = None


ObjectWrite = Create | Update | Apply
WriteRequest = Create | Update | Apply | Delete


def operation_of(request: WriteRequest) -> str:
    """The request's `operation` as the wire spells it."""
    return str(type(request).__struct_config__.tag)


class WriteReply(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel"):
    object: msgspec.Raw = NULL
    error: ApiError | None = None
