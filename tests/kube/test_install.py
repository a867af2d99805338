"""`kubectl apply -k deploy/k8s` on the real kube-apiserver, then the whole system under the
install's ServiceAccounts: the seeds' TensorFlow job runs to Completed with every service a local
process authenticated as its own ServiceAccount (RBAC authorization on), node-sim as the hollow
kubelet, a local nats-server as the bus, and Tephra's webhooks called by the apiserver over TLS with
the certificate the admission service made for itself.

A missing permission fails here: the job would not complete, and every service log is searched for a
refusal. An excessive one fails in test_rbac.py.
"""

from __future__ import annotations

import base64
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import tests.support.system as base
from tests.kube.install import (
    ACCOUNTS,
    ADMISSIONREGISTRATION,
    K8S,
    NAMESPACE,
    WEBHOOK_CONFIGS,
    kubectl,
    point_webhooks_at,
    remove_webhooks,
    service_account_kubeconfig,
)
from tests.kube.test_system import KubeSystem
from tests.support.services import ServiceProcess, eventually
from tests.support.system import seed
from vc_bus.server import free_port
from vc_core.errors import NotFound, PermanentError
from vc_kube.client import KubeApiError, KubeClient
from vc_kube.store import KubeStore
from vc_proto.batch import Job
from vc_proto.codec import from_dict
from vc_proto.core import Node
from vc_proto.scheduling import Queue

pytestmark = [pytest.mark.kube, pytest.mark.integration, pytest.mark.slow]

CERT_SECRET = "tephra-admission-tls"


def admission_args(port: int) -> list[str]:
    """The manifests' admission flags, listening where the test's webhook URLs point."""
    (deployment,) = [
        d
        for d in yaml.safe_load_all((K8S / "base" / "services.yaml").read_text())
        if d and d["metadata"]["name"] == "tephra-admission"
    ]
    args: list[str] = list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])
    args[args.index("--webhook-port") + 1] = str(port)
    return [*args, "--webhook-host", "127.0.0.1", "--cert-namespace", NAMESPACE]


class InstalledSystem(KubeSystem):
    """Every service under its own ServiceAccount's kubeconfig; nothing seeded as admin (the
    queue-controller creates `root` and `default` itself, through the webhooks)."""

    def __init__(self, root: Path, kubeconfigs: dict[str, Path], **kwargs: Any) -> None:
        super().__init__(root, **kwargs)
        self.kubeconfigs = kubeconfigs

    def service(self, name: str, binary: str, args: list[str]) -> ServiceProcess:
        account = ACCOUNTS[name.removesuffix("-2")]
        kube_args = ["--backend", "kube", "--kubeconfig", str(self.kubeconfigs[account])]
        return base.System.service(self, name, binary, [*args, *kube_args])

    async def _bootstrap(self, url: str) -> None:
        relay = self.services["kube-relay"] = self.service("kube-relay", "vc-kube-relay", []).start()
        await relay.wait_ready(timeout=60)

    def refusals(self) -> list[str]:
        """Log lines where the apiserver refused a service (RBAC says 403 Forbidden)."""
        return [
            f"{name}: {line[:300]}"
            for name, s in self.services.items()
            for line in s.log_text().splitlines()
            if "forbidden" in line.lower() or " 403" in line
        ]


@pytest.fixture
async def installed(kube: KubeClient, tmp_path: Path) -> AsyncIterator[InstalledSystem]:
    applied = kubectl("apply", "-k", str(K8S))
    assert applied.stdout.count("namespace/") == 1, applied.stdout  # interfaces.md 7: one Namespace object
    kubectl("apply", "-k", str(K8S / "node-sim"))
    port = free_port()
    system: InstalledSystem | None = None
    try:
        await point_webhooks_at(kube, port)
        accounts = {a: await service_account_kubeconfig(kube, a, tmp_path) for a in ACCOUNTS.values()}
        system = InstalledSystem(tmp_path, accounts, nodes=4, extra={"admission": admission_args(port)})
        await system.start()
        yield system
    finally:
        if system is not None:
            system.stop()
        await remove_webhooks(kube)


