"""deploy/k8s, static: NATS is closed by default. The server requires TLS and includes the identities'
authorization; it and every service mount the bootstrap's Secrets without `optional` (nothing starts
on an open bus); each Deployment mounts only its own identity; the bootstrap's Role names exactly the
Secrets it keeps."""

from __future__ import annotations

import pytest

from tests.kube.test_manifests import named, of_kind
from vc_security.cluster import creds_secret, secret_names
from vc_security.identities import SERVICE_GRANTS


@pytest.mark.parametrize("target", [".", "overlays/dev"])
def test_nats_requires_tls_and_the_identities_and_waits_for_them(target: str) -> None:
    conf = named("ConfigMap", "nats-config", target)["data"]["nats-server.conf"]
    assert 'cert_file: "/etc/nats/tls/tls.crt"' in conf and 'include "../auth/auth.conf"' in conf
    pod = named("StatefulSet", "nats", target)["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["tls"]["secret"] == {"secretName": "nats-tls"} and volumes["auth"]["secret"] == {
        "secretName": "nats-auth"
    }
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert (
        mounts["tls"] == "/etc/nats/tls"
        and mounts["auth"] == "/etc/nats/auth"
        and mounts["config"] == "/etc/nats/config"
    )
    config = named("ConfigMap", "tephra-config", target)["data"]
    assert config["VC_NATS__URL"].startswith("tls://") and config["VC_NATS__CREDS"] == "/etc/tephra/nats/creds.json"


@pytest.mark.parametrize("target", [".", "overlays/dev"])
def test_each_deployment_mounts_its_own_identity_only(target: str) -> None:
    for deployment in of_kind("Deployment", target):
        identity = deployment["metadata"]["name"].removeprefix("tephra-")
        assert identity in SERVICE_GRANTS, identity
        pod = deployment["spec"]["template"]["spec"]
        secrets = [v["secret"] for v in pod["volumes"] if "secret" in v]
        assert secrets == [{"secretName": creds_secret(identity)}], identity
        (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "nats-creds"]
        assert mount == {"name": "nats-creds", "mountPath": "/etc/tephra/nats", "readOnly": True}


def test_the_bootstrap_job_and_its_role_name_exactly_the_nats_secrets() -> None:
    role = named("Role", "tephra-nats-bootstrap")
    named_rules = [r for r in role["rules"] if r.get("resourceNames")]
    assert [sorted(r["verbs"]) for r in named_rules] == [["get", "patch"]]
    assert sorted(named_rules[0]["resourceNames"]) == sorted(secret_names())
    assert [r["verbs"] for r in role["rules"] if not r.get("resourceNames")] == [["create"]]
    job = named("Job", "tephra-nats-bootstrap")["spec"]["template"]["spec"]
    assert job["serviceAccountName"] == "tephra-nats-bootstrap" and job["containers"][0]["command"] == [
        "vc-nats-bootstrap"
    ]
