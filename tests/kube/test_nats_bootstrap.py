"""The install closes NATS, on the real apiserver: the bootstrap Job's command, run as its own
ServiceAccount after `kubectl apply -k deploy/k8s`, makes the Secrets; a nats-server started from the
manifests' configuration with those Secrets' files admits each identity (with its kube-backend
permissions) over TLS and nobody else; a second run changes nothing; deleting one identity's Secret
and running it again rotates that key alone."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.kube.install import K8S, NAMESPACE, kubectl, service_account_kubeconfig
from tests.kube.test_manifests import named
from tests.security.bus import probe, refused_connection
from vc_bus.server import find_nats_server, free_port
from vc_kube.client import KubeClient
from vc_security.cluster import AUTH_SECRET, TLS_SECRET, creds_secret, secret_names
from vc_security.credentials import ClientCredentials, decode_credentials
from vc_security.identities import SERVICE_GRANTS

pytestmark = [pytest.mark.kube, pytest.mark.integration]
BIN = Path(sys.executable).parent


def bootstrap(kubeconfig: Path) -> None:
    done = subprocess.run(
        [str(BIN / "vc-nats-bootstrap"), "--namespace", NAMESPACE, "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


async def secrets_now(kube: KubeClient) -> dict[str, dict[str, Any]]:
    out = {}
    for name in secret_names():
        out[name] = await kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}")
    return out


def decoded(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def credentials(secrets: dict[str, dict[str, Any]], identity: str) -> ClientCredentials:
    return decode_credentials(decoded(secrets[creds_secret(identity)], "creds.json"), source=identity)


def start_nats(root: Path, secrets: dict[str, dict[str, Any]], port: int) -> subprocess.Popen[bytes]:
    """nats-server with the dev overlay's nats-server.conf and the Secrets' files, paths moved under `root`."""
    conf = named("ConfigMap", "nats-config", "overlays/dev")["data"]["nats-server.conf"]
    conf = conf.replace("/etc/nats", str(root)).replace("/data/jetstream", str(root.parent / "jetstream"))
    conf = conf.replace('listen: "0.0.0.0:4222"', f'listen: "127.0.0.1:{port}"').replace('http: "0.0.0.0:8222"', "")
    for directory, secret, keys in (
        ("tls", TLS_SECRET, ("tls.crt", "tls.key", "ca.crt")),
        ("auth", AUTH_SECRET, ("auth.conf",)),
    ):
        (root / directory).mkdir(parents=True, exist_ok=True)
        for key in keys:
            (root / directory / key).write_bytes(decoded(secrets[secret], key))
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "config" / "nats-server.conf").write_text(conf)
    log = root.parent / "nats.log"
    proc = subprocess.Popen(
        [find_nats_server(), "-c", str(root / "config" / "nats-server.conf"), "-l", str(log)],
        env={"POD_NAME": "nats-0"},
    )
    deadline = time.monotonic() + 20
    while "Server is ready" not in (log.read_text() if log.exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
        time.sleep(0.05)
    return proc


@pytest.mark.timeout(180)
async def test_the_bootstrap_closes_nats_and_rotates_one_key_at_a_time(kube: KubeClient, tmp_path: Path) -> None:
    kubectl("apply", "-k", str(K8S))
    account = await service_account_kubeconfig(kube, "tephra-nats-bootstrap", tmp_path)
    bootstrap(account)
    first = await secrets_now(kube)

    port = free_port()
    server = start_nats(tmp_path / "etc" / "nats", first, port)
    url = f"tls://127.0.0.1:{port}"
    try:
        ca = decoded(first[TLS_SECRET], "ca.crt")
        assert "Authorization Violation" in await refused_connection(url, None, ca_pem=ca)
        for identity in (*SERVICE_GRANTS, "admin"):
            creds = credentials(first, identity)
            assert creds.ca_pem == ca  # the credentials carry the CA the services check NATS against
            async with probe(url, creds) as p:
                # With the kube backend only the relay writes the object buckets; admin writes no bucket.
                assert await p.may_publish("$KV.vc-job.team-a.j") == (identity == "kube-relay"), identity
                assert await p.may_publish("$JS.API.STREAM.MSG.GET.KV_vc-secret") == (
                    identity in ("admission", "job-controller", "gc", "kube-relay")
                ), identity
    finally:
        server.terminate()
        server.wait(10)

    bootstrap(account)  # again: nothing changes
    again = await secrets_now(kube)
    assert {n: s["metadata"]["resourceVersion"] for n, s in again.items()} == {
        n: s["metadata"]["resourceVersion"] for n, s in first.items()
    }

    await kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/secrets/{creds_secret('gc')}")
    bootstrap(account)  # rotates gc's key, and only that
    rotated = await secrets_now(kube)
    old_key, new_key = credentials(first, "gc").key.public_key, credentials(rotated, "gc").key.public_key
    assert old_key != new_key
    auth = decoded(rotated[AUTH_SECRET], "auth.conf").decode()
    assert new_key in auth and old_key not in auth
    assert credentials(rotated, "scheduler").key == credentials(first, "scheduler").key
    assert rotated[TLS_SECRET]["data"] == first[TLS_SECRET]["data"]
