"""Volcano jobs live their whole life on the embedded system (every service a real process, real NATS)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.services import eventually
from tests.support.system import System, seed, start_system
from vc_core.errors import NotFound
from vc_proto.core import ConfigMap, Pod, Secret
from vc_proto.scheduling import Queue

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
async def system(tmp_path: Path) -> AsyncIterator[System]:
    """A system of its own, for a test that changes it (kills a controller, makes a node NotReady) or
    reads a total over every job (a queue's allocation)."""
    running = await start_system(tmp_path)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    """One system for the tests that only submit jobs of names no other test here uses and look at those
    jobs alone: each system start is seven processes, the larger part of such a test's time."""
    running = asyncio.run(start_system(tmp_path_factory.mktemp("shared-system")))
    try:
        yield running
    finally:
        running.stop()


async def pods_of(system: System, job: str) -> dict[str, Pod]:
    pods, _ = await system.store_call(lambda s: s.list(Pod, "default"))
    return {p.metadata.name or "": p for p in pods if (p.metadata.labels or {}).get("volcano.sh/job-name") == job}


def env_of(pod: Pod) -> dict[str, str]:
    container = (pod.spec.containers or [])[0] if pod.spec else None
    return {e.name: e.value or "" for e in (container.env or [])} if container else {}


def simple_job(
    name: str,
    *,
    tasks: list[dict[str, Any]],
    policies: list[dict[str, Any]] | None = None,
    max_retry: int | None = None,
    plugins: dict[str, list[str]] | None = None,
    min_available: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano", "tasks": tasks}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if policies:
        spec["policies"] = policies
    if max_retry is not None:
        spec["maxRetry"] = max_retry
    if plugins:
        spec["plugins"] = plugins
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def task(name: str, replicas: int, *, duration: str = "1h", exit_code: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        **extra,
        "template": {
            "metadata": {
                "annotations": {"sim.tephra.dev/duration": duration, "sim.tephra.dev/exit-code": str(exit_code)}
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
                ],
            },
        },
    }


async def test_pod_evicted_from_a_not_ready_node_restarts_the_job(system: System) -> None:
    await system.apply(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "1h"}))
    await system.wait_phase("tensorflow-benchmark", "Running")
    pods = await pods_of(system, "tensorflow-benchmark")
    node = pods["tensorflow-benchmark-worker-0"].spec.node_name  # type: ignore[union-attr]
    assert node and system.vcctl("node", "not-ready", node).returncode == 0

    async def restarted() -> bool:
        job = await system.job("tensorflow-benchmark")
        return bool(
            job.status
            and (job.status.retry_count or 0) >= 1
            and job.status.state
            and job.status.state.phase == "Running"
        )

    await eventually(restarted, timeout=45, interval=0.2)
    job = await system.job("tensorflow-benchmark")
    assert job.status and job.status.version == 1
    new_pods = await pods_of(system, "tensorflow-benchmark")
    assert all(p.spec and p.spec.node_name != node for p in new_pods.values())
    assert any(
        h["reason"] == "PhaseChanged" and h.get("phase") == "Restarting" for h in system.history("tensorflow-benchmark")
    )


async def test_killed_controller_restarts_without_duplicates_or_lost_transitions(system: System) -> None:
    names = [f"crash-{i}" for i in range(6)]
    for name in names:
        await system.apply(simple_job(name, tasks=[task("w", 2, duration="3s")]))
    await asyncio.sleep(0.5)
    system.services["job-controller"].kill()
    system.services["job-controller"].start()
    for name in names:
        await system.wait_phase(name, "Completed", timeout=60)
    for name in names:
        created = [h["name"] for h in system.history(name) if h["reason"] == "PodCreated"]
        assert sorted(set(created)) == [f"{name}-w-0", f"{name}-w-1"]
        phases = [h.get("phase") for h in system.history(name) if h["kind"] == "Job" and h["reason"] == "PhaseChanged"]
        assert phases[0] == "Pending" and phases[-1] == "Completed" and "Running" in phases


