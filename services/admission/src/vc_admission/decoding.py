"""Turn request bytes into a typed object, or an InvalidObject that names the field and the rule."""

from __future__ import annotations

import re

import msgspec

from vc_core.errors import InvalidObject
from vc_proto import codec
from vc_proto.kinds import KINDS, KubeObject, accepts

_PATH = re.compile(r" - at `\$(.*)`$")
SUPPORTED_KINDS = ", ".join(sorted(KINDS))


def field_of(error: msgspec.ValidationError) -> tuple[str, str]:
    """('spec.tasks[0].replicas', 'Expected `int`, got `str`') from msgspec's message."""
    text = str(error)
    match = _PATH.search(text)
    if match is None:
        return "", text
    return match.group(1).lstrip("."), text[: match.start()]


def decode_object(data: bytes) -> KubeObject:
    try:
        head = msgspec.json.decode(data, type=dict[str, object])
    except msgspec.DecodeError as exc:
        raise InvalidObject("", "json", f"the request is not a JSON object: {exc}") from exc
    except UnicodeDecodeError as exc:  # a string holding bytes that are not UTF-8 (found by fuzzing)
        raise InvalidObject("", "utf-8", f"the object is not valid UTF-8: {exc.reason} at byte {exc.start}") from exc
    except RecursionError as exc:  # msgspec gives up at Python's recursion limit (~1000 levels)
        raise InvalidObject("", "nesting", "the object is nested too deeply") from exc
    kind = head.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InvalidObject("kind", "required", "kind is required")
    row = KINDS.get(kind)
    if row is None:
        raise InvalidObject("kind", "supported-kind", f"unsupported kind {kind!r} (supported: {SUPPORTED_KINDS})")
    api_version = head.get("apiVersion")
    if not accepts(row, api_version):
        versions = " or ".join(repr(v) for v in (row.api_version, *row.older_versions))
        raise InvalidObject("apiVersion", "api-version", f"{kind} must have apiVersion {versions}, not {api_version!r}")
    if not isinstance(head.get("metadata"), dict):
        raise InvalidObject("metadata", "required", "metadata is required")
    try:
        return codec.decode(data, row.type)
    except msgspec.ValidationError as exc:
        field, message = field_of(exc)
        raise InvalidObject(field, "type", message) from exc
    except RecursionError as exc:
        raise InvalidObject("", "nesting", "the object is nested too deeply") from exc
