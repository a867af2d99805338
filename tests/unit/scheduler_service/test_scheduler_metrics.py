"""The scheduler's Prometheus figures under Volcano's names and units (vc_scheduler.metrics): queue
allocated/request/deserved/share/overused (GPUs in milli-units), plugin and action latency, preemption,
unschedulable jobs and tasks, per-job scheduling time, vGPU devices. Pure: snapshots built directly, a
real cycle run where the figures come from one, values read back from prometheus_client's registry."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

import msgspec
from prometheus_client import REGISTRY

from tests.unit.scheduler_service.service_builders import group, node, pod
from vc_sched_core.cycle import CycleResult, CycleStats, load_scheduler_conf, run_cycle
from vc_sched_core.framework.decisions import Bind, Evict, PodGroupStatusUpdate
from vc_sched_core.snapshot import load_objects
from vc_sched_core.snapshot.cluster import ClusterSnapshot, PodGroupCondition, QueueObj
from vc_sched_core.snapshot.vgpu import VGPUDevice, VGPUDeviceFigures, VGPUPodFigures, encode_node_devices
from vc_scheduler import metrics
from vc_scheduler.share import Partition

GPU = "nvidia.com/gpu"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


def value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def result_of(*decisions: Bind | Evict, podgroups: dict[str, PodGroupStatusUpdate] | None = None) -> CycleResult:
    stats = CycleStats(0.002, {}, jobs=1, tasks_pending=0, nodes=1)
    return CycleResult(tuple(decisions), podgroups or {}, (), (), stats)


def cluster() -> ClusterSnapshot:
    """8 CPUs and 2 GPUs; queue `small` (weight 1) and `big` (weight 3) each asking for more than there is."""
    nodes = (replace(node("n1"), allocatable={"cpu": Fraction(8), GPU: Fraction(2)}),)
    gpu_pod = msgspec.structs.replace(pod("s-0", "s", node="n1"), requests={"cpu": Fraction(1), GPU: Fraction(1)})
    pods = (
        gpu_pod,
        pod("s-1", "s", node="n1"),
        *(pod(f"s-{i}", "s") for i in range(2, 6)),
        pod("b-0", "b", node="n1"),
        pod("b-1", "b"),
        *(pod(f"b-{i}", "b") for i in range(2, 10)),
        pod("done", "b", node="n1", phase="Succeeded"),  # finished pods hold nothing
    )
    queues = (QueueObj("small", weight=1), QueueObj("big", weight=3, capability={"cpu": Fraction(7)}))
    return ClusterSnapshot(nodes=nodes, pods=pods, podgroups=(group("s", "small"), group("b", "big")), queues=queues)


def test_queue_figures_follow_volcanos_proportion() -> None:
    figures = metrics.queue_figures(cluster(), binds={"ns/b-1": "n1"})
    small, big = figures["small"], figures["big"]
    assert small.allocated == {"cpu": 2, GPU: 1} and small.request == {"cpu": 6, GPU: 1}
    assert big.allocated == {"cpu": 2} and big.request == {"cpu": 10}  # b-0 placed, b-1 bound by this cycle
    # 8 CPUs by weight 1:3 -> 2 and 6; small asks for the one GPU it uses, so that is its deserved GPU.
    assert float(small.deserved["cpu"]) == 2 and float(big.deserved["cpu"]) == 6
    assert float(small.deserved[GPU]) == 1 and GPU not in big.deserved
    assert small.share == 1.0 and small.overused  # at its deserved on every resource: overused
    assert big.share == 2 / 6 and not big.overused


def test_queue_gauges_use_volcanos_names_and_units_and_forget_deleted_queues() -> None:
    recorder = metrics.StateRecorder(period_s=0)
    snapshot = cluster()
    recorder.record(result_of(Bind("ns/b-1", "uid-b-1", "n1")), lambda: snapshot)
    assert value("volcano_queue_allocated_milli_cpu", queue_name="big") == 2000
    assert value("volcano_queue_request_milli_cpu", queue_name="big") == 10000
    assert value("volcano_queue_deserved_milli_cpu", queue_name="big") == 6000
    assert value("volcano_queue_capacity_milli_cpu", queue_name="big") == 7000
    assert value("volcano_queue_capacity_milli_cpu", queue_name="small") == -1  # no capability: unlimited
    assert value("volcano_queue_allocated_scalar_resources", queue_name="small", resource=GPU) == 1000
    assert value("volcano_queue_request_scalar_resources", queue_name="small", resource=GPU) == 1000
    assert value("volcano_queue_share", queue_name="small") == 1.0
    assert value("volcano_queue_overused", queue_name="small") == 1
    assert value("volcano_queue_overused", queue_name="big") == 0
    assert value("volcano_queue_weight", queue_name="big") == 3
    # Real capacity: the capability within what the cluster has (no guarantees here to set aside).
    assert value("volcano_queue_real_capacity_milli_cpu", queue_name="big") == 7000
    assert value("volcano_queue_real_capacity_milli_cpu", queue_name="small") == 8000
    assert value("volcano_queue_real_capacity_scalar_resources", queue_name="small", resource=GPU) == 2000
    recorder.record(result_of(), lambda: replace(snapshot, queues=snapshot.queues[1:]))
    assert value("volcano_queue_weight", queue_name="small") is None
    assert value("volcano_queue_allocated_scalar_resources", queue_name="small", resource=GPU) is None
    assert value("volcano_queue_real_capacity_scalar_resources", queue_name="small", resource=GPU) is None
    assert value("volcano_queue_weight", queue_name="big") == 3


def test_state_is_refreshed_at_most_once_a_period() -> None:
    now = [100.0]
    recorder = metrics.StateRecorder(period_s=5, clock=lambda: now[0])
    asked: list[int] = []

    def snapshot() -> ClusterSnapshot:
        asked.append(1)
        return cluster()

    assert recorder.record(result_of(), snapshot)
    now[0] += 4.9
    assert not recorder.record(result_of(), snapshot)
    now[0] += 0.1
    assert recorder.record(result_of(), snapshot)
    assert len(asked) == 2  # the cluster is not even read between refreshes


def test_a_real_cycle_reports_plugin_and_action_latency_per_on_session() -> None:
    before = value("volcano_plugin_scheduling_latency_milliseconds_count", plugin="gang", OnSession="OnSessionOpen")
    opened = value("volcano_open_session_duration_milliseconds_count") or 0
    snapshot = ClusterSnapshot(
        nodes=(node("n1"),), pods=(pod("p-0", "g"),), podgroups=(group("g"),), queues=(QueueObj("default"),)
    )
    result = run_cycle(snapshot)
    metrics.record_timings(result)
    after = value("volcano_plugin_scheduling_latency_milliseconds_count", plugin="gang", OnSession="OnSessionOpen")
    assert after == (before or 0) + 1
    assert value("volcano_plugin_scheduling_latency_milliseconds_count", plugin="gang", OnSession="OnSessionClose")
    assert value("volcano_action_scheduling_latency_milliseconds_count", action="allocate")
    assert value("volcano_e2e_scheduling_latency_milliseconds_count")
    assert value("volcano_open_session_duration_milliseconds_count") == opened + 1


def test_preemption_victims_and_attempts() -> None:
    attempts = value("volcano_total_preemption_attempts") or 0
    metrics.record_decisions(result_of(Evict("ns/a", "u1", "preempt"), Evict("ns/b", "u2", "preempt")))
    assert value("volcano_pod_preemption_victims") == 2
    assert value("volcano_total_preemption_attempts") == attempts + 1
    metrics.record_decisions(result_of(Evict("ns/c", "u3", "reclaim")))  # reclaim is not preemption
    assert value("volcano_pod_preemption_victims") == 0
    assert value("volcano_total_preemption_attempts") == attempts + 1


def test_unschedulable_jobs_and_their_waiting_tasks_are_counted_and_then_forgotten() -> None:
    unschedulable = PodGroupCondition("Unschedulable", "True", "NotEnoughResources", "2/3 tasks in gang unschedulable")
    update = PodGroupStatusUpdate("ns/s", "Inqueue", (unschedulable,), running=1, succeeded=0, failed=0)
    recorder = metrics.StateRecorder(period_s=0)
    recorder.record(result_of(podgroups={"uid-s": update}), cluster)
    assert value("volcano_unschedule_job_count") == 1
    assert value("volcano_unschedule_task_count", job_id="ns/s") == 4  # s-2 .. s-5 wait
    scheduled = replace(update, phase="Running", conditions=(PodGroupCondition("Scheduled", "True"),))
    recorder.record(result_of(podgroups={"uid-s": scheduled}), cluster)
    assert value("volcano_unschedule_job_count") == 0
    assert value("volcano_unschedule_task_count", job_id="ns/s") is None


def test_an_instance_not_exporting_the_cluster_gauges_drops_them_and_keeps_its_own_jobs_from_its_share() -> None:
    unschedulable = PodGroupCondition("Unschedulable", "True", "NotEnoughResources", "2/3 tasks in gang unschedulable")
    update = PodGroupStatusUpdate("ns/s", "Inqueue", (unschedulable,), running=1, succeeded=0, failed=0)
    recorder = metrics.StateRecorder(period_s=0)
    whole = cluster()
    recorder.record(result_of(podgroups={"uid-s": update}), lambda: whole)  # alone: it exports them
    assert value("volcano_queue_weight", queue_name="big") == 3
    assert value("volcano_namespace_share", namespace_name="ns") is not None
    # Another instance joined and owns the cluster's gauges: this one's share holds its PodGroup `s`.
    share = replace(whole, pods=tuple(p for p in whole.pods if p.name.startswith("s-")), podgroups=whole.podgroups[:1])
    recorder.record(result_of(podgroups={"uid-s": update}), lambda: share, whole=False)
    assert value("volcano_queue_weight", queue_name="big") is None
    assert value("volcano_queue_allocated_milli_cpu", queue_name="small") is None
    assert value("volcano_queue_session_start_task_count", queue_name="small", status="pending") is None
    assert value("volcano_namespace_share", namespace_name="ns") is None
    assert value("volcano_unschedule_job_count") == 1
    assert value("volcano_unschedule_task_count", job_id="ns/s") == 4  # counted from the share: s-2 .. s-5


def test_one_instance_of_several_owns_the_cluster_gauges() -> None:
    members = ("s0", "s1", "s2")
    exporters = [m for m in members if Partition(m, members).owns(metrics.CLUSTER_GAUGES_KEY)]
    assert len(exporters) == 1
    assert Partition("s0", ("s0",)).owns(metrics.CLUSTER_GAUGES_KEY)  # alone: always


def test_a_job_is_timed_once_from_its_creation_to_the_cycle_that_made_it_ready() -> None:
    wall = [1_800_000_010.5]  # 10.5 s after both jobs' creation
    recorder = metrics.StateRecorder(period_s=0, wall=lambda: wall[0])
    early = replace(group("early"), creation="2027-01-15T08:00:00Z", phase="Running")
    late = replace(group("late", min_member=2), creation="2027-01-15T08:00:00Z")  # 1_800_000_000 in Unix time
    planned = ClusterSnapshot(nodes=(node("n1"),), podgroups=(early, late), queues=(QueueObj("default"),))
    running = PodGroupCondition("Scheduled", "True")
    updates = {
        key: PodGroupStatusUpdate(key, "Running", (running,), running=0, succeeded=0, failed=0)
        for key in ("ns/early", "ns/late")
    }
    count = value("volcano_e2e_job_scheduling_latency_milliseconds_count") or 0
    recorder.record_job_times(result_of(podgroups=updates), planned)
    labels = {"job_name": "late", "queue": "default", "job_namespace": "ns"}
    assert value("volcano_e2e_job_scheduling_duration", **labels) == 10_500
    assert value("volcano_e2e_job_scheduling_start_time", **labels) == 1_800_000_000
    # `early` was Running before this cycle: its time is not known here, so it is not timed.
    assert value("volcano_e2e_job_scheduling_duration", job_name="early", queue="default", job_namespace="ns") is None
    wall[0] += 60
    recorder.record_job_times(result_of(podgroups=updates), planned)  # reported Running again: timed once
    assert value("volcano_e2e_job_scheduling_duration", **labels) == 10_500
    assert value("volcano_e2e_job_scheduling_latency_milliseconds_count") == count + 1
    recorder.record(result_of(), lambda: replace(planned, podgroups=(early,)))
    assert value("volcano_e2e_job_scheduling_duration", **labels) is None  # the job is gone


def shares_cluster() -> ClusterSnapshot:
    """4 CPUs: `a` (2 one-CPU pods, one at a time) fits; `big` (a gang of 5) never does."""
    pods = (pod("a-0", "a"), pod("a-1", "a"), *(pod(f"big-{i}", "big") for i in range(5)))
    return ClusterSnapshot(
        nodes=(node("n1"),),
        pods=pods,
        podgroups=(group("a"), group("big", min_member=5)),
        queues=(QueueObj("default"),),
    )


def test_a_cycle_yields_stage_times_drf_shares_and_the_jobs_gang_left_unready() -> None:
    result = run_cycle(shares_cluster())
    assert result.binds.keys() == {"ns/a-0", "ns/a-1"}
    stages = result.stats.stages_s
    # Every task allocate tried searched for nodes; the two placed ones also had their node chosen.
    assert len(stages["Predicate"]) >= 2 and all(s >= 0 for s in stages["Predicate"])
    assert len(stages["Scoring"]) >= 2
    # drf's dominant shares as the session left them: `a` holds 2 of 4 CPUs, `big`'s gang was undone.
    assert result.stats.job_shares == {"ns/a": 0.5, "ns/big": 0.0}
    assert result.stats.retried_jobs == ("ns/big",)


def test_stage_times_are_observed_per_task_in_milliseconds() -> None:
    before = value("volcano_scheduling_stage_duration_milliseconds_count", stage="Predicate") or 0
    total = value("volcano_scheduling_stage_duration_milliseconds_sum", stage="Scoring") or 0
    stats = CycleStats(0.002, {}, 1, 0, 1, stages_s={"Predicate": [0.001, 0.002, 0.003], "Scoring": [0.004]})
    metrics.record_stages(CycleResult((), {}, (), (), stats))
    assert value("volcano_scheduling_stage_duration_milliseconds_count", stage="Predicate") == before + 3
    assert value("volcano_scheduling_stage_duration_milliseconds_sum", stage="Scoring") == total + 4.0
    # Volcano's buckets: ExponentialBucketsRange(0.1, 500, 20).
    assert metrics._STAGE_BUCKETS[0] == 0.1 and abs(metrics._STAGE_BUCKETS[-1] - 500) < 1e-9
    assert len(metrics._STAGE_BUCKETS) == 20


def test_job_shares_are_set_as_they_move_and_removed_when_the_job_leaves_the_session() -> None:
    recorder = metrics.ShareRecorder()
    result = run_cycle(shares_cluster())
    recorder.record(result.stats.job_shares)
    assert value("volcano_job_share", job_ns="ns", job_id="a") == 0.5
    assert value("volcano_job_share", job_ns="ns", job_id="big") == 0.0
    recorder.record({"ns/a": 0.75})  # `big` left the session
    assert value("volcano_job_share", job_ns="ns", job_id="a") == 0.75
    assert value("volcano_job_share", job_ns="ns", job_id="big") is None
    recorder.record({})  # no drf (or no jobs): no series
    assert value("volcano_job_share", job_ns="ns", job_id="a") is None


def test_job_retries_count_the_sessions_that_left_a_job_unready_until_it_leaves_the_cluster() -> None:
    recorder = metrics.StateRecorder(period_s=0)
    snapshot = shares_cluster()
    result = run_cycle(snapshot)
    recorder.record_retries(result)
    recorder.record_retries(result)
    assert value("volcano_job_retry_counts", job_id="big") == 2  # Volcano labels it by the job's name
    assert value("volcano_job_retry_counts", job_id="a") is None  # ready: never retried
    recorder.record(result, lambda: snapshot)  # still in the cluster: kept
    assert value("volcano_job_retry_counts", job_id="big") == 2
    recorder.record(result, lambda: replace(snapshot, podgroups=snapshot.podgroups[:1]))
    assert value("volcano_job_retry_counts", job_id="big") is None


VGPU_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true, deviceshare.SchedulePolicy: binpack}
"""


