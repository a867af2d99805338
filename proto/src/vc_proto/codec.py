"""One encoder and one typed decoder per type, created once and reused (msgspec's fast path)."""

from __future__ import annotations

from typing import Any, TypeVar, overload

import msgspec

from vc_proto.kinds import KINDS, KubeObject

T = TypeVar("T")

_encoder = msgspec.json.Encoder()
_any_object: msgspec.json.Decoder[KubeObject] = msgspec.json.Decoder(KubeObject)


def encode(obj: object) -> bytes:
    return _encoder.encode(obj)


# One decoder per type, made once (building one costs more than many decodes). Keyed by object: a union
# alias (EventMessage) is a decoder's type too.
_decoders: dict[object, msgspec.json.Decoder[Any]] = {}


@overload
def decoder(obj_type: type[T]) -> msgspec.json.Decoder[T]: ...
@overload
def decoder(obj_type: Any) -> msgspec.json.Decoder[Any]: ...  # a union alias: the caller names its type


def decoder(obj_type: Any) -> msgspec.json.Decoder[Any]:
    found = _decoders.get(obj_type)
    if found is None:
        found = _decoders[obj_type] = msgspec.json.Decoder(obj_type)
    return found


def decode(data: bytes, obj_type: type[T]) -> T:
    return decoder(obj_type).decode(data)


def decode_object(data: bytes) -> KubeObject:
    """Decode any stored kind by its `kind` field."""
    return _any_object.decode(data)


def to_dict(obj: object) -> dict[str, Any]:
    """Kubernetes JSON shape as plain Python data (what `-o json` prints)."""
    out = msgspec.to_builtins(obj)
    assert isinstance(out, dict)
    return out


def from_dict(data: dict[str, Any]) -> KubeObject:
    """Convert a parsed YAML/JSON document into its typed object, chosen by `kind`.

    Raises `msgspec.ValidationError` (with a `$.path`) on a wrong shape, KeyError on an unknown kind.
    """
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise KeyError(kind)
    result: KubeObject = msgspec.convert(data, KINDS[kind].type)
    return result
