"""The embedded write API: every create/update/delete is a NATS request to admission (`vc.rpc.admission.write`).

The object travels as raw JSON (`msgspec.Raw`) so admission decodes it once, with its own limits.
A rejection carries the field and rule of every violation, and nothing is stored.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from vc_proto.base import Wire

Operation = Literal["create", "update", "delete", "apply"]
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
class WriteRequest(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel"):
    operation: Operation
    object: msgspec.Raw = NULL
    # For delete (and to default the namespace of `object`).
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    resource_version: str | None = None
    uid: str | None = None
    # Who asks (for tenancy rules): the namespace the request acts in.
    user: str | None = None


class WriteReply(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel"):
    object: msgspec.Raw = NULL
    error: ApiError | None = None
