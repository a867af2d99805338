"""deploy/k8s: the manifests are coherent (static checks, run everywhere) and a real apiserver accepts
every one of them (server-side dry run, with `make kube-up`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vc_kube.client import KubeApiError, KubeClient

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
FILES = ["namespace.yaml", "nats.yaml", "rbac.yaml", "scheduler-configmap.yaml", "services.yaml", "webhooks.yaml"]


def docs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in FILES:
        out.extend(d for d in yaml.safe_load_all((K8S / name).read_text()) if d)
    return out


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in docs() if d["kind"] == kind]


def test_kustomization_lists_every_manifest_and_crd() -> None:
    listed = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    crds = sorted(f"crds/{p.name}" for p in (K8S / "crds").glob("*.yaml"))
    assert sorted(listed) == sorted([*crds, *FILES])


def test_every_deployment_runs_on_kube_with_its_own_bound_service_account() -> None:
    accounts = {d["metadata"]["name"] for d in of_kind("ServiceAccount")}
    bound = {s["name"] for b in of_kind("ClusterRoleBinding") for s in b["subjects"]}
    roles = {d["metadata"]["name"] for d in of_kind("ClusterRole")}
    for deployment in of_kind("Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        sa = spec["serviceAccountName"]
        assert sa in accounts and sa in bound and sa in roles, sa
        args = spec["containers"][0]["args"]
        assert args[args.index("--backend") + 1] == "kube"


def test_rbac_is_least_privilege_only_the_relay_lists_and_watches() -> None:
    for role in of_kind("ClusterRole"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]
            assert "update" not in rule["verbs"]  # writes are resourceVersion-guarded merge patches
            watches = {"list", "watch"} & set(rule["verbs"])
            assert not watches or role["metadata"]["name"] == "tephra-kube-relay", role["metadata"]["name"]
            if "secrets" in rule["resources"]:
                assert role["metadata"]["name"] in {"tephra-kube-relay", "tephra-job-controller", "tephra-gc"}


def test_scheduler_configmap_is_the_scheduler_conf() -> None:
    (cm,) = [d for d in of_kind("ConfigMap") if d["metadata"]["name"] == "tephra-scheduler-conf"]
    assert (
        cm["data"]["volcano-scheduler.conf"] == (ROOT / "deploy" / "scheduler" / "volcano-scheduler.conf").read_text()
    )


def test_webhook_paths_are_routes_the_admission_service_serves() -> None:
    from vc_admission.webhook import ROUTES

    for config in [*of_kind("ValidatingWebhookConfiguration"), *of_kind("MutatingWebhookConfiguration")]:
        for hook in config["webhooks"]:
            assert hook["clientConfig"]["service"]["path"] in ROUTES


# kind -> (path prefix, plural, namespaced), for the dry run below
PATHS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Service": ("/api/v1", "services", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "ValidatingWebhookConfiguration": (
        "/apis/admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        False,
    ),
    "MutatingWebhookConfiguration": ("/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False),
}


@pytest.mark.kube
async def test_the_apiserver_accepts_every_manifest_in_a_dry_run(kube: KubeClient) -> None:
    try:  # dry-run creates in a namespace need it to exist
        await kube.request("POST", "/api/v1/namespaces", body=of_kind("Namespace")[0])
    except KubeApiError as exc:
        assert exc.status == 409
    refused = []
    for doc in docs():
        prefix, plural, namespaced = PATHS[doc["kind"]]
        path = f"{prefix}/namespaces/{doc['metadata']['namespace']}/{plural}" if namespaced else f"{prefix}/{plural}"
        try:
            await kube.request("POST", path, query={"dryRun": "All"}, body=doc)
        except KubeApiError as exc:
            if exc.status != 409:  # 409: it exists already (the namespace)
                refused.append(f"{doc['kind']}/{doc['metadata']['name']}: {exc}")
    assert not refused
