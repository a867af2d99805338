"""The valid documents the fuzzer starts from: the seed jobs users sent us, plus Volcano-shaped objects of
every kind Tephra stores (written after Volcano's examples: jobs with policies, plugins, dependsOn and
priority; hierarchical and capped queues; Commands; gang pods; simulated nodes), and the shapes of the
services' own KV values (leases, the scheduler's ledger, the job controller's delays).

Each is a plain JSON-able dict; `strategies.py` mutates them. Pods end by themselves (a short simulated
duration) so that a fuzzed object the system accepts as valid only costs a few seconds of work.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Final

import yaml

from vc_proto.kinds import KINDS

SEEDS: Final = Path(__file__).resolve().parents[1] / "fixtures" / "seeds"
SIM_DURATION: Final = "sim.tephra.dev/duration"

Doc = dict[str, Any]


def _container(name: str, cpu: str = "100m", memory: str = "64Mi", **extra: Any) -> Doc:
    return {
        "name": name,
        "image": "busybox",
        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}},
        **extra,
    }


def _template(container: Doc, *, duration: str = "1s", **spec: Any) -> Doc:
    return {
        "metadata": {"annotations": {SIM_DURATION: duration}},
        "spec": {"restartPolicy": "Never", "containers": [container], **spec},
    }


def _meta(name: str, namespace: str | None = "fuzz", **extra: Any) -> Doc:
    return {"name": name, **({"namespace": namespace} if namespace else {}), **extra}


def _seed_jobs() -> list[Doc]:
    """The users' seed jobs, with short simulated run times on every task."""
    jobs = []
    for path in sorted(SEEDS.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if doc.get("kind") != "Job":
            continue
        for task in doc["spec"]["tasks"]:
            task["template"].setdefault("metadata", {}).setdefault("annotations", {})[SIM_DURATION] = "1s"
        doc["metadata"]["namespace"] = "fuzz"
        jobs.append(doc)
    return jobs


def _seed_podgroups() -> list[Doc]:
    docs = [yaml.safe_load(p.read_text()) for p in sorted(SEEDS.glob("*.yaml"))]
    return [d for d in docs if d.get("kind") == "PodGroup"]


JOBS: Final[list[Doc]] = [
    *_seed_jobs(),
    {  # a plain gang with job-level policies and a TTL (Volcano's job.yaml)
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": _meta("fz-gang"),
        "spec": {
            "minAvailable": 3,
            "schedulerName": "volcano",
            "queue": "default",
            "maxRetry": 2,
            "ttlSecondsAfterFinished": 30,
            "priorityClassName": "high",
            "policies": [
                {"event": "PodEvicted", "action": "RestartJob"},
                {"events": ["PodFailed"], "action": "AbortJob", "timeout": "10s"},
            ],
            "tasks": [
                {
                    "name": "nginx",
                    "replicas": 3,
                    "minAvailable": 2,
                    "policies": [{"exitCode": 3, "action": "RestartTask"}],
                    "template": _template(_container("nginx", "1", "1Gi")),
                }
            ],
        },
    },
    {  # pytorch master/worker with task dependencies (Volcano's task-start-dependency example)
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": _meta("fz-torch", labels={"volcano.sh/job-type": "PyTorch"}),
        "spec": {
            "minAvailable": 2,
            "schedulerName": "volcano",
            "plugins": {"pytorch": ["--master=master", "--port=23456"]},
            "minSuccess": 1,
            "tasks": [
                {"name": "master", "replicas": 1, "template": _template(_container("master", "500m"))},
                {
                    "name": "worker",
                    "replicas": 2,
                    "dependsOn": {"name": ["master"], "iteration": "any"},
                    "template": _template(
                        _container("worker", "500m", "128Mi"),
                        nodeSelector={"kubernetes.io/os": "linux"},
                        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    ),
                },
            ],
        },
    },
    {  # a GPU job with volumes and network topology
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": _meta("fz-gpu"),
        "spec": {
            "minAvailable": 1,
            "queue": "default",
            "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
            "volumes": [{"mountPath": "/data", "volumeClaimName": "data"}],
            "tasks": [
                {
                    "name": "train",
                    "replicas": 1,
                    "template": _template(_container("train", "2", "4Gi"), priorityClassName="high"),
                }
            ],
        },
    },
]

PODGROUPS: Final[list[Doc]] = [
    *_seed_podgroups(),
    {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": _meta("fz-pg"),
        "spec": {
            "minMember": 2,
            "queue": "default",
            "minResources": {"cpu": "2", "memory": "1Gi"},
            "minTaskMember": {"a": 1, "b": 1},
            "priorityClassName": "high",
        },
        "status": {"phase": "Pending"},
    },
]

QUEUES: Final[list[Doc]] = [
    {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": _meta("fz-q", None),
        "spec": {"weight": 2, "reclaimable": True, "capability": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "2"}},
        "status": {"state": "Open"},
    },
    {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": _meta("fz-child", None),
        "spec": {
            "weight": 1,
            "parent": "root",
            "guarantee": {"resource": {"cpu": "1"}},
            "deserved": {"cpu": "4"},
            "allowedNamespaces": ["fuzz", "team-a"],
            "priority": 5,
            "affinity": {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["group-a"]}},
        },
    },
]

