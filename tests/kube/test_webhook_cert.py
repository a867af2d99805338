"""The admission's self-managed webhook certificate on the real apiserver, as the admission
ServiceAccount of the install (so its Role is exercised too): get-or-create under a race, renewal
served without a restart, and a CA rotation during which the apiserver keeps trusting the webhook."""

from __future__ import annotations

import asyncio
import base64
import datetime
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from cryptography import x509

from tests.kube.install import (
    ADMISSIONREGISTRATION,
    K8S,
    NAMESPACE,
    WEBHOOK_CONFIGS,
    kubectl,
    point_webhooks_at,
    remove_webhooks,
    service_account_kubeconfig,
)
from tests.support.services import eventually
from tests.support.system import seed
from vc_admission import certs
from vc_admission.cert_manager import CertConfig, CertManager
from vc_admission.http import ServingTLS, serve_webhook
from vc_bus.server import free_port
from vc_core.errors import PermanentError, TemporaryError
from vc_kube.client import KubeClient
from vc_kube.store import KubeStore
from vc_proto.codec import from_dict
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec, QueueStatus
from vc_validation import StaticContext

pytestmark = [pytest.mark.kube, pytest.mark.integration]

SECRET = "tephra-admission-tls"
NAMES = ("tephra-admission.tephra-system.svc",)


class Clock:
    def __init__(self, *, days: float = 0) -> None:
        self.now = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=days)

    def __call__(self) -> datetime.datetime:
        return self.now


AdmissionClient = Callable[[], Awaitable[KubeClient]]


@pytest.fixture
async def as_admission(kube: KubeClient, tmp_path: Path) -> AsyncIterator[AdmissionClient]:
    """The install applied; opens clients authenticated as tephra-admission (one per simulated replica)."""
    kubectl("apply", "-k", str(K8S))
    config = await service_account_kubeconfig(kube, "tephra-admission", tmp_path)
    clients: list[KubeClient] = []

    async def open_client() -> KubeClient:
        clients.append(await KubeClient.connect(str(config)))
        return clients[-1]

    try:
        yield open_client
    finally:
        for client in clients:
            await client.close()
        await remove_webhooks(kube)


DEFAULT_VALIDITY = certs.Validity()


def manager(
    kube: KubeClient, tls: ServingTLS, clock: Clock, validity: certs.Validity = DEFAULT_VALIDITY
) -> CertManager:
    config = CertConfig(
        namespace=NAMESPACE,
        secret=SECRET,
        dns_names=NAMES,
        mutating=("tephra-mutate",),
        validating=("tephra-validate",),
        validity=validity,
        check_interval_s=0.2,
    )
    return CertManager(kube, config, tls, clock=clock)


async def ca_bundles(kube: KubeClient) -> set[str]:
    found = set()
    for plural, name in WEBHOOK_CONFIGS.items():
        doc = await kube.request("GET", f"{ADMISSIONREGISTRATION}/{plural}/{name}")
        found |= {h["clientConfig"].get("caBundle", "") for h in doc["webhooks"]}
    return found


def _handshake(port: int, ca_pem: bytes) -> x509.Certificate:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


async def served(port: int, ca_pem: bytes) -> x509.Certificate:
    """The certificate the server presents, verified against `ca_pem` (in a thread: the server
    runs on this event loop)."""
    return await asyncio.to_thread(_handshake, port, ca_pem)


