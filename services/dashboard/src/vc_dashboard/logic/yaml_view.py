"""A read-only YAML view of one object, as `kubectl get -o yaml` prints it (the wire form: camelCase
keys, absent fields left out)."""

from __future__ import annotations

import json
from typing import Final

import yaml

from vc_proto import codec
from vc_proto.kinds import KubeObject

# The kinds the dashboard caches, by the name its YAML links use.
YAML_KINDS: Final = ("job", "podgroup", "pod", "queue", "node")
CLUSTER_SCOPED: Final = frozenset({"queue", "node"})


def object_yaml(obj: KubeObject) -> str:
    return yaml.safe_dump(json.loads(codec.encode(obj)), sort_keys=False, default_flow_style=False)


def yaml_url(kind: str, namespace: str | None, name: str) -> str:
    """Where an object's YAML is (path segments are percent-encoded by the templates' `segment`)."""
    return f"/yaml/{kind}/{name}" if kind in CLUSTER_SCOPED else f"/yaml/{kind}/{namespace or 'default'}/{name}"
