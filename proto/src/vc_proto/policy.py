"""policy/v1 PodDisruptionBudget: every Kubernetes field under its Kubernetes name.

The scheduler's pdb plugin keeps preempt, reclaim and shuffle from evicting below a budget. policy/v1
arrived in Kubernetes 1.21; older apiservers serve the same object as policy/v1beta1 (its one difference,
an empty selector selecting no pod rather than all, is moot here: the pdb plugin, like Volcano's, lets
an empty selector select nothing), so documents of either version are accepted (`Kind.older_versions`).
"""

from __future__ import annotations

from typing import Final

from vc_proto.base import IntOrString, Raw, Wire
from vc_proto.meta import LabelSelector, ObjectMeta

POLICY_V1: Final = "policy/v1"
POLICY_V1BETA1: Final = "policy/v1beta1"


class PodDisruptionBudgetSpec(Wire, frozen=True, kw_only=True):
    min_available: IntOrString | None = None
    max_unavailable: IntOrString | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(Wire, frozen=True, kw_only=True):
    """A disruption controller's figures (Kubernetes' kube-controller-manager); Tephra runs none, and the
    pdb plugin derives what is allowed from the pods when `disruptionsAllowed` is absent."""

    observed_generation: int | None = None
    disrupted_pods: dict[str, str] | None = None
    disruptions_allowed: int | None = None
    current_healthy: int | None = None
    desired_healthy: int | None = None
    expected_pods: int | None = None
    conditions: list[Raw] | None = None


class PodDisruptionBudget(Wire, frozen=True, kw_only=True, tag_field="kind", tag="PodDisruptionBudget"):
    api_version: str
    metadata: ObjectMeta
    spec: PodDisruptionBudgetSpec | None = None
    status: PodDisruptionBudgetStatus | None = None