async def test_two_replicas_racing_on_first_start_make_one_certificate_and_trust_it(
    kube: KubeClient, as_admission: AdmissionClient
) -> None:
    clock = Clock()
    first = manager(await as_admission(), ServingTLS(), clock)
    second = manager(await as_admission(), ServingTLS(), clock)
    a, b = await asyncio.gather(first.sync(), second.sync())
    assert a == b
    secret = await kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{SECRET}")
    assert certs.from_secret_data(secret["data"]) == a
    assert secret["type"] == "kubernetes.io/tls"
    assert await ca_bundles(kube) == {base64.b64encode(a.ca_pem).decode()}
    # A pass with nothing due changes nothing (no write, so no resourceVersion change).
    await first.sync()
    again = await kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{SECRET}")
    assert again["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]


async def _serve(tls: ServingTLS, shutdown: asyncio.Event) -> tuple[int, asyncio.Task[None]]:
    port = free_port()
    started = asyncio.Event()
    queues = {
        n: Queue(
            api_version=SCHEDULING_V1BETA1,
            metadata=ObjectMeta(name=n),
            spec=QueueSpec(weight=1),
            status=QueueStatus(state="Open"),
        )
        for n in ("default", "root")
    }
    task = asyncio.create_task(
        serve_webhook(
            StaticContext(queues=queues),
            host="127.0.0.1",
            port=port,
            tls=tls.context,
            started=started,
            shutdown=shutdown,
        )
    )
    await started.wait()
    return port, task


async def test_a_certificate_due_for_renewal_is_renewed_and_served_without_a_restart(
    kube: KubeClient, as_admission: AdmissionClient
) -> None:
    # TLS clients check validity against the real clock, so the story is told backwards: this replica
    # made its certificate 300 of 365 days ago, and another one, today, finds it due.
    earlier, tls, shutdown = Clock(days=-300), ServingTLS(), asyncio.Event()
    replica = manager(await as_admission(), tls, earlier)
    before = await replica.sync()
    port, server = await _serve(tls, shutdown)
    old = await served(port, before.ca_pem)
    other = manager(await as_admission(), ServingTLS(), Clock())
    loop = asyncio.create_task(replica.run(shutdown))  # re-reads every 0.2 s
    try:
        renewed = await other.sync()
        assert renewed.ca_pem == before.ca_pem and renewed.cert_pem != before.cert_pem
        new_serial = x509.load_pem_x509_certificate(renewed.cert_pem).serial_number

        async def swapped() -> bool:
            return (await served(port, before.ca_pem)).serial_number == new_serial

        await eventually(swapped, timeout=10, interval=0.1)
        assert new_serial != old.serial_number
        assert not server.done()  # the same server, never restarted
    finally:
        shutdown.set()
        await asyncio.gather(loop, server)


async def test_during_a_ca_rotation_the_apiserver_keeps_trusting_the_webhook(
    kube: KubeClient, as_admission: AdmissionClient
) -> None:
    """After each pass the apiserver itself calls the webhook (an invalid vcjob is refused with the
    webhook's message): a caBundle that did not trust the served certificate would fail the call."""
    validity = certs.Validity(ca=datetime.timedelta(days=300), leaf=datetime.timedelta(days=30))
    clock, tls, shutdown = Clock(days=-201), ServingTLS(), asyncio.Event()
    replica = manager(await as_admission(), tls, clock, validity)
    await replica.sync()  # a CA made 201 days ago (99 of 300 days left today) and its first certificate
    clock.now = Clock(days=-10).now
    renewed = await replica.sync()  # the first certificate expired: a new one from the same CA, valid today
    port, server = await _serve(tls, shutdown)
    await point_webhooks_at(kube, port)
    store = KubeStore(kube)
    document = seed("tensorflow-benchmark.yaml")
    document["metadata"]["name"] = "bad-tf"
    document["spec"]["tasks"][1]["minAvailable"] = document["spec"]["tasks"][1]["replicas"] + 5
    job = from_dict(document)

    async def refused_by_the_webhook() -> bool:
        try:
            await store.create(job)
        except PermanentError as exc:
            if "'minAvailable' is greater than 'replicas'" in str(exc):
                return True
            raise
        except TemporaryError:  # the apiserver's copy of the configuration may lag the patch by a moment
            return False
        raise AssertionError("an invalid vcjob was stored")

    def bundle_size(cert: certs.ServingCert) -> int:
        return len(x509.load_pem_x509_certificates(cert.ca_pem))

    try:
        await replica.sync()  # the URLs just changed: the caBundle goes back in
        await eventually(refused_by_the_webhook, timeout=20, interval=0.3)
        first = await served(port, renewed.ca_pem)
        clock.now = Clock().now  # today the CA is due
        phase1 = await replica.sync()
        assert bundle_size(phase1) == 2 and (await served(port, phase1.ca_pem)).serial_number == first.serial_number
        await eventually(refused_by_the_webhook, timeout=20, interval=0.3)
        phase2 = await replica.sync()  # every caBundle now holds the new CA: a certificate from it
        second = await served(port, phase2.ca_pem)
        assert second.serial_number != first.serial_number and phase2.ca_pem == phase1.ca_pem
        second.verify_directly_issued_by(x509.load_pem_x509_certificates(phase2.ca_pem)[0])
        await eventually(refused_by_the_webhook, timeout=20, interval=0.3)
        assert await replica.sync() == phase2  # settled
        assert not server.done()
    finally:
        shutdown.set()
        await server