def vgpu_cluster() -> ClusterSnapshot:
    """n1 has 2 GPUs of 16000 MiB (`run-0` holds 1000 MiB and 10% of the first), n2 has none; `new-0`
    asks 2 GPUs with 3000 MiB and 20% of each."""
    gpus = [VGPUDevice(f"GPU-{i}", 10, 16000, "NVIDIA-A10", True) for i in range(2)]
    vgpu = {"volcano.sh/vgpu-number": "20", "volcano.sh/vgpu-memory": "32000", "volcano.sh/vgpu-cores": "200"}
    register = {"volcano.sh/node-vgpu-register": encode_node_devices(gpus)}
    objects: list[dict[str, Any]] = [
        {"kind": "Node", "metadata": {"name": "n1", "annotations": register}, "status": {"allocatable": vgpu}},
        {"kind": "Node", "metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "4"}}},
    ]
    for name, phase in (("run", "Running"), ("new", "Inqueue")):
        meta = {"name": name, "namespace": "default"}
        objects.append({"kind": "PodGroup", "metadata": meta, "spec": {"minMember": 1}, "status": {"phase": phase}})
    held = {"volcano.sh/vgpu-ids-new": "GPU-0,NVIDIA,1000,10:"}
    objects.append(_vgpu_pod("run-0", "run", {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 1000}, held))
    objects.append(
        _vgpu_pod(
            "new-0", "new", {"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 3000, "volcano.sh/vgpu-cores": 20}
        )
    )
    return load_objects(objects)


def _vgpu_pod(name: str, group: str, limits: dict[str, int], held: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"limits": limits}}]}
    if held:
        spec["nodeName"] = "n1"
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": {GROUP_ANNOTATION: group, **(held or {})}},
        "spec": spec,
        "status": {"phase": "Running" if held else "Pending"},
    }


