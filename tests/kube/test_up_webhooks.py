"""`vcctl up --backend kube` admits what any client writes to the apiserver through admission's webhooks.

Volcano's own `vcctl job run -N rk -r 2 -m 2` writes a vcjob whose task has no name, for the mutating
webhook to name `default0`. With `up` running, the apiserver calls admission (HTTPS on 127.0.0.1, the
CA admission made), so the job is stored defaulted and runs; an invalid one is refused with admission's
message; a configuration an earlier run left is replaced; stopping `up` removes both configurations.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_vcctl_up import start_up, wait_ready
from tests.kube.support import KUBECONFIG, wipe
from tests.support.services import eventually
from vc_bus.server import free_port
from vc_cli.up_webhooks import (
    ADMISSIONREGISTRATION,
    CERT_NAMESPACE,
    CERT_SECRET,
    MUTATING,
    MUTATING_NAME,
    VALIDATING,
    VALIDATING_NAME,
)
from vc_kube.client import KubeApiError, KubeClient

pytestmark = [pytest.mark.kube, pytest.mark.integration, pytest.mark.slow]
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
DEAD = "https://127.0.0.1:1"  # where a killed run's admission used to listen


def vcctl_run_job(name: str, *, replicas: int = 2, min_available: int = 2) -> dict[str, Any]:
    """What `vcctl job run -N NAME -r 2 -m 2 -R cpu=1,memory=1Gi` (Volcano v1.5.1) sends: no task name."""
    container = {"name": name, "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": min_available,
            "queue": "default",
            "tasks": [
                {
                    "replicas": replicas,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                }
            ],
        },
    }


def stale_configuration() -> dict[str, Any]:
    """`up`'s validating configuration as a run killed with SIGKILL leaves it: failing closed at a dead port."""
    rule = {"apiGroups": ["scheduling.volcano.sh"], "apiVersions": ["v1beta1"], "resources": ["queues"]}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_NAME},
        "webhooks": [
            {
                "name": "validate-queues.tephra.dev",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": {"url": f"{DEAD}/queues/validate"},
                "rules": [{**rule, "operations": ["CREATE", "UPDATE", "DELETE"]}],
            }
        ],
    }


async def configuration(kube: KubeClient, plural: str, name: str) -> dict[str, Any] | None:
    try:
        return await kube.request("GET", f"{ADMISSIONREGISTRATION}/{plural}/{name}")
    except KubeApiError as exc:
        if exc.status == 404:
            return None
        raise


async def running_pods(kube: KubeClient, job: str) -> list[tuple[str, str]]:
    pods = await kube.request(
        "GET", "/api/v1/namespaces/default/pods", query={"labelSelector": f"volcano.sh/job-name={job}"}
    )
    return sorted(
        (p["metadata"]["name"], p["metadata"]["annotations"].get("volcano.sh/task-spec", ""))
        for p in pods["items"]
        if p.get("status", {}).get("phase") == "Running"
    )


@pytest.mark.timeout(300)
async def test_up_on_kube_admits_every_clients_vcjobs_through_its_webhooks_until_it_stops(
    kube: KubeClient, tmp_path: Path
) -> None:
    await kube.request("POST", f"{ADMISSIONREGISTRATION}/{VALIDATING}", body=stale_configuration())
    proc = start_up(tmp_path / "data", free_port(), "--backend", "kube", "--kubeconfig", str(KUBECONFIG))
    try:
        await asyncio.to_thread(wait_ready, proc, 180)
        for plural, name in ((MUTATING, MUTATING_NAME), (VALIDATING, VALIDATING_NAME)):
            registered = await configuration(kube, plural, name)
            assert registered is not None, name
            urls = [h["clientConfig"]["url"] for h in registered["webhooks"]]
            assert all(u.startswith("https://127.0.0.1:") and not u.startswith(DEAD) for u in urls), urls
            assert all(h["clientConfig"]["caBundle"] for h in registered["webhooks"])

        await kube.request("POST", JOBS, body=vcctl_run_job("rk"))
        stored = await kube.request("GET", f"{JOBS}/rk")
        assert [t.get("name") for t in stored["spec"]["tasks"]] == ["default0"]  # defaulted on the way in

        async def gang_runs() -> bool:
            return await running_pods(kube, "rk") == [("rk-default0-0", "default0"), ("rk-default0-1", "default0")]

        await eventually(gang_runs, timeout=60, interval=0.5)

        invalid = vcctl_run_job("too-few", replicas=1, min_available=1)
        invalid["spec"]["tasks"][0]["minAvailable"] = 3  # a gang larger than its task
        with pytest.raises(KubeApiError) as refused:
            await kube.request("POST", JOBS, body=invalid)
        assert refused.value.status == 400
        message = str(refused.value)
        assert "denied the request" in message
        assert "'minAvailable' is greater than 'replicas' in task: default0, job: too-few" in message

        proc.send_signal(signal.SIGINT)
        assert await asyncio.to_thread(proc.wait, 60) == 0
        assert await configuration(kube, MUTATING, MUTATING_NAME) is None
        assert await configuration(kube, VALIDATING, VALIDATING_NAME) is None
    finally:
        if proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        await wipe(kube)  # the job, its pods and PodGroup, the simulated nodes, and any configuration left
        with contextlib.suppress(KubeApiError):
            await kube.request("DELETE", f"/api/v1/namespaces/{CERT_NAMESPACE}/secrets/{CERT_SECRET}")
