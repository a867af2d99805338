"""Helpers for tests against the real kube-apiserver that `make kube-up` starts.

Every kube test is skipped, with the reason, unless .kube/config exists and the apiserver answers
/readyz. So `make test` stays green and fast on a machine without the build.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import os
import signal
import ssl
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator
from functools import cache
from pathlib import Path

import yaml

from vc_kube.client import KubeApiError, KubeClient
from vc_kube.crds import ensure_crds
from vc_proto.kinds import KINDS

ROOT = Path(__file__).resolve().parents[2]
KUBECONFIG = Path(os.environ.get("TEPHRA_KUBECONFIG", ROOT / ".kube" / "config"))
RUN = KUBECONFIG.parent / "run"
SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})


@cache
def unavailable_reason() -> str | None:
    """None when a kube-apiserver is up; else why the kube tests skip."""
    if not KUBECONFIG.exists():
        return f"no kube-apiserver: {KUBECONFIG} is missing (run `make kube-up`)"
    try:
        cfg = yaml.safe_load(KUBECONFIG.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        token = cfg["users"][0]["user"]["token"]
        ctx = ssl.create_default_context(cafile=cluster.get("certificate-authority"))
        if "certificate-authority-data" in cluster:
            ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        req = urllib.request.Request(cluster["server"] + "/readyz", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=3, context=ctx) as resp:
            if resp.status == 200:
                return None
            return f"kube-apiserver not ready ({resp.status}); run `make kube-up`"
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError) as exc:
        return f"kube-apiserver at {KUBECONFIG} does not answer ({exc}); run `make kube-up`"


_crds_done = False
LOCK_WAIT_S = 30.0
_gave_up = False


@contextlib.asynccontextmanager
async def exclusive_kube() -> AsyncIterator[KubeClient]:
    """A client on a wiped apiserver, held by this test alone.

    The apiserver is one per machine while several test runs may share it (other checkouts, other
    engineers' `make test`): tests wipe it and one restarts it, so they take a file lock across
    processes. A test that cannot get it in time is skipped, saying why, rather than failing.
    """
    import pytest

    RUN.mkdir(parents=True, exist_ok=True)
    with open(RUN / "tests.lock", "w") as lock:  # noqa: ASYNC230 (a lock file: opening it never blocks)
        global _gave_up
        # After one long wait in this run, only try once: a busy apiserver costs a run 30 s, not 30 s a test.
        deadline = time.monotonic() + (0 if _gave_up else LOCK_WAIT_S)
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    _gave_up = True
                    pytest.skip(f"the kube-apiserver is busy with another test run (waited {LOCK_WAIT_S:.0f}s)")
                await asyncio.sleep(0.2)
        try:
            kube = await connect()
            try:
                await wipe(kube)
                yield kube
            finally:
                await kube.close()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


async def connect() -> KubeClient:
    global _crds_done
    kube = await KubeClient.connect(str(KUBECONFIG))
    if not _crds_done:
        await ensure_crds(kube)
        _crds_done = True
    return kube


def _protected(kind: str, namespace: str | None, name: str) -> bool:
    if namespace in SYSTEM_NAMESPACES:
        return True
    if kind == "Service" and namespace == "default" and name == "kubernetes":
        return True
    return kind == "PriorityClass" and name.startswith("system-")


async def wipe(kube: KubeClient) -> None:
    """Remove every object of Tephra's kinds a test may have left (namespaces stay: without a
    controller-manager nothing would finalize their deletion)."""
    from vc_kube.client import resource_path
    from vc_kube.watching import list_raw

    # Webhook configurations a killed test left behind first: Tephra's fail closed, and one pointing
    # at a process that is gone would refuse every vcjob, queue and podgroup (and queue deletes here).
    for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        path = f"/apis/admissionregistration.k8s.io/v1/{plural}"
        for config in (await kube.request("GET", path))["items"]:
            if config["metadata"]["name"].startswith("tephra-"):
                await kube.request("DELETE", f"{path}/{config['metadata']['name']}")

    for kind in KINDS.values():
        row = await kube.served(kind)  # PodDisruptionBudgets: policy/v1beta1 on the 1.20 apiserver
        items, _ = await list_raw(kube, row, None)
        for raw in items:
            meta = raw["metadata"]
            if _protected(row.kind, meta.get("namespace"), meta["name"]):
                continue
            body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
            if meta.get("finalizers"):
                patch = {"metadata": {"finalizers": None}}
                try:
                    await kube.request(
                        "PATCH",
                        resource_path(row, meta.get("namespace"), meta["name"]),
                        body=patch,
                        content_type="application/merge-patch+json",
                    )
                except KubeApiError:
                    pass
            try:
                await kube.request("DELETE", resource_path(row, meta.get("namespace"), meta["name"]), body=body)
            except KubeApiError as exc:
                if exc.status != 404:
                    raise


def stop_apiserver() -> None:
    """SIGKILL the kube-apiserver (a crash; etcd keeps running). SIGTERM would drain watches for a minute."""
    pid = int((RUN / "apiserver.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def start_apiserver() -> None:
    """Start it again through the kube-up script (idempotent: only what is down is started)."""
    subprocess.run([str(ROOT / "scripts" / "kube" / "up.sh")], check=True, capture_output=True, timeout=180)