def test_a_cycle_yields_each_gpus_vgpus_and_what_each_pod_holds_on_it() -> None:
    result = run_cycle(vgpu_cluster(), load_scheduler_conf(VGPU_CONF))
    assert result.binds == {"default/new-0": "n1"}
    # Per GPU of the node with vGPUs: memory limit (MiB), pods sharing it, MiB and cores (%) they hold.
    assert result.stats.vgpu_devices == {
        ("GPU-0", "n1"): VGPUDeviceFigures(16000, 2, 4000, 30),
        ("GPU-1", "n1"): VGPUDeviceFigures(16000, 1, 3000, 20),
    }
    assert result.stats.vgpu_pods == {
        ("GPU-0", "n1", "run-0"): VGPUPodFigures(1000, 10),
        ("GPU-0", "n1", "new-0"): VGPUPodFigures(3000, 20),
        ("GPU-1", "n1", "new-0"): VGPUPodFigures(3000, 20),
    }
    plain = run_cycle(shares_cluster())  # no node with vGPUs: nothing
    assert plain.stats.vgpu_devices == {} and plain.stats.vgpu_pods == {}


def test_vgpu_gauges_are_set_as_they_move_and_removed_when_the_gpu_or_the_pod_leaves() -> None:
    recorder = metrics.VGPURecorder()
    stats = run_cycle(vgpu_cluster(), load_scheduler_conf(VGPU_CONF)).stats
    recorder.record(stats.vgpu_devices, stats.vgpu_pods)
    gpu0, gpu1 = {"devID": "GPU-0", "NodeName": "n1"}, {"devID": "GPU-1", "NodeName": "n1"}
    assert value("volcano_vgpu_device_memory_limit", **gpu0) == 16000
    assert value("volcano_vgpu_device_shared_number", **gpu0) == 2
    assert value("volcano_vgpu_device_allocated_memory", **gpu0) == 4000
    assert value("volcano_vgpu_device_allocated_cores", **gpu0) == 30
    assert value("volcano_vgpu_device_allocated_cores", **gpu1) == 20
    new0 = {**gpu1, "podName": "new-0"}
    assert value("volcano_vgpu_device_memory_allocation_for_a_certain_pod", **new0) == 3000
    assert value("volcano_vgpu_device_core_allocation_for_a_certain_pod", **new0) == 20
    # `new-0` gone and GPU-1 with it (the node re-registered one GPU); run-0 now holds more.
    recorder.record(
        {("GPU-0", "n1"): VGPUDeviceFigures(16000, 1, 2000, 10)}, {("GPU-0", "n1", "run-0"): VGPUPodFigures(2000, 10)}
    )
    assert value("volcano_vgpu_device_shared_number", **gpu0) == 1
    assert value("volcano_vgpu_device_allocated_memory", **gpu0) == 2000
    assert value("volcano_vgpu_device_memory_limit", **gpu1) is None
    assert value("volcano_vgpu_device_memory_allocation_for_a_certain_pod", **new0) is None
    assert value("volcano_vgpu_device_memory_allocation_for_a_certain_pod", **gpu0, podName="run-0") == 2000
    recorder.record({}, {})  # no vGPU sharing any more: no series
    assert value("volcano_vgpu_device_memory_limit", **gpu0) is None
    assert value("volcano_vgpu_device_core_allocation_for_a_certain_pod", **gpu0, podName="run-0") is None


