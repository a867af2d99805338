"""deploy/k8s, static: the kustomizations stay within what kubectl 1.20's kustomize (v2.0.3) reads,
and what they render (`kubectl kustomize`, no apiserver) is coherent: one namespace, every service
under its own bound ServiceAccount, production 3 NATS servers and R3, dev 1, the scheduler conf, the
webhooks and their certificate. test_install.py applies them to a real apiserver; test_rbac.py asks
it what each identity may do."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kube.install import K8S, NAMESPACE, kubectl_path

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZATIONS = [
    K8S,
    K8S / "base",
    K8S / "crds",
    K8S / "overlays" / "production",
    K8S / "overlays" / "dev",
    K8S / "node-sim",
]
# The fields kustomize v2.0.3 knows that these files may use (no `patches`, `replicas`, `components`, ...).
V2_FIELDS = {
    "apiVersion",
    "kind",
    "bases",
    "resources",
    "patchesStrategicMerge",
    "configMapGenerator",
    "generatorOptions",
}
SERVICES = [
    "kube-relay",
    "admission",
    "job-controller",
    "queue-controller",
    "podgroup-controller",
    "gc",
    "flow-controller",
    "scheduler",
]
# Services that read NATS only and need no Kubernetes API access at all.
READ_ONLY_SERVICES = ["dashboard"]


def kustomization(directory: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return doc


@cache
def rendered(target: str) -> tuple[dict[str, Any], ...]:
    import subprocess

    done = subprocess.run([kubectl_path(), "kustomize", str(K8S / target)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return tuple(d for d in yaml.safe_load_all(done.stdout) if d)


def of_kind(kind: str, target: str = ".") -> list[dict[str, Any]]:
    return [d for d in rendered(target) if d["kind"] == kind]


def named(kind: str, name: str, target: str = ".") -> dict[str, Any]:
    (doc,) = [d for d in of_kind(kind, target) if d["metadata"]["name"] == name]
    return doc


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda p: str(p.relative_to(K8S)) or ".")
def test_each_kustomization_uses_only_what_kustomize_v2_0_reads(directory: Path) -> None:
    doc = kustomization(directory)
    assert set(doc) <= V2_FIELDS, set(doc) - V2_FIELDS
    for resource in doc.get("resources", []):  # v2.0 reads files only here; folders go in `bases`
        assert (directory / resource).is_file(), resource
    for base in doc.get("bases", []):
        assert (directory / base / "kustomization.yaml").is_file(), base
    for patch in doc.get("patchesStrategicMerge", []):
        assert (directory / patch).is_file(), patch
    for generator in doc.get("configMapGenerator", []):
        assert generator["namespace"] == NAMESPACE  # no namespace transformer (it would stamp cluster objects)
        for file in generator.get("files", []):
            assert (directory / file).is_file(), file


def test_deploy_k8s_is_the_production_overlay() -> None:
    assert kustomization(K8S)["bases"] == ["overlays/production"]


def test_every_manifest_file_is_listed() -> None:
    for directory in KUSTOMIZATIONS:
        doc = kustomization(directory)
        listed = {*doc.get("resources", []), *doc.get("patchesStrategicMerge", [])}
        listed |= {f for g in doc.get("configMapGenerator", []) for f in g.get("files", [])}
        files = {
            str(p.relative_to(directory))
            for p in directory.rglob("*")
            if p.is_file()
            and p.name != "kustomization.yaml"
            and not any(directory in k.parents and k in p.parents for k in KUSTOMIZATIONS)  # not a nested one's
        }
        assert files == listed, directory


def test_the_crd_kustomization_lists_exactly_the_generated_crds() -> None:
    from vc_proto.schemagen import crds

    assert sorted(kustomization(K8S / "crds")["resources"]) == sorted(crds())


def test_one_namespace_and_every_namespaced_object_in_it() -> None:
    assert [d["metadata"]["name"] for d in of_kind("Namespace")] == [NAMESPACE]
    cluster = {
        "Namespace",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
    for doc in rendered("."):
        assert doc["metadata"].get("namespace") == (None if doc["kind"] in cluster else NAMESPACE), doc["metadata"]


def _role_names(account: str, target: str = ".") -> set[str]:
    names = set()
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in of_kind(kind, target):
            if any(
                s == {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE} for s in binding["subjects"]
            ):
                names.add(binding["roleRef"]["name"])
    return names


@pytest.mark.parametrize("target", [".", "overlays/dev"])
def test_every_service_runs_on_kube_under_its_own_bound_service_account(target: str) -> None:
    deployments = {d["metadata"]["name"]: d for d in of_kind("Deployment", target)}
    assert sorted(deployments) == sorted(f"tephra-{s}" for s in SERVICES + READ_ONLY_SERVICES)
    config = named("ConfigMap", "tephra-config", target)["data"]
    assert config["VC_BACKEND"] == "kube" and config["VC_NATS__URL"] == "tls://nats.tephra-system.svc:4222"
    accounts = {d["metadata"]["name"] for d in of_kind("ServiceAccount", target)}
    seen = set()
    for service in SERVICES:
        pod = deployments[f"tephra-{service}"]["spec"]["template"]["spec"]
        account = pod["serviceAccountName"]
        assert account == f"tephra-{service}" and account in accounts and account not in seen
        seen.add(account)
        assert _role_names(account, target), account  # bound to at least its own role
        (container,) = pod["containers"]
        assert container["command"] == [f"vc-{service}"]
        assert {"configMapRef": {"name": "tephra-config"}} in container["envFrom"]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_production_runs_three_nats_servers_and_r3_dev_one() -> None:
    production, dev = named("StatefulSet", "nats"), named("StatefulSet", "nats", "overlays/dev")
    assert production["spec"]["replicas"] == 3 and dev["spec"]["replicas"] == 1
    assert named("ConfigMap", "tephra-config")["data"]["VC_NATS__REPLICAS"] == "3"
    assert named("ConfigMap", "tephra-config", "overlays/dev")["data"]["VC_NATS__REPLICAS"] == "1"
    cluster_conf = named("ConfigMap", "nats-config")["data"]["nats-server.conf"]
    assert "cluster {" in cluster_conf and all(f"nats-{i}.nats-cluster" in cluster_conf for i in range(3))
    assert "cluster {" not in named("ConfigMap", "nats-config", "overlays/dev")["data"]["nats-server.conf"]
    for conf in (cluster_conf, named("ConfigMap", "nats-config", "overlays/dev")["data"]["nats-server.conf"]):
        assert "sync_interval: always" in conf
    volumes = {v["name"]: v for v in production["spec"]["template"]["spec"]["volumes"]}
    assert volumes["tls"]["secret"] == {"secretName": "nats-tls"}  # TLS and identities: the bus is never open
    assert volumes["auth"]["secret"] == {"secretName": "nats-auth"}


def test_the_scheduler_conf_is_deploy_scheduler_conf_mounted_as_a_file() -> None:
    conf = named("ConfigMap", "tephra-scheduler-conf")["data"]["volcano-scheduler.conf"]
    assert conf == (ROOT / "deploy" / "scheduler" / "volcano-scheduler.conf").read_text()
    pod = named("Deployment", "tephra-scheduler")["spec"]["template"]["spec"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "scheduler-conf"]
    assert "subPath" not in mount  # a subPath mount would never see the ConfigMap change
    args = pod["containers"][0]["args"]
    assert args[args.index("--scheduler-conf") + 1] == f"{mount['mountPath']}/volcano-scheduler.conf"


def test_rbac_has_no_wildcards_no_update_and_only_the_relay_lists_and_watches() -> None:
    for role in [*of_kind("ClusterRole"), *of_kind("Role"), *of_kind("ClusterRole", "node-sim")]:
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]
            assert "update" not in rule["verbs"]  # writes are resourceVersion-guarded merge patches
            if {"list", "watch"} & set(rule["verbs"]):
                assert role["metadata"]["name"] == "tephra-kube-relay", role["metadata"]["name"]


def test_the_relay_may_read_exactly_the_kinds_it_mirrors() -> None:
    """A kind added to the relay without its RBAC would fail only on a cluster (a 403 on its list,
    retried forever); one granted and not mirrored is a read nobody needs."""
    from vc_kube.relay import MIRRORED_KINDS
    from vc_proto.kinds import KINDS

    role = named("ClusterRole", "tephra-kube-relay")
    granted = {(group, plural) for rule in role["rules"] for group in rule["apiGroups"] for plural in rule["resources"]}
    assert all(rule["verbs"] == ["get", "list", "watch"] for rule in role["rules"])
    assert granted == {(KINDS[kind].group, KINDS[kind].plural) for kind in MIRRORED_KINDS}


def test_the_webhooks_and_the_admissions_certificate_fit_together() -> None:
    from vc_admission.webhook import ROUTES

    container = named("Deployment", "tephra-admission")["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]

    def flag(name: str) -> str:
        return str(args[args.index(name) + 1])

    service = named("Service", "tephra-admission")
    assert service["spec"]["ports"][0]["targetPort"] == int(flag("--webhook-port"))
    assert flag("--service-dns") == f"{service['metadata']['name']}.{NAMESPACE}.svc"
    for kind, hooks_flag in (
        ("MutatingWebhookConfiguration", "--mutating-webhook"),
        ("ValidatingWebhookConfiguration", "--validating-webhook"),
    ):
        (config,) = of_kind(kind)
        assert config["metadata"]["name"] == flag(hooks_flag)
        assert "cert-manager.io/inject-ca-from" not in (config["metadata"].get("annotations") or {})
        for hook in config["webhooks"]:
            client = hook["clientConfig"]
            assert "caBundle" not in client  # admission fills it; a re-apply must not reset it
            assert client["service"]["name"] == "tephra-admission" and client["service"]["path"] in ROUTES
    # Admission's own Role names exactly its Secret, and its ClusterRole exactly the two configurations.
    role = named("Role", "tephra-admission-tls")
    assert {n for r in role["rules"] for n in r.get("resourceNames", [])} == {flag("--cert-secret")}
    writes = [
        r
        for r in named("ClusterRole", "tephra-admission")["rules"]
        if r["apiGroups"] == ["admissionregistration.k8s.io"]
    ]
    assert sorted(n for r in writes for n in r["resourceNames"]) == sorted(
        [flag("--mutating-webhook"), flag("--validating-webhook")]
    )
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/tmp" in mounts  # the key's temporary file, with a read-only root filesystem


def test_node_sim_is_an_add_on_not_part_of_the_install() -> None:
    assert not [d for d in rendered(".") if "node-sim" in d["metadata"]["name"]]
    assert {d["kind"] for d in rendered("node-sim")} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}


@pytest.mark.parametrize("target", [".", "overlays/dev"])
def test_the_dashboard_reads_nats_with_no_kubernetes_access(target: str) -> None:
    account = named("ServiceAccount", "tephra-dashboard", target)
    assert account["automountServiceAccountToken"] is False
    assert _role_names("tephra-dashboard", target) == set()  # bound to nothing: it only reads NATS
    pod = named("Deployment", "tephra-dashboard", target)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "tephra-dashboard" and pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    assert container["command"] == ["vc-dashboard"]
    assert {"configMapRef": {"name": "tephra-config"}} in container["envFrom"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["VC_BACKEND"] == "nats"  # overrides the config's kube backend, which would load kube credentials
    assert env["VC_DASHBOARD__HOST"] == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["http"] == int(env["VC_DASHBOARD__PORT"]) and ports["probes"] == 8080
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    service = named("Service", "tephra-dashboard", target)
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "dashboard"}
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http"}]


def test_no_pod_reaches_the_dashboard_which_shows_every_namespace() -> None:
    """It has no login, and tenants read only their own namespaces (docs/tenancy.md): operators reach it
    with `kubectl port-forward`, which no NetworkPolicy stops."""
    policy = named("NetworkPolicy", "tephra-dashboard-no-ingress")
    pod_labels = named("Deployment", "tephra-dashboard")["spec"]["template"]["metadata"]["labels"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"] and not policy["spec"].get("ingress")
