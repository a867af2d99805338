"""RFC 6902 JSON Patch between two objects as Kubernetes JSON, for the webhook's mutating responses.

`json_patch(original, patched)` walks both documents (`vc_proto.codec.to_dict`) and emits `add`,
`remove` and `replace` operations; lists of a different length are replaced whole, which keeps patches
small and always correct. `apply_json_patch` applies such a patch (tests, and front-ends that want to
check a patch round-trips).
"""

from __future__ import annotations

import copy
from typing import Any

from vc_proto.codec import to_dict

JsonPatch = list[dict[str, Any]]


def json_patch(original: object, patched: object) -> JsonPatch:
    return diff(to_dict(original), to_dict(patched))


def diff(before: Any, after: Any, path: str = "") -> JsonPatch:
    if isinstance(before, dict) and isinstance(after, dict):
        return _diff_objects(before, after, path)
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        ops: JsonPatch = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            ops.extend(diff(old, new, f"{path}/{index}"))
        return ops
    if before == after and type(before) is type(after):
        return []
    return [{"op": "replace", "path": path, "value": copy.deepcopy(after)}]


def _diff_objects(before: dict[str, Any], after: dict[str, Any], path: str) -> JsonPatch:
    ops: JsonPatch = []
    for key in before:
        if key not in after:
            ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
    for key, value in after.items():
        child = f"{path}/{escape(key)}"
        if key not in before:
            ops.append({"op": "add", "path": child, "value": copy.deepcopy(value)})
        else:
            ops.extend(diff(before[key], value, child))
    return ops


def escape(key: str) -> str:
    """RFC 6901: `~` becomes `~0` and `/` becomes `~1` (annotation keys such as `volcano.sh/x`)."""
    return key.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def apply_json_patch(document: Any, patch: JsonPatch) -> Any:
    """Apply add/remove/replace operations to a copy of `document`."""
    result = copy.deepcopy(document)
    for op in patch:
        tokens = [unescape(t) for t in op["path"].split("/")[1:]]
        if not tokens:
            result = copy.deepcopy(op["value"])
            continue
        parent = result
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        _apply_one(parent, tokens[-1], op)
    return result


def _apply_one(parent: Any, token: str, op: dict[str, Any]) -> None:
    if isinstance(parent, list):
        index = len(parent) if token == "-" else int(token)
        if op["op"] == "add":
            parent.insert(index, copy.deepcopy(op["value"]))
        elif op["op"] == "remove":
            del parent[index]
        else:
            parent[index] = copy.deepcopy(op["value"])
        return
    if op["op"] == "remove":
        del parent[token]
    else:
        parent[token] = copy.deepcopy(op["value"])
