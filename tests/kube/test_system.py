"""The whole system with `--backend kube`: every service on the real apiserver, reading the NATS
mirror the relay fills; the seeds' TensorFlow job runs to Completed with node-sim as hollow kubelet."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import tests.support.system as base
from tests.kube.support import KUBECONFIG
from tests.support.services import ServiceProcess, eventually
from tests.support.system import System, seed
from vc_core.errors import AlreadyExists, PermanentError
from vc_kube.client import KubeApiError, KubeClient
from vc_kube.store import KubeStore
from vc_proto.batch import Job
from vc_proto.codec import from_dict
from vc_proto.core import Node, Pod
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec, QueueStatus

pytestmark = [pytest.mark.kube, pytest.mark.integration, pytest.mark.slow]


class KubeSystem(System):
    """System with every service on `--backend kube` and vc-kube-relay mirroring into NATS."""

    def __init__(self, root: Path, **kwargs: Any) -> None:
        super().__init__(root, **kwargs)
        self.kube_args = ["--backend", "kube", "--kubeconfig", str(KUBECONFIG)]

    def service(self, name: str, binary: str, args: list[str]) -> ServiceProcess:
        return super().service(name, binary, [*args, *self.kube_args])

    async def start(self) -> None:
        # System.start seeds the default queues into NATS; here they go to the apiserver instead, and
        # the relay starts before any service so their caches fill from the apiserver.
        original = base.ensure_default_queues
        base.ensure_default_queues = self._bootstrap
        try:
            await super().start()
        finally:
            base.ensure_default_queues = original

    async def _bootstrap(self, url: str) -> None:
        async with await KubeClient.connect(str(KUBECONFIG)) as kube:
            store = KubeStore(kube)
            for name, reclaimable in (("root", False), ("default", True)):
                spec = QueueSpec(weight=1, reclaimable=reclaimable, parent=None if name == "root" else "root")
                queue = Queue(
                    api_version=SCHEDULING_V1BETA1,
                    metadata=ObjectMeta(name=name),
                    spec=spec,
                    status=QueueStatus(state="Open"),
                )
                try:
                    await store.create(queue)
                except AlreadyExists:
                    pass
        relay = self.services["kube-relay"] = self.service("kube-relay", "vc-kube-relay", []).start()
        await relay.wait_ready(timeout=60)

    async def store_call(self, fn: Callable[[Any], Awaitable[Any]]) -> Any:
        async with await KubeClient.connect(str(KUBECONFIG)) as kube:
            return await fn(KubeStore(kube))


@pytest.fixture
async def kube_system(kube: KubeClient, tmp_path: Path) -> AsyncIterator[KubeSystem]:
    system = KubeSystem(tmp_path, nodes=4)
    try:
        await system.start()
        yield system
    finally:
        system.stop()


@pytest.mark.timeout(180)
async def test_tensorflow_seed_completes_on_the_real_apiserver(kube_system: KubeSystem) -> None:
    async def nodes_ready() -> bool:
        items, _ = await kube_system.store_call(lambda s: s.list(Node))
        return len(items) == 4 and all(not (n.spec and n.spec.taints) for n in items)

    await eventually(nodes_ready, timeout=30, interval=0.3)
    kube_system.submit(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "3s"}))
    await kube_system.wait_phase("tensorflow-benchmark", "Completed", timeout=120)
    job: Job = await kube_system.job("tensorflow-benchmark")
    assert job.status is not None and job.status.state is not None


@pytest.fixture
async def webhook_system(kube: KubeClient, tmp_path: Path) -> AsyncIterator[tuple[KubeSystem, int]]:
    from vc_bus.server import free_port

    port = free_port()
    admission = [
        "--webhook-port",
        str(port),
        "--webhook-host",
        "127.0.0.1",
        "--generate-certs",
        str(tmp_path / "certs"),
    ]
    system = KubeSystem(tmp_path, nodes=1, extra={"admission": admission})
    try:
        await system.start()
        yield system, port
    finally:
        system.stop()
        with contextlib.suppress(KubeApiError):
            await kube.request("DELETE", f"{WEBHOOKS}/tephra-kube-test")


WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


@pytest.mark.timeout(180)
async def test_an_invalid_vcjob_is_refused_by_tephras_webhook_with_its_message(
    kube: KubeClient, webhook_system: tuple[KubeSystem, int], tmp_path: Path
) -> None:
    _, port = webhook_system
    ca = base64.b64encode((tmp_path / "certs" / "ca.crt").read_bytes()).decode()
    await kube.request(
        "POST",
        WEBHOOKS,
        body={
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "tephra-kube-test"},
            "webhooks": [
                {
                    "name": "validate-jobs.tephra.dev",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "clientConfig": {"url": f"https://127.0.0.1:{port}/jobs/validate", "caBundle": ca},
                    "rules": [
                        {
                            "apiGroups": ["batch.volcano.sh"],
                            "apiVersions": ["v1alpha1"],
                            "resources": ["jobs"],
                            "operations": ["CREATE", "UPDATE"],
                        }
                    ],
                }
            ],
        },
    )
    document = seed("tensorflow-benchmark.yaml")
    document["metadata"]["name"] = "bad-tf"
    document["spec"]["tasks"][1]["minAvailable"] = document["spec"]["tasks"][1]["replicas"] + 5
    job = from_dict(document)
    store = KubeStore(kube)

    async def refused() -> bool:  # the apiserver picks up a new webhook configuration within a second or so
        try:
            await store.create(job)
        except PermanentError as exc:
            refused.message = str(exc)  # type: ignore[attr-defined]
            return True
        await store.delete(Job, "default", "bad-tf", grace=False)
        return False

    await eventually(refused, timeout=20, interval=0.5)
    message = refused.message  # type: ignore[attr-defined]
    assert "denied the request" in message and "'minAvailable' is greater than 'replicas'" in message


async def ensure_namespace(kube: KubeClient, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    try:
        await kube.request("POST", "/api/v1/namespaces", body=body)
    except KubeApiError as exc:
        if exc.status != 409:  # namespaces outlive a wipe (nothing here would finalize their deletion)
            raise


@pytest.mark.timeout(180)
async def test_a_plain_pod_naming_a_queue_its_namespace_may_not_use_is_refused_by_the_webhook(
    kube: KubeClient, webhook_system: tuple[KubeSystem, int], tmp_path: Path
) -> None:
    """bob works in team-b; queue team-a admits team-a only. His plain Pod there, naming team-a in the
    queue annotation, is refused by the apiserver through Tephra's pod webhook, and nothing is stored."""
    _, port = webhook_system
    ca = base64.b64encode((tmp_path / "certs" / "ca.crt").read_bytes()).decode()
    for namespace in ("team-a", "team-b"):
        await ensure_namespace(kube, namespace)
    store = KubeStore(kube)
    queue_spec = QueueSpec(weight=1, parent="root", allowed_namespaces=["team-a"])
    await store.create(Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="team-a"), spec=queue_spec))
    await kube.request(
        "POST",
        WEBHOOKS,
        body={
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "tephra-kube-test"},
            "webhooks": [
                {
                    "name": "validate-pods.tephra.dev",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "clientConfig": {"url": f"https://127.0.0.1:{port}/pods/validate", "caBundle": ca},
                    "rules": [
                        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}
                    ],
                }
            ],
        },
    )
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "bobs-pod",
            "namespace": "team-b",
            "annotations": {"scheduling.volcano.sh/queue-name": "team-a"},
        },
        "spec": {"schedulerName": "volcano", "containers": [container]},
    }
    pods = "/api/v1/namespaces/team-b/pods"

    rule = "namespace `team-b` is not allowed to submit to queue `team-a`"

    async def refused() -> bool:  # until the apiserver calls the new webhook and admission knows the queue
        try:
            await kube.request("POST", pods, body=pod)
        except KubeApiError as exc:
            refused.error = exc  # type: ignore[attr-defined]
            return rule in str(exc)
        await kube.request("DELETE", f"{pods}/bobs-pod", body={"gracePeriodSeconds": 0})
        return False

    await eventually(refused, timeout=30, interval=0.5)
    error: KubeApiError = refused.error  # type: ignore[attr-defined]
    assert error.status == 400 and "denied the request" in str(error), error
    assert f"metadata.annotations[scheduling.volcano.sh/queue-name]: {rule}" in str(error), error
    with pytest.raises(KubeApiError) as missing:
        await kube.request("GET", f"{pods}/bobs-pod")
    assert missing.value.status == 404
    podgroups = await kube.request("GET", "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-b/podgroups")
    assert podgroups["items"] == []


