"""Volcano's example JobTemplates, JobFlow and CronJob on the real kube-apiserver: the CRDs take them
unchanged, and the flow controller, under its own ServiceAccount (least-privilege RBAC) and reading
the relay's NATS mirror, creates the flow's jobs in dependency order, writes the flow's status and
removes the jobs with the flow."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from tests.kube.install import K8S, kubectl, service_account_kubeconfig
from tests.kube.support import KUBECONFIG
from tests.support.secure import session_bus
from tests.support.services import ServiceProcess
from tests.support.waiting import eventually
from vc_core.errors import AlreadyExists, NotFound
from vc_kube.client import KubeClient
from vc_kube.store import KubeStore
from vc_proto import codec
from vc_proto.batch import Job, JobState, JobStatus
from vc_proto.cronjob import CronJob
from vc_proto.flow import JobFlow, JobTemplate
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec, QueueStatus

pytestmark = [pytest.mark.kube, pytest.mark.integration]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "volcano"
EXAMPLES = ("jobflow-JobTemplate.yaml", "jobflow-JobFlow.yaml", "cronjob.yaml")


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]


async def test_the_crds_take_volcanos_examples_unchanged(kube: KubeClient) -> None:
    for name in EXAMPLES:
        applied = kubectl("apply", "-f", str(FIXTURES / name))
        assert applied.returncode == 0, applied.stderr
    store = KubeStore(kube)
    for name in EXAMPLES:
        for document in documents(name):
            sent = codec.from_dict(document)
            stored = await store.get(type(sent), "default", sent.metadata.name or "")
            assert stored.spec == sent.spec, name  # type: ignore[attr-defined]
            assert stored.metadata.labels == sent.metadata.labels


@pytest.fixture
async def flow_controller(kube: KubeClient, tmp_path: Path) -> AsyncIterator[KubeStore]:
    """The relay (as admin) and vc-flow-controller (as tephra-flow-controller) on a NATS mirror."""
    base = K8S / "base"
    kubectl("apply", "-f", str(base / "namespace.yaml"), "-f", str(base / "rbac" / "flow-controller.yaml"))
    account = await service_account_kubeconfig(kube, "tephra-flow-controller", tmp_path)
    store = KubeStore(kube)
    try:
        await store.create(
            Queue(
                api_version=SCHEDULING_V1BETA1,
                metadata=ObjectMeta(name="default"),
                spec=QueueSpec(weight=1, reclaimable=True),
                status=QueueStatus(state="Open"),
            )
        )
    except AlreadyExists:
        pass
    server = session_bus().server(tmp_path / "nats")
    server.start()
    processes: list[ServiceProcess] = []
    try:
        for binary, kubeconfig in (("vc-kube-relay", KUBECONFIG), ("vc-flow-controller", account)):
            args = ["--backend", "kube", "--kubeconfig", str(kubeconfig), "--instance", binary]
            process = ServiceProcess(binary, server.url, args, tmp_path / f"{binary}.log").start()
            processes.append(process)
            await process.wait_ready(timeout=60)
        yield store
    finally:
        for process in processes:
            process.stop_quietly()
        server.stop()


async def names(store: KubeStore) -> set[str]:
    jobs, _ = await store.list(Job, "default")
    return {job.metadata.name or "" for job in jobs if (job.metadata.name or "").startswith("test-")}


async def complete(store: KubeStore, name: str) -> None:
    """What the job controller writes once the job's pods ended."""
    job = await store.get(Job, "default", name)
    state = JobState(phase="Completed", last_transition_time="2026-01-01T00:00:00Z")
    await store.update(msgspec.structs.replace(job, status=JobStatus(state=state)))


async def test_the_flow_controller_runs_the_example_flow_under_its_own_service_account(
    flow_controller: KubeStore,
) -> None:
    store = flow_controller
    for document in [*documents("jobflow-JobTemplate.yaml"), *documents("jobflow-JobFlow.yaml")]:
        obj = codec.from_dict(document)
        await store.create(
            msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, namespace="default"))
        )

    async def jobs_are(expected: set[str]) -> bool:
        return await names(store) == expected

    await eventually(lambda: jobs_are({"test-a"}), timeout=60)
    await complete(store, "test-a")
    await eventually(lambda: jobs_are({"test-a", "test-b"}), timeout=60)

    async def flow_lists(job: str) -> bool:
        flow = await store.get(JobFlow, "default", "test")
        return job in ((flow.status.completed_jobs if flow.status else None) or [])

    await eventually(lambda: flow_lists("test-a"), timeout=60)  # the status subresource, written under the account
    template = await store.get(JobTemplate, "default", "a")
    assert template.status is not None and template.status.job_depends_on_list == ["test-a"]
    await store.delete(JobFlow, "default", "test")
    await eventually(lambda: jobs_are(set()), timeout=60)  # the flow's jobs go with it


async def test_a_cronjob_without_its_crd_defaults_is_read_with_volcanos(kube: KubeClient) -> None:
    """Without the webhook (and the CRD's defaults), the stored CronJob has no history limits or policy."""
    kubectl("apply", "-f", str(FIXTURES / "cronjob.yaml"))
    stored = await KubeStore(kube).get(CronJob, "default", "volcano-cronjob-example")
    assert stored.spec is not None and stored.spec.concurrency_policy == "Forbid"
    with pytest.raises(NotFound):
        await KubeStore(kube).get(CronJob, "default", "absent")
