"""Users' objects round-trip through the wire types without losing a field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from vc_proto import codec
from vc_proto.batch import Job
from vc_proto.kinds import KINDS

SEEDS = Path(__file__).resolve().parents[2] / "fixtures" / "seeds"


def prune_nulls(value: Any) -> Any:
    """Kubernetes treats an explicit null like an absent field; compare without them."""
    if isinstance(value, dict):
        return {k: prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune_nulls(v) for v in value]
    return value


@pytest.mark.parametrize("path", sorted(SEEDS.glob("*.yaml")), ids=lambda p: p.stem)
def test_seed_examples_round_trip_verbatim(path: Path) -> None:
    document = yaml.safe_load(path.read_text())
    obj = codec.from_dict(document)
    assert codec.to_dict(obj) == prune_nulls(document)
    # And through JSON bytes, as the store keeps them.
    assert codec.to_dict(codec.decode_object(codec.encode(obj))) == prune_nulls(document)


POD_TEMPLATE_EXTRAS = {
    "securityContext": {"runAsUser": 1000, "fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}},
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    },
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
    "volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": "pvc-1"}},
        {"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        {"name": "cfg", "configMap": {"name": "c", "items": [{"key": "a", "path": "a.txt", "mode": 420}]}},
    ],
    "hostNetwork": False,
    "dnsPolicy": "ClusterFirstWithHostNet",
    "initContainers": [{"name": "init", "image": "busybox", "command": ["true"], "restartPolicy": "Always"}],
    "containers": [
        {
            "name": "main",
            "image": "tf:1",
            "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 3},
            "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": 1}},
            "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
            "ports": [{"containerPort": 2222, "name": "tfjob-port", "protocol": "TCP"}],
        }
    ],
    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}],
    "priorityClassName": "high",
    "schedulingGates": [{"name": "wait"}],
}


def test_pod_template_keeps_everything_kubernetes_allows() -> None:
    document = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "labels": {"a": "b"}, "annotations": {"x": "y"}},
        "spec": {
            "minAvailable": 0,
            "queue": "q",
            "maxRetry": 0,
            "ttlSecondsAfterFinished": 0,
            "minSuccess": 1,
            "runningEstimate": "1h",
            "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
            "volumes": [
                {
                    "mountPath": "/d",
                    "volumeClaim": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
            "plugins": {"ssh": [], "svc": ["--publish-not-ready-addresses=true"]},
            "policies": [
                {"event": "PodEvicted", "action": "RestartJob"},
                {"exitCode": 3, "action": "AbortJob", "timeout": "10m"},
            ],
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 0,
                    "minAvailable": 0,
                    "maxRetry": -1,
                    "topologyPolicy": "best-effort",
                    "dependsOn": {"name": ["ps"], "iteration": "any"},
                    "partitionPolicy": {"totalPartitions": 2, "partitionSize": 1, "minPartitions": 1},
                    "policies": [{"events": ["PodFailed", "PodEvicted"], "action": "RestartTask"}],
                    "template": {"metadata": {"labels": {"role": "w"}}, "spec": POD_TEMPLATE_EXTRAS},
                }
            ],
        },
        "status": {
            "state": {"phase": "Running"},
            "taskStatusCount": {"worker": {"phase": {"Running": 2}}},
            "conditions": [{"status": "Running", "lastTransitionTime": "2024-01-01T00:00:00Z"}],
            "retryCount": 0,
        },
    }
    obj = codec.from_dict(document)
    assert isinstance(obj, Job)
    assert codec.to_dict(obj) == document


def test_explicit_zero_and_empty_values_are_kept() -> None:
    document = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q", "labels": {}},
        "spec": {"weight": 0, "reclaimable": False, "capability": {}},
    }
    assert codec.to_dict(codec.from_dict(document)) == document


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_decodes_by_its_kind_field(kind: str) -> None:
    row = KINDS[kind]
    document = {"apiVersion": row.api_version, "kind": kind, "metadata": {"name": "x"}}
    if kind == "PriorityClass":
        document["value"] = 10
    obj = codec.decode_object(msgspec.json.encode(document))
    assert type(obj) is row.type
    assert codec.to_dict(obj) == document


def test_wrong_shape_names_the_field() -> None:
    document = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"tasks": [{"replicas": "three"}]},
    }
    with pytest.raises(msgspec.ValidationError, match=r"\$\.spec\.tasks\[0\]\.replicas"):
        codec.from_dict(document)