async def test_two_controllers_survivor_takes_over(system: System) -> None:
    # One of the system's services: its log is in a failure's message (the survivor's view of the members),
    # and the fixture stops it.
    second = system.services["job-controller-2"] = system.service(
        "job-controller-2", "vc-job-controller", ["--lease-ttl", "2"]
    ).start()
    await second.wait_ready()
    system.services["job-controller"].kill()
    names = [f"handover-{i}" for i in range(6)]
    for name in names:
        await system.apply(simple_job(name, tasks=[task("w", 1, duration="2s")]))
    for name in names:
        await system.wait_phase(name, "Completed", timeout=60)


async def _no_live_pods(system: System, job: str) -> bool:
    pods = await pods_of(system, job)
    return all(p.status and p.status.phase in ("Succeeded", "Failed") for p in pods.values())


async def test_deleted_job_leaves_no_children_but_keeps_its_history(system: System) -> None:
    await system.apply(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "1h"}))
    await system.wait_phase("tensorflow-benchmark", "Running")
    before = system.history("tensorflow-benchmark")
    assert system.vcctl("job", "delete", "-N", "tensorflow-benchmark").returncode == 0

    async def children_gone() -> bool:
        pods = await pods_of(system, "tensorflow-benchmark")
        try:
            await system.store_call(lambda s: s.get(ConfigMap, "default", "tensorflow-benchmark-svc"))
        except NotFound:
            return not pods
        return False

    await eventually(children_gone, timeout=45, interval=0.3)
    after = system.history("tensorflow-benchmark")
    assert after[: len(before)] == before and len(after) >= len(before)


async def test_delayed_policy_action_survives_a_controller_crash(system: System) -> None:
    # TaskCompleted -> CompleteJob after 8 s: the completion edge is not re-derived from state after a
    # restart, so only a stored delay completes the job when the controller dies in between.
    await system.apply(
        simple_job(
            "patient",
            tasks=[
                task("steady", 1),
                task(
                    "quick",
                    1,
                    duration="1s",
                    policies=[{"event": "TaskCompleted", "action": "CompleteJob", "timeout": "8s"}],
                ),
            ],
        )
    )
    await system.wait_phase("patient", "Running")

    async def delayed() -> bool:
        return any(h["reason"] == "ActionDelayed" for h in system.history("patient"))

    await eventually(delayed, timeout=20, interval=0.2)
    system.services["job-controller"].kill()
    system.services["job-controller"].start()
    await system.wait_phase("patient", "Completed", timeout=60)


async def test_queue_status_allocated_follows_the_running_pods(system: System) -> None:
    async def allocated(queue: str) -> dict[str, str]:
        stored = await system.store_call(lambda s: s.get(Queue, None, queue))
        return dict((stored.status.allocated if stored.status else None) or {})

    await system.apply(simple_job("counted", tasks=[task("w", 2)]))
    await system.wait_phase("counted", "Running")

    async def shows_two() -> bool:
        return (await allocated("default")).get("cpu") == "2" and (await allocated("root")).get("cpu") == "2"

    await eventually(shows_two, timeout=30, interval=0.2)
    assert system.vcctl("job", "delete", "-N", "counted").returncode == 0

    async def back_to_zero() -> bool:
        return (await allocated("default")).get("cpu") in (None, "0")

    await eventually(back_to_zero, timeout=30, interval=0.2)


# The tests on the shared system come last: it starts with the first of them and stops with the module,
# so it does not idle beside the systems of the tests above.


async def test_tensorflow_seed_gets_hostfiles_and_env_and_completes_on_task_completed(shared: System) -> None:
    await shared.apply(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "3s"}))
    await shared.wait_phase("tensorflow-benchmark", "Running")
    hosts = await shared.store_call(lambda s: s.get(ConfigMap, "default", "tensorflow-benchmark-svc"))
    assert hosts.data is not None
    assert hosts.data["ps.host"] == "tensorflow-benchmark-ps-0.tensorflow-benchmark"
    assert hosts.data["worker.host"].split("\n") == [
        f"tensorflow-benchmark-worker-{i}.tensorflow-benchmark" for i in (0, 1)
    ]
    pods = await pods_of(shared, "tensorflow-benchmark")
    worker = pods["tensorflow-benchmark-worker-1"]
    assert env_of(worker)["VK_TASK_INDEX"] == "1" and env_of(worker)["VC_TASK_INDEX"] == "1"
    mounts = {m.mount_path for m in ((worker.spec.containers or [])[0].volume_mounts or [])} if worker.spec else set()
    assert "/etc/volcano" in mounts
    await shared.wait_phase("tensorflow-benchmark", "Completed")
    history = shared.history("tensorflow-benchmark")
    reasons = [(h["kind"], h["reason"]) for h in history]
    assert ("Job", "ExecuteAction") in reasons and reasons[-1] == ("Job", "PhaseChanged")
    assert any(h["reason"] == "PodExited" and h.get("exitCode") == 0 for h in history)