COMMANDS: Final[list[Doc]] = [
    {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": _meta(
            "fz-gang-abortjob-x1y2z",
            ownerReferences=[
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": "fz-gang",
                    "uid": "u-1",
                    "controller": True,
                }
            ],
        ),
        "action": "AbortJob",
        "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "fz-gang", "uid": "u-1"},
    },
    {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": _meta("fz-q-close", None),
        "action": "CloseQueue",
        "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": "fz-q", "uid": "u-2"},
    },
]

PODS: Final[list[Doc]] = [
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(
            "fz-pod",
            annotations={"scheduling.k8s.io/group-name": "fz-pg", SIM_DURATION: "1s"},
            labels={"volcano.sh/job-name": "fz-gang", "volcano.sh/task-spec": "nginx"},
        ),
        "spec": {"schedulerName": "volcano", "restartPolicy": "Never", "containers": [_container("c")]},
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta("fz-bound", annotations={SIM_DURATION: "1s", "sim.tephra.dev/exit-code": "3"}),
        "spec": {
            "nodeName": "node-0",
            "containers": [_container("c", "250m"), _container("sidecar", "10m", ports=[{"containerPort": 80}])],
        },
        "status": {"phase": "Pending"},
    },
]

NODES: Final[list[Doc]] = [
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta("fz-node", None, labels={"kubernetes.io/hostname": "fz-node"}),
        "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2030-01-01T00:00:00Z"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
        },
    },
]

OTHERS: Final[list[Doc]] = [
    {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": _meta("fz-gang.17a2b3c4d5e6f708"),
        "involvedObject": {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "namespace": "fuzz",
            "name": "fz-gang",
            "uid": "u-1",
        },
        "reason": "PodGroupPending",
        "message": "1/3 tasks in gang unschedulable",
        "source": {"component": "volcano"},
        "firstTimestamp": "2030-01-01T00:00:00Z",
        "lastTimestamp": "2030-01-01T00:00:05Z",
        "count": 2,
        "type": "Warning",
        "reportingComponent": "volcano",
        "reportingInstance": "scheduler-0",
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": _meta("fz-high", None),
        "value": 1000,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority",
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta("fz-svc"),
        "spec": {
            "clusterIP": "None",
            "selector": {"volcano.sh/job-name": "fz-gang"},
            "ports": [{"name": "p", "port": 22}],
        },
    },
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("fz-cm"), "data": {"worker.host": "a\nb\n"}},
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta("fz-secret"),
        "type": "Opaque",
        "data": {"id_rsa": "c2VjcmV0"},
    },
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("fz-np"),
        "spec": {"podSelector": {"matchLabels": {"volcano.sh/job-name": "fz-gang"}}, "policyTypes": ["Ingress"]},
    },
]

