"""One node's page: its allocation bars and the pods holding a share of it, each with its job.

The pods come from NodeUsage's index (bound and not finished, as `kubectl describe node` lists its
"Non-terminated Pods"), so the page reads only the node's own pods, however large the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from vc_dashboard.logic.amounts import human, ordered
from vc_dashboard.logic.nodes import pod_requests
from vc_proto.core import Pod
from vc_proto.vocabulary import JOB_NAME_KEY


@dataclass(frozen=True, slots=True)
class NodePod:
    namespace: str
    name: str
    phase: str
    job: str  # the Volcano job it belongs to; empty for a pod of no job
    requests: str  # `cpu 2 · memory 2Gi`, in whole units


def requests_text(pod: Pod) -> str:
    amounts = pod_requests(pod)
    return " · ".join(f"{name} {human(name, amounts[name])}" for name in ordered(amounts)) or "nothing"


def node_pods(pods: Iterable[Pod]) -> list[NodePod]:
    return [
        NodePod(
            namespace=pod.metadata.namespace or "",
            name=pod.metadata.name or "",
            phase=(pod.status.phase if pod.status else None) or "Pending",
            job=(pod.metadata.labels or {}).get(JOB_NAME_KEY, ""),
            requests=requests_text(pod),
        )
        for pod in pods
    ]
