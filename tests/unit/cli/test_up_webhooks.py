"""What `vcctl up --backend kube` registers is the install's webhooks, called on loopback; admission
is started with the flags that serve them."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from vc_admission.app import AdmissionOptions, add_arguments
from vc_admission.webhook_tls import cert_config
from vc_cli.main import build_parser
from vc_cli.up import plan_children
from vc_cli.up_webhooks import CERT_NAMESPACE, CERT_SECRET, MUTATING_NAME, VALIDATING_NAME, UpWebhooks, configurations
from vc_runtime.settings import options_of, parse

INSTALL = Path(__file__).resolve().parents[3] / "deploy" / "k8s" / "base" / "webhooks.yaml"
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n").decode()


def _installed() -> dict[str, list[dict[str, Any]]]:
    docs = [d for d in yaml.safe_load_all(INSTALL.read_text()) if d and d["kind"].endswith("WebhookConfiguration")]
    return {d["kind"]: d["webhooks"] for d in docs}


def test_up_registers_the_installs_webhooks_with_its_failure_policies_pointing_at_loopback() -> None:
    registered = {doc["kind"]: doc for _, doc in configurations(8443, CA)}
    installed = _installed()
    assert set(registered) == set(installed) == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for kind, hooks in installed.items():
        ours = registered[kind]["webhooks"]
        strip = [{k: v for k, v in h.items() if k != "clientConfig"} for h in ours]
        assert strip == [{k: v for k, v in h.items() if k != "clientConfig"} for h in hooks], kind
        for mine, theirs in zip(ours, hooks, strict=True):
            path = theirs["clientConfig"]["service"]["path"]
            assert mine["clientConfig"] == {"url": f"https://127.0.0.1:8443{path}", "caBundle": CA}
    names = {doc["kind"]: doc["metadata"]["name"] for _, doc in configurations(8443, CA)}
    assert names == {"MutatingWebhookConfiguration": MUTATING_NAME, "ValidatingWebhookConfiguration": VALIDATING_NAME}


def test_with_kube_admission_serves_the_webhook_on_loopback_with_the_self_managed_certificate() -> None:
    args = build_parser().parse_args(["up", "--backend", "kube"])
    children = plan_children(args, "nats://127.0.0.1:4222", None, UpWebhooks(None, 40123))
    (admission,) = [c for c in children if c.name == "admission"]
    argv = admission.argv[1:]
    settings = parse("admission", argv, add_arguments=add_arguments)
    options = options_of(settings, AdmissionOptions)
    assert (options.webhook_port, options.webhook_host) == (40123, "127.0.0.1")
    config = cert_config(options)  # the flags make a valid self-managed configuration
    assert (config.namespace, config.secret) == (CERT_NAMESPACE, CERT_SECRET)
    assert (config.mutating, config.validating) == ((MUTATING_NAME,), (VALIDATING_NAME,))
    embedded = plan_children(build_parser().parse_args(["up"]), "nats://127.0.0.1:4222")
    assert not any("--webhook-port" in c.argv for c in embedded)  # the embedded system has no apiserver to call it