FLOWS: Final[list[Doc]] = [  # Volcano's jobflow example: templates, then a flow of them
    {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": _meta("fz-a"),
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "tasks": [{"name": "t", "replicas": 1, "template": _template(_container("c"))}],
        },
    },
    {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": _meta("fz-flow"),
        "spec": {
            "jobRetainPolicy": "delete",
            "flows": [
                {"name": "fz-a"},
                {
                    "name": "fz-b",
                    "dependsOn": {
                        "targets": ["fz-a"],
                        "probe": {"taskStatusList": [{"taskName": "t", "phase": "Succeeded"}]},
                    },
                    "patch": {"jobSpec": {"tasks": [{"name": "t", "replicas": 2}]}},
                },
            ],
        },
    },
    {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": _meta("fz-cron"),
        "spec": {
            "schedule": "*/5 * * * *",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 2,
            "jobTemplate": {"spec": {"tasks": [{"name": "t", "replicas": 1, "template": _template(_container("c"))}]}},
        },
    },
]

BY_KIND: Final[dict[str, list[Doc]]] = {
    "Job": JOBS,
    "PodGroup": PODGROUPS,
    "Queue": QUEUES,
    "Command": COMMANDS,
    "Pod": PODS,
    "Node": NODES,
    **{doc["kind"]: [doc] for doc in (*OTHERS, *FLOWS)},
    "HyperNode": [  # Volcano's example: a tier-1 hypernode of named nodes
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": _meta("fz-rack", None),
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "fz-node"}}}]},
        }
    ],
    "ResourceQuota": [  # the namespace's limits the resourcequota plugin gates enqueue on
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": _meta("fz-quota"),
            "spec": {"hard": {"pods": "10", "requests.cpu": "4", "count/pods": "10", "requests.nvidia.com/gpu": "2"}},
        }
    ],
    "PodDisruptionBudget": [  # both versions: an apiserver before 1.21 serves only policy/v1beta1
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta("fz-pdb"),
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "fz"}}},
        },
        {
            "apiVersion": "policy/v1beta1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta("fz-pdb-beta"),
            "spec": {"maxUnavailable": 1, "selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
        },
    ],
    "PersistentVolumeClaim": [  # a claim bound to a volume (the scheduler's volume predicate)
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": _meta("fz-claim"),
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "volumeName": "fz-volume",
            },
        }
    ],
    "PersistentVolume": [  # node-local storage: its node affinity limits where pods using it run
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": _meta("fz-volume", None),
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "local": {"path": "/mnt/disk"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["fz-node"]}
                                ]
                            }
                        ]
                    }
                },
            },
        }
    ],
}
assert set(BY_KIND) == set(KINDS), f"a kind without a fuzz base: {set(KINDS) ^ set(BY_KIND)}"
ALL_OBJECTS: Final[list[Doc]] = [doc for docs in BY_KIND.values() for doc in docs]

# The services' own KV values.
LEASE: Final[Doc] = {"instance": "job-controller", "epoch": 7, "ttl_s": 2.0}
LEDGER_RECORD: Final[Doc] = {"r": {"uid-1": ["fuzz/fz-pod", "scheduler", 3, 1893456000.0, {"cpu": "1/2", "pods": "1"}]}}
# What a shard's owner publishes (vc_scheduler.shard_records): a queue's sums, the pods away on nodes.
SHARD_SUMS: Final[Doc] = {
    "revision": 12,
    "request": {"cpu": 4.0, "memory": 4294967296.0},
    "allocated": {"cpu": 2.0},
    "reserved": {},
    "asked": 4,
    "placed": 2,
}
SHARD_AWAY: Final[Doc] = {"revision": 12, "nodes": {"fz-node-1": [{"cpu": 1.0}, 1]}}
DELAYED_ACTION: Final[Doc] = {
    "key": "fz-gang-nginx-0",
    "action": "RestartJob",
    "event": "PodFailed",
    "task_name": "nginx",
    "delay": "PT10S",
    "due_at": "2030-01-01T00:00:00Z",
}
CONTROL: Final[Doc] = {"node": "node-1", "ready": True}
EVENT: Final[Doc] = {
    "id": "e-1",
    "occurredAt": "2030-01-01T00:00:00Z",
    "source": "fuzz",
    "kind": "Pod",
    "namespace": "fuzz",
    "name": "fz-gang-nginx-0",
    "reason": "PodExited",
    "message": "exit 3",
    "job": "fz-gang",
    "task": "nginx",
    "phase": "Failed",
    "previousPhase": "Running",
    "exitCode": 3,
    "node": "node-0",
}


def fresh(doc: Doc) -> Doc:
    """A private copy to mutate."""
    return copy.deepcopy(doc)
