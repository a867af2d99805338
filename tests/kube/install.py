"""Helpers for the install tests: kubectl 1.20 (scripts/kube/kubectl.sh), `kubectl apply -k`, and
a kubeconfig per Tephra ServiceAccount.

Why tokens and not `as:` (impersonation) in those kubeconfigs: kubectl honours `as:`, but
kubernetes-asyncio, which the services use, ignores it without a word, so every service would have
run as the test's admin and no missing permission could ever show. A TokenRequest
(`serviceaccounts/<sa>/token`) gives each service the ServiceAccount's own credentials: the
apiserver authenticates it as `system:serviceaccount:tephra-system:<sa>` and RBAC decides, as in a pod.
"""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kube.support import KUBECONFIG, ROOT
from vc_kube.client import KubeApiError, KubeClient

NAMESPACE = "tephra-system"
K8S = ROOT / "deploy" / "k8s"
# service (as tests/support/system.py names its processes) -> its ServiceAccount
ACCOUNTS = {
    "kube-relay": "tephra-kube-relay",
    "admission": "tephra-admission",
    "job-controller": "tephra-job-controller",
    "queue-controller": "tephra-queue-controller",
    "podgroup-controller": "tephra-podgroup-controller",
    "gc": "tephra-gc",
    "flow-controller": "tephra-flow-controller",
    "scheduler": "tephra-scheduler",
    "node-sim": "tephra-node-sim",
    # The one-shot Job that closes NATS (deploy/k8s/base/nats-bootstrap.yaml).
    "nats-bootstrap": "tephra-nats-bootstrap",
}
WEBHOOK_CONFIGS = {
    "mutatingwebhookconfigurations": "tephra-mutate",
    "validatingwebhookconfigurations": "tephra-validate",
}
ADMISSIONREGISTRATION = "/apis/admissionregistration.k8s.io/v1"


def username(account: str) -> str:
    return f"system:serviceaccount:{NAMESPACE}:{account}"


@cache
def _kubectl_or_reason() -> tuple[str | None, str]:
    try:
        done = subprocess.run(
            [str(ROOT / "scripts" / "kube" / "kubectl.sh")], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"scripts/kube/kubectl.sh did not run: {exc}"
    if done.returncode != 0:
        return None, f"no kubectl 1.20 (scripts/kube/kubectl.sh failed: {done.stderr.strip()[-300:]})"
    return done.stdout.strip(), ""


def kubectl_path() -> str:
    """kubectl 1.20 (Debian's kubernetes-client), or the test skips saying why."""
    path, reason = _kubectl_or_reason()
    if path is None:
        pytest.skip(reason)
    return path


def kubectl(*args: str, kubeconfig: Path = KUBECONFIG, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [kubectl_path(), "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=120
    )
    if check:
        assert done.returncode == 0, f"kubectl {' '.join(args)} exited {done.returncode}:\n{done.stderr}{done.stdout}"
    return done


async def service_account_kubeconfig(kube: KubeClient, account: str, directory: Path) -> Path:
    """A kubeconfig authenticating as `account` (a bound token from the TokenRequest API)."""
    answer = await kube.request(
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{account}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )
    admin = yaml.safe_load(KUBECONFIG.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": account, "user": {"token": answer["status"]["token"]}}],
        "contexts": [{"name": account, "context": {"cluster": admin["clusters"][0]["name"], "user": account}}],
        "current-context": account,
    }
    path = directory / f"{account}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


async def point_webhooks_at(kube: KubeClient, port: int) -> None:
    """The test's apiserver reaches no Service (no kube-proxy): each webhook of the installed
    configurations is sent to the local admission process by URL instead, same paths."""
    for plural, name in WEBHOOK_CONFIGS.items():
        doc = await kube.request("GET", f"{ADMISSIONREGISTRATION}/{plural}/{name}")
        hooks = []
        for hook in doc["webhooks"]:
            service = hook["clientConfig"]["service"]
            hooks.append({**hook, "clientConfig": {"url": f"https://127.0.0.1:{port}{service['path']}"}})
        await kube.request(
            "PATCH",
            f"{ADMISSIONREGISTRATION}/{plural}/{name}",
            body={"metadata": {"resourceVersion": doc["metadata"]["resourceVersion"]}, "webhooks": hooks},
            content_type="application/merge-patch+json",
        )


async def remove_webhooks(kube: KubeClient) -> None:
    """Tephra's webhooks fail closed: left behind, they would refuse every other test's vcjob."""
    for plural, name in WEBHOOK_CONFIGS.items():
        try:
            await kube.request("DELETE", f"{ADMISSIONREGISTRATION}/{plural}/{name}")
        except KubeApiError as exc:
            if exc.status != 404:
                raise


async def can(
    kube: KubeClient,
    account: str,
    verb: str,
    resource: str,
    *,
    group: str = "",
    subresource: str = "",
    namespace: str = "",
    name: str = "",
) -> bool:
    """What the apiserver's RBAC authorizer answers for this ServiceAccount (a SubjectAccessReview)."""
    attributes: dict[str, Any] = {"verb": verb, "group": group, "resource": resource}
    for key, value in (("subresource", subresource), ("namespace", namespace), ("name", name)):
        if value:
            attributes[key] = value
    review = await kube.request(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": username(account),
                "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated"],
                "resourceAttributes": attributes,
            },
        },
    )
    return bool(review["status"].get("allowed"))