def gang_job(name: str, *, workers: int = 4, gpu: str = "1") -> dict[str, Any]:
    resources = {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": gpu}, "limits": {"nvidia.com/gpu": gpu}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": workers,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": workers,
                    "template": {
                        "metadata": {"annotations": {"sim.tephra.dev/duration": "1h"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "w", "image": "busybox", "resources": resources}],
                        },
                    },
                }
            ],
        },
    }


async def bound_pods(system: KubeSystem) -> dict[str, str]:
    """pod name -> node, for every bound pod, read from the apiserver."""
    pods, _ = await system.store_call(lambda s: s.list(Pod, "default"))
    return {p.metadata.name or "": p.spec.node_name for p in pods if p.spec and p.spec.node_name}


@pytest.fixture
async def gpu_system(kube: KubeClient, tmp_path: Path) -> AsyncIterator[KubeSystem]:
    system = KubeSystem(tmp_path, nodes=4, node_gpu="1")
    try:
        await system.start()
        yield system
    finally:
        system.stop()


@pytest.mark.timeout(180)
async def test_the_deadlock_case_places_one_job_whole(gpu_system: KubeSystem) -> None:
    for name in ("job1", "job2"):
        gpu_system.submit(gang_job(name))

    async def one_whole_job() -> bool:
        return len(await bound_pods(gpu_system)) == 4

    await eventually(one_whole_job, timeout=60, interval=0.5)
    await asyncio.sleep(3)  # more schedule cycles: nothing else may bind
    bound = await bound_pods(gpu_system)
    jobs = {name.rsplit("-", 2)[0] for name in bound}
    assert len(bound) == 4 and len(jobs) == 1, bound
    assert len(set(bound.values())) == 4  # one pod per one-GPU node