async def test_mpi_seed_gets_ssh_keys_and_completes_when_the_master_finishes(shared: System) -> None:
    await shared.apply(seed("lm-mpi-job.yaml", durations={"mpimaster": "3s", "mpiworker": "1h"}))
    await shared.wait_phase("lm-mpi-job", "Running")
    secret = await shared.store_call(lambda s: s.get(Secret, "default", "lm-mpi-job-ssh"))
    assert secret.data is not None and {"id_rsa", "id_rsa.pub", "authorized_keys", "config"} <= set(secret.data)
    await shared.wait_phase("lm-mpi-job", "Completed")
    assert await pods_of(shared, "lm-mpi-job") == {} or all(
        p.status and p.status.phase in ("Succeeded", "Failed") for p in (await pods_of(shared, "lm-mpi-job")).values()
    )


async def test_exit_code_policy_and_max_retry_exhaustion(shared: System) -> None:
    await shared.apply(
        simple_job(
            "abort-on-3",
            tasks=[task("w", 2, duration="1s", exit_code=3)],
            policies=[{"exitCode": 3, "action": "AbortJob"}],
        )
    )
    await shared.apply(
        simple_job(
            "retry-until-failed",
            tasks=[task("w", 1, duration="1s", exit_code=1)],
            policies=[{"event": "PodFailed", "action": "RestartJob"}],
            max_retry=2,
        )
    )
    await shared.wait_phase("abort-on-3", "Aborted")
    await shared.wait_phase("retry-until-failed", "Failed", timeout=60)
    job = await shared.job("retry-until-failed")
    assert job.status and job.status.retry_count == 2


async def test_restart_task_restarts_only_that_task(shared: System) -> None:
    await shared.apply(
        simple_job(
            "partial",
            tasks=[
                task("steady", 1),
                task(
                    "flaky", 1, duration="2s", exit_code=1, policies=[{"event": "PodFailed", "action": "RestartTask"}]
                ),
            ],
            max_retry=5,
        )
    )
    await shared.wait_phase("partial", "Running")
    steady_uid = (await pods_of(shared, "partial"))["partial-steady-0"].metadata.uid

    async def flaky_restarted() -> bool:
        job = await shared.job("partial")
        return bool(job.status and (job.status.retry_count or 0) >= 1)

    await eventually(flaky_restarted, timeout=30, interval=0.2)
    assert (await pods_of(shared, "partial"))["partial-steady-0"].metadata.uid == steady_uid


async def test_suspend_and_resume(shared: System) -> None:
    await shared.apply(simple_job("pausable", tasks=[task("w", 2)]))
    await shared.wait_phase("pausable", "Running")
    assert shared.vcctl("job", "suspend", "-N", "pausable").returncode == 0
    await shared.wait_phase("pausable", "Aborted")
    await eventually(lambda: _no_live_pods(shared, "pausable"), timeout=30)
    assert shared.vcctl("job", "resume", "-N", "pausable").returncode == 0
    await shared.wait_phase("pausable", "Running")


async def test_depends_on_creates_dependents_after_their_dependency_runs(shared: System) -> None:
    # A gang of all three could never start while the workers wait for the ps: minAvailable 1 (as Volcano needs too).
    await shared.apply(
        simple_job("ordered", tasks=[task("ps", 1), task("worker", 2, dependsOn={"name": ["ps"]})], min_available=1)
    )
    await shared.wait_phase("ordered", "Running", timeout=60)
    history = shared.history("ordered")
    created = {h["name"]: i for i, h in enumerate(history) if h["reason"] == "PodCreated"}
    ps_running = next(i for i, h in enumerate(history) if h["name"] == "ordered-ps-0" and h.get("phase") == "Running")
    assert created["ordered-worker-0"] > ps_running and created["ordered-worker-1"] > ps_running
