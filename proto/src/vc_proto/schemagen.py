"""Generate JSON Schemas (proto/schemas/) and Kubernetes CRDs (deploy/k8s/crds/) from the wire types.

`python -m vc_proto.schemagen --write` regenerates them; `--check` exits 1 when a file is stale, which a
test also asserts, so the generated files can never drift from the types.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import yaml

from vc_proto.api import ApiError
from vc_proto.events import DomainEvent
from vc_proto.kinds import KINDS, Kind

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS_DIR = ROOT / "proto" / "schemas"
CRDS_DIR = ROOT / "deploy" / "k8s" / "crds"
CRD_KINDS = ("Job", "PodGroup", "Queue", "Command", "JobTemplate", "JobFlow", "CronJob", "HyperNode")
SHORT_NAMES = {
    "Job": ["vcjob", "vj"],
    "PodGroup": ["pg", "podgroup-v1beta1"],
    "Queue": ["q", "queue-v1beta1"],
    "Command": [],
    "JobTemplate": ["jt"],
    "JobFlow": ["jf"],
    "CronJob": ["cronvcjob", "cronvj"],
    "HyperNode": ["hn"],
}
PRINTER_COLUMNS: dict[str, list[dict[str, Any]]] = {
    "Job": [
        {"name": "STATUS", "type": "string", "jsonPath": ".status.state.phase"},
        {"name": "minAvailable", "type": "integer", "jsonPath": ".status.minAvailable"},
        {"name": "RUNNINGS", "type": "integer", "jsonPath": ".status.running"},
        {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "QUEUE", "type": "string", "priority": 1, "jsonPath": ".spec.queue"},
    ],
    "PodGroup": [
        {"name": "STATUS", "type": "string", "jsonPath": ".status.phase"},
        {"name": "minMember", "type": "integer", "jsonPath": ".spec.minMember"},
        {"name": "RUNNINGS", "type": "integer", "jsonPath": ".status.running"},
        {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "QUEUE", "type": "string", "priority": 1, "jsonPath": ".spec.queue"},
    ],
    "Queue": [
        {"name": "PARENT", "type": "string", "jsonPath": ".spec.parent"},
        {"name": "STATE", "type": "string", "jsonPath": ".status.state"},
        {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ],
    "Command": [],
    "JobTemplate": [],
    "JobFlow": [
        {"name": "Status", "type": "string", "jsonPath": ".status.state.phase"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ],
    "CronJob": [],
    "HyperNode": [
        {"name": "Tier", "type": "string", "jsonPath": ".spec.tier"},
        {"name": "TierName", "type": "string", "jsonPath": ".spec.tierName"},
        {"name": "NodeCount", "type": "integer", "jsonPath": ".status.nodeCount"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ],
}


def json_schemas() -> dict[str, str]:
    """File name -> JSON text of each top-level type's schema."""
    types: dict[str, Any] = {k.kind: k.type for k in KINDS.values()}
    # The write API's envelopes carry the object as raw JSON (msgspec.Raw), which has no schema of its
    # own; their other fields are documented in vc_proto/api.py.
    types |= {"DomainEvent": DomainEvent, "ApiError": ApiError}
    return {
        f"{name}.json": json.dumps(msgspec.json.schema(t), indent=2, sort_keys=True) + "\n"
        for name, t in sorted(types.items())
    }


def _inline(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """A structural OpenAPI v3 schema: refs inlined, free-form objects preserved, int-or-string marked."""
    if depth > 40:
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if "$ref" in schema:
        return _inline(defs[schema["$ref"].split("/")[-1]], defs, depth + 1)
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        if len(options) == 1:
            return _inline(options[0], defs, depth + 1)
        kinds = {o.get("type") for o in options}
        if kinds <= {"string", "integer", "number"}:
            return {"x-kubernetes-int-or-string": True}
        return {"x-kubernetes-preserve-unknown-fields": True}
    kind = schema.get("type")
    if kind == "object":
        out: dict[str, Any] = {"type": "object"}
        if "properties" in schema:
            out["properties"] = {k: _inline(v, defs, depth + 1) for k, v in schema["properties"].items()}
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            out["additionalProperties"] = _inline(extra, defs, depth + 1)
        elif "properties" not in schema:
            out["x-kubernetes-preserve-unknown-fields"] = True
        if schema.get("required"):
            out["required"] = sorted(schema["required"])
        return out
    if kind == "array":
        return {"type": "array", "items": _inline(schema.get("items", {}), defs, depth + 1)}
    if kind in ("string", "integer", "number", "boolean"):
        return {"type": kind}
    return {"x-kubernetes-preserve-unknown-fields": True}


def crd(row: Kind) -> dict[str, Any]:
    full = msgspec.json.schema(row.type)
    defs = full.get("$defs", {})
    root = _inline(full, defs)
    props = root.get("properties", {})
    props.pop("kind", None)
    props.pop("apiVersion", None)
    props["metadata"] = {"type": "object"}
    openapi = {"type": "object", "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, **props}}
    version: dict[str, Any] = {
        "name": row.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": openapi},
    }
    if "status" in props:
        version["subresources"] = {"status": {}}
    if PRINTER_COLUMNS[row.kind]:
        version["additionalPrinterColumns"] = PRINTER_COLUMNS[row.kind]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{row.plural}.{row.group}"},
        "spec": {
            "group": row.group,
            "names": {
                "kind": row.kind,
                "listKind": f"{row.kind}List",
                "plural": row.plural,
                "singular": row.kind.lower(),
                **({"shortNames": SHORT_NAMES[row.kind]} if SHORT_NAMES[row.kind] else {}),
            },
            "scope": "Namespaced" if row.namespaced else "Cluster",
            "versions": [version],
        },
    }


def crds() -> dict[str, str]:
    return {
        f"{KINDS[k].group}_{KINDS[k].plural}.yaml": yaml.safe_dump(crd(KINDS[k]), sort_keys=False) for k in CRD_KINDS
    }


def generated() -> dict[Path, str]:
    files = {SCHEMAS_DIR / name: text for name, text in json_schemas().items()}
    files |= {CRDS_DIR / name: text for name, text in crds().items()}
    return files


def stale() -> list[Path]:
    return [path for path, text in generated().items() if not path.exists() or path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vc_proto.schemagen")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.write:
        for path, text in generated().items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return 0
    drift = stale()
    for path in drift:
        print(f"stale: {path.relative_to(ROOT)} (run `make schemas`)", file=sys.stderr)
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