def test_eviction_transactions_are_counted_by_the_action_that_evicted() -> None:
    preempt = value("volcano_eviction_transactions_total", action="preempt") or 0
    reclaim = value("volcano_eviction_transactions_total", action="reclaim") or 0
    metrics.record_decisions(result_of(Evict("ns/a", "u1", "preempt"), Evict("ns/b", "u2", "preempt")))
    metrics.record_decisions(result_of(Evict("ns/c", "u3", "reclaim")))
    assert value("volcano_eviction_transactions_total", action="preempt") == preempt + 2
    assert value("volcano_eviction_transactions_total", action="reclaim") == reclaim + 1


def test_each_queues_tasks_by_status_and_each_namespaces_share_are_exported_and_forgotten() -> None:
    recorder = metrics.StateRecorder(period_s=0)
    snapshot = cluster()
    recorder.record(result_of(Bind("ns/b-1", "uid-b-1", "n1")), lambda: snapshot)
    tasks = {
        s: value("volcano_queue_session_start_task_count", queue_name="big", status=s)
        for s in ("pending", "bound", "succeeded", "running")
    }
    assert tasks == {"pending": 8, "bound": 2, "succeeded": 1, "running": 0}  # b-1 bound by this cycle
    assert value("volcano_queue_session_start_task_count", queue_name="small", status="allocated") == 0
    # Namespace ns holds 4 of the 8 CPUs (s-0, s-1, b-0, b-1) and 1 of the 2 GPUs: its dominant share is 1/2.
    assert value("volcano_namespace_share", namespace_name="ns") == 0.5
    assert value("volcano_namespace_weight", namespace_name="ns") == 1
    assert value("volcano_namespace_weighted_share", namespace_name="ns") == 0.5
    recorder.record(result_of(), lambda: replace(snapshot, pods=(), queues=snapshot.queues[1:]))
    assert value("volcano_queue_session_start_task_count", queue_name="small", status="pending") is None
    assert value("volcano_namespace_share", namespace_name="ns") is None