@pytest.fixture
async def two_scheduler_system(kube: KubeClient, tmp_path: Path) -> AsyncIterator[KubeSystem]:
    system = KubeSystem(tmp_path, nodes=4, node_gpu="2")
    try:
        await system.start()
        second = system.service("scheduler-2", "vc-scheduler", ["--schedule-period", "0.5"]).start()
        system.services["scheduler-2"] = second
        await second.wait_ready(timeout=60)
        yield system
    finally:
        system.stop()


@pytest.mark.timeout(180)
async def test_two_scheduler_instances_never_overcommit_a_node(two_scheduler_system: KubeSystem) -> None:
    system = two_scheduler_system
    for i in range(8):  # 16 one-GPU pods for 8 GPUs
        system.submit(gang_job(f"g{i}", workers=2))
    worst: dict[str, int] = {}
    deadline = asyncio.get_running_loop().time() + 25
    while asyncio.get_running_loop().time() < deadline:
        per_node: dict[str, int] = {}
        for node in (await bound_pods(system)).values():
            per_node[node] = per_node.get(node, 0) + 1
        for node, count in per_node.items():
            worst[node] = max(worst.get(node, 0), count)
        if sum(per_node.values()) == 8:
            break
        await asyncio.sleep(0.2)
    assert worst and max(worst.values()) <= 2, worst  # each pod takes one of the node's 2 GPUs
    assert len(await bound_pods(system)) == 8  # and the GPUs do get used