async def test_the_manifests_apply_in_a_server_side_dry_run(kube: KubeClient) -> None:
    """The apiserver validates every object (schemas, RBAC rules, webhook configurations) without
    storing it. Objects in tephra-system need the namespace to exist for that, so it is made first."""
    try:
        await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
    except KubeApiError as exc:
        assert exc.status == 409
    # An install left by another test would turn the dev overlay's dry run into an update of the NATS
    # StatefulSet's volumeClaimTemplates, which Kubernetes forbids (docs/install.md: switching overlays).
    try:
        await kube.request("DELETE", f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets/nats")
    except KubeApiError as exc:
        assert exc.status == 404
    for target in (K8S, K8S / "overlays" / "dev", K8S / "node-sim"):
        done = kubectl("apply", "-k", str(target), "--dry-run=server")
        errors = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("Warning:")]
        assert errors == [], f"{target}: {done.stderr}"
        assert "(server dry run)" in done.stdout, done.stdout
    # Removal (docs/install.md): base first, which keeps the CRDs and so every user's objects; CRDs last.
    base_removed = kubectl("delete", "-k", str(K8S / "base"), "--dry-run=server", "--ignore-not-found").stdout
    assert 'namespace "tephra-system" deleted' in base_removed and "customresourcedefinition" not in base_removed
    crds_removed = kubectl("delete", "-k", str(K8S / "crds"), "--dry-run=server").stdout
    listed = yaml.safe_load((K8S / "crds" / "kustomization.yaml").read_text())["resources"]
    assert crds_removed.count("customresourcedefinition") == len(listed) >= 4, crds_removed


@pytest.mark.timeout(240)
async def test_the_seed_tensorflow_job_completes_with_every_service_under_its_own_service_account(
    kube: KubeClient, installed: InstalledSystem
) -> None:
    system = installed

    async def nodes_ready() -> bool:
        items, _ = await system.store_call(lambda s: s.list(Node))
        return len(items) == 4 and all(not (n.spec and n.spec.taints) for n in items)

    async def default_queue_open() -> bool:  # created by the queue-controller, through the webhooks
        items, _ = await system.store_call(lambda s: s.list(Queue))
        return any(q.metadata.name == "default" and q.status and q.status.state == "Open" for q in items)

    await eventually(nodes_ready, timeout=30, interval=0.3)
    await eventually(default_queue_open, timeout=30, interval=0.3)
    system.submit(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "3s"}))
    await system.wait_phase("tensorflow-benchmark", "Completed", timeout=120)
    assert system.refusals() == []

    # The webhooks trust the CA in the admission's Secret, and the apiserver reached them over TLS:
    # an invalid vcjob created directly (as the test's admin, not through admission) is refused.
    secret = await kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{CERT_SECRET}")
    for plural, name in WEBHOOK_CONFIGS.items():
        doc = await kube.request("GET", f"{ADMISSIONREGISTRATION}/{plural}/{name}")
        assert {h["clientConfig"].get("caBundle") for h in doc["webhooks"]} == {secret["data"]["ca.crt"]}
    document = seed("tensorflow-benchmark.yaml")
    document["metadata"]["name"] = "bad-tf"
    document["spec"]["tasks"][1]["minAvailable"] = document["spec"]["tasks"][1]["replicas"] + 5
    with pytest.raises(PermanentError, match="minAvailable' is greater than 'replicas'"):
        await KubeStore(kube).create(from_dict(document))
    with pytest.raises(NotFound):  # and nothing of it was stored
        await KubeStore(kube).get(Job, "default", "bad-tf")

    # The services' kubeconfigs really carry their own identity: node-sim's may not create a vcjob.
    async with await KubeClient.connect(str(system.kubeconfigs["tephra-node-sim"])) as as_node_sim:
        with pytest.raises(PermanentError, match=r'403.*"system:serviceaccount:tephra-system:tephra-node-sim"'):
            await KubeStore(as_node_sim, auto_namespaces=False).create(from_dict(seed("tensorflow-benchmark.yaml")))

    # A second replica finds the Secret and serves the same certificate (no second one is made).
    port = free_port()
    second = system.service("admission-2", "vc-admission", admission_args(port)).start()
    system.services["admission-2"] = second
    await second.wait_ready(timeout=60)
    ca = base64.b64decode(secret["data"]["ca.crt"])
    hooks = await kube.request("GET", f"{ADMISSIONREGISTRATION}/validatingwebhookconfigurations/tephra-validate")
    first = int(hooks["webhooks"][0]["clientConfig"]["url"].split(":")[2].split("/")[0])
    assert served_certificate(first, ca) == served_certificate(port, ca)
    assert base64.b64decode(secret["data"]["tls.crt"]).startswith(b"-----BEGIN CERTIFICATE")
    again = await kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{CERT_SECRET}")
    assert again["data"] == secret["data"]
    assert system.refusals() == []


def served_certificate(port: int, ca_pem: bytes) -> bytes:
    """The DER certificate a webhook server presents, verified against `ca_pem` for 127.0.0.1."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der
