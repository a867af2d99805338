"""User identity on a cluster: `vcctl --backend kube` writes to the real apiserver with the user's own
kubeconfig, so Kubernetes RBAC judges the user, not a Tephra service account (docs/install.md).

The user is a ServiceAccount's token from the TokenRequest API (kubernetes-asyncio ignores `as:`
impersonation in kubeconfigs, so a token is the only honest way to be someone else), with a Role
that lets it manage vcjobs in team-a and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.kube.support import KUBECONFIG
from tests.support.system import SEEDS
from vc_core.errors import NotFound
from vc_kube.client import KubeApiError, KubeClient
from vc_kube.store import KubeStore
from vc_proto.batch import Job

pytestmark = [pytest.mark.kube]
BIN = Path(sys.executable).parent
USER_NS, OTHER_NS = "team-a", "team-b"


async def user_kubeconfig(kube: KubeClient, directory: Path) -> Path:
    """A kubeconfig for `alice` (a ServiceAccount of team-a) allowed to manage vcjobs in team-a only."""
    for namespace in (USER_NS, OTHER_NS):
        try:
            await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
        except KubeApiError as exc:
            assert exc.status == 409
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a"
    for path, body in (
        (f"/api/v1/namespaces/{USER_NS}/serviceaccounts", {"metadata": {"name": "alice"}}),
        (
            f"{rbac}/roles",
            {
                "metadata": {"name": "vcjobs"},
                "rules": [
                    {
                        "apiGroups": ["batch.volcano.sh"],
                        "resources": ["jobs"],
                        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
                    }
                ],
            },
        ),
        (
            f"{rbac}/rolebindings",
            {
                "metadata": {"name": "alice-vcjobs"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "vcjobs"},
                "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": USER_NS}],
            },
        ),
    ):
        try:
            await kube.request("POST", path, body=body)
        except KubeApiError as exc:
            assert exc.status == 409
    token = await kube.request(
        "POST",
        f"/api/v1/namespaces/{USER_NS}/serviceaccounts/alice/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )
    admin = yaml.safe_load(KUBECONFIG.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": "alice", "user": {"token": token["status"]["token"]}}],
        "contexts": [{"name": "alice", "context": {"cluster": admin["clusters"][0]["name"], "user": "alice"}}],
        "current-context": "alice",
    }
    path = directory / "alice.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def vcctl(kubeconfig: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VC_") and k != "KUBECONFIG"}
    return subprocess.run(
        [str(BIN / "vcctl"), "--backend", "kube", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


@pytest.mark.timeout(120)
async def test_vcctl_writes_to_the_apiserver_as_the_user_and_rbac_judges_the_user(
    kube: KubeClient, tmp_path: Path
) -> None:
    alice = await user_kubeconfig(kube, tmp_path)
    job = str(SEEDS / "tensorflow-benchmark.yaml")

    ran = vcctl(alice, "job", "run", "-f", job, "-n", USER_NS, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    created = await KubeStore(kube).get(Job, USER_NS, "tensorflow-benchmark")
    assert created.metadata.namespace == USER_NS
    assert "tensorflow-benchmark" in vcctl(alice, "job", "list", "-n", USER_NS, cwd=tmp_path).stdout

    refused = vcctl(alice, "job", "run", "-f", job, "-n", OTHER_NS, cwd=tmp_path)
    assert refused.returncode == 1
    assert "403" in refused.stderr and "system:serviceaccount:team-a:alice" in refused.stderr, refused.stderr
    with pytest.raises(NotFound):
        await KubeStore(kube).get(Job, OTHER_NS, "tensorflow-benchmark")
    queue = vcctl(alice, "queue", "create", "-N", "alices-own", cwd=tmp_path)  # a cluster object: not hers
    assert queue.returncode == 1 and "system:serviceaccount:team-a:alice" in queue.stderr

    deleted = vcctl(alice, "job", "delete", "-N", "tensorflow-benchmark", "-n", USER_NS, cwd=tmp_path)
    assert deleted.returncode == 0, deleted.stderr
    with pytest.raises(NotFound):
        await KubeStore(kube).get(Job, USER_NS, "tensorflow-benchmark")
