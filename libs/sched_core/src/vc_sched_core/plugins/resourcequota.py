"""resourcequota: a namespace's ResourceQuotas gate enqueue (Volcano resourcequota.go).

A PodGroup with minResources is enqueueable while, for every quota of its namespace, what the quota has
used plus what this session already admitted in the namespace plus the PodGroup's request stays within
`hard`, on the names the quota limits (quota names as written: requests.cpu, cpu, pods, count/pods...).
`status.used` is the quota controller's figure; a quota without it (Tephra runs no quota controller) is
counted from the namespace's pods that have not finished: pods and count/pods as their number,
requests.<r> and <r> as the sum of requests (limits.<r> too: a pod's limits are not in the snapshot, so
its requests stand for them, a lower bound).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction
from typing import ClassVar, Final

from vc_core.quantity import format_quantity
from vc_core.resources import Resources
from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs, Verdict, Vote
from vc_sched_core.framework.model import JobInfo
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.session_cluster import snapshot_of
from vc_sched_core.snapshot.cluster import PodObj, ResourceQuotaObj

NAME: Final = "resourcequota"
FINISHED_PHASES: Final = frozenset({"Succeeded", "Failed"})
_COUNTS: Final = frozenset({"pods", "count/pods"})


def show(resources: Mapping[str, Fraction]) -> str:
    shown = (
        f"{name}: {format_quantity(value, binary='memory' in name or 'storage' in name)}"
        for name, value in sorted(resources.items())
    )
    return "{" + ", ".join(shown) + "}"


def counted_usage(quota: ResourceQuotaObj, pods: list[PodObj]) -> Resources:
    """What the quota's names add up to over `pods` (the namespace's unfinished pods)."""
    used: Resources = {}
    for name in quota.hard:
        if name in _COUNTS:
            used[name] = Fraction(len(pods))
            continue
        resource = name.removeprefix("requests.").removeprefix("limits.")
        used[name] = sum((pod.requests.get(resource, Fraction(0)) for pod in pods), Fraction(0))
    return used


class ResourceQuotaPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.quotas: dict[str, list[tuple[ResourceQuotaObj, Resources]]] = {}
        self.pending: dict[str, Resources] = {}

    def on_session_open(self, ssn: Session) -> None:
        snapshot = snapshot_of(ssn)
        self.quotas, self.pending = {}, {}
        if not snapshot.resource_quotas:
            return
        pods: dict[str, list[PodObj]] = defaultdict(list)
        for pod in snapshot.pods:
            if pod.phase not in FINISHED_PHASES:
                pods[pod.namespace].append(pod)
        for quota in snapshot.resource_quotas:
            used = quota.used if quota.used is not None else counted_usage(quota, pods[quota.namespace])
            self.quotas.setdefault(quota.namespace, []).append((quota, used))
        ssn.add_fn(ExtensionPoint.JOB_ENQUEUEABLE, NAME, self.job_enqueueable)
        ssn.add_fn(ExtensionPoint.JOB_ENQUEUED, NAME, self.job_enqueued)

    def on_session_close(self, ssn: Session) -> None:
        self.quotas, self.pending = {}, {}

    def job_enqueueable(self, job: JobInfo) -> Verdict:
        request = job.podgroup.quota_request
        quotas = self.quotas.get(job.namespace)
        if request is None or not quotas:
            return Verdict(Vote.PERMIT)
        pending = self.pending.get(job.namespace, {})
        for quota, used in quotas:
            requested = {name: value for name, value in request.items() if name in quota.hard}
            exceeded = sorted(
                name
                for name, value in requested.items()
                if used.get(name, Fraction(0)) + pending.get(name, Fraction(0)) + value > quota.hard[name]
            )
            if exceeded:
                message = (
                    f"resource quota insufficient, requested: {show({n: requested[n] for n in exceeded})}, "
                    f"used: {show({n: used.get(n, Fraction(0)) for n in exceeded})}, "
                    f"limited: {show({n: quota.hard[n] for n in exceeded})} "
                    f"(ResourceQuota {quota.namespace}/{quota.name})"
                )
                return Verdict(Vote.REJECT, message)
        return Verdict(Vote.PERMIT)

    def job_enqueued(self, job: JobInfo) -> None:
        request = job.podgroup.quota_request
        if request is None or job.namespace not in self.quotas:
            return
        pending = self.pending.setdefault(job.namespace, {})
        for name, value in request.items():
            pending[name] = pending.get(name, Fraction(0)) + value
