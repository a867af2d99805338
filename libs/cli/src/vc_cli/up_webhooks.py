"""`vcctl up --backend kube`: admission's webhooks registered with the apiserver for as long as `up` runs.

Without them nothing checks or defaults what other clients write to the apiserver (kubectl, Volcano's
own vcctl): a vcjob with an empty task name would be stored as it came. So `up` does what the install
does (deploy/k8s/base/webhooks.yaml), on loopback:

- admission serves AdmissionReview over HTTPS on 127.0.0.1 with the install's certificate flow: it
  makes its own CA and serving certificate, keeps them in a Secret (`CERT_SECRET` in
  `CERT_NAMESPACE`, so a restarted admission serves the same) and keeps the CA in the caBundle of
  the two configurations below, renewing before expiry;
- once admission is ready, `up` registers a MutatingWebhookConfiguration and a
  ValidatingWebhookConfiguration with the install's webhooks (same kinds, operations and failure
  policies), each calling `https://127.0.0.1:<port><path>` with the Secret's CA as caBundle, and
  waits until the apiserver calls them (it picks a new configuration up within a second or so) before
  `up` says `ready`: a dry-run create of a vcjob that only both webhooks together refuse with
  `default0` in the message (`PROBE`);
- it removes both when it stops, and on start removes what an earlier run left (one killed with
  SIGKILL): a webhook that fails closed and points at a port nobody serves would refuse every vcjob,
  queue and podgroup, `up`'s own default queues included.

The two names are `up`'s own, not the install's: stopping `up` never removes an installed Tephra's.
"""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from vc_cli.errors import CliError

if TYPE_CHECKING:
    from vc_kube.client import KubeClient

ADMISSIONREGISTRATION: Final = "/apis/admissionregistration.k8s.io/v1"
MUTATING: Final = "mutatingwebhookconfigurations"
VALIDATING: Final = "validatingwebhookconfigurations"
MUTATING_NAME: Final = "tephra-up-mutate"
VALIDATING_NAME: Final = "tephra-up-validate"
CERT_SECRET: Final = "tephra-up-admission-tls"
CERT_NAMESPACE: Final = "default"  # exists on every cluster; the install's tephra-system need not
HOST: Final = "127.0.0.1"
REQUEST_TIMEOUT_S: Final = 10.0
ACTIVE_TIMEOUT_S: Final = 30.0
LABELS: Final = {"app.kubernetes.io/part-of": "tephra", "app.kubernetes.io/managed-by": "vcctl-up"}
# Pods of these namespaces never reach admission (as in the install): the cluster's own must not wait on Tephra.
SKIPPED_NAMESPACES: Final = ("kube-system", "tephra-system")
Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Hook:
    """One webhook of the install: which path of admission's, for which kind and operations, and what
    the apiserver does when admission cannot answer (`Fail` for Tephra's kinds, `Ignore` for pods)."""

    name: str
    path: str
    group: str
    version: str
    resource: str
    operations: tuple[str, ...]
    failure_policy: str = "Fail"

    @property
    def mutating(self) -> bool:
        return self.path.endswith("/mutate")


_BATCH, _SCHEDULING, _FLOW, _TOPOLOGY = (
    "batch.volcano.sh",
    "scheduling.volcano.sh",
    "flow.volcano.sh",
    "topology.volcano.sh",
)
_CREATE, _CU, _CUD = ("CREATE",), ("CREATE", "UPDATE"), ("CREATE", "UPDATE", "DELETE")
# The install's webhooks, in its order (tests/unit/cli/test_up_webhooks.py holds the two equal).
HOOKS: Final = (
    Hook("mutate-jobs.tephra.dev", "/jobs/mutate", _BATCH, "v1alpha1", "jobs", _CREATE),
    Hook("mutate-queues.tephra.dev", "/queues/mutate", _SCHEDULING, "v1beta1", "queues", _CREATE),
    Hook("mutate-podgroups.tephra.dev", "/podgroups/mutate", _SCHEDULING, "v1beta1", "podgroups", _CREATE),
    Hook("mutate-cronjobs.tephra.dev", "/cronjobs/mutate", _BATCH, "v1alpha1", "cronjobs", _CU),
    Hook("mutate-pods.tephra.dev", "/pods/mutate", "", "v1", "pods", _CREATE, "Ignore"),
    Hook("validate-jobs.tephra.dev", "/jobs/validate", _BATCH, "v1alpha1", "jobs", _CU),
    Hook("validate-queues.tephra.dev", "/queues/validate", _SCHEDULING, "v1beta1", "queues", _CUD),
    Hook("validate-podgroups.tephra.dev", "/podgroups/validate", _SCHEDULING, "v1beta1", "podgroups", _CREATE),
    Hook("validate-jobflows.tephra.dev", "/jobflows/validate", _FLOW, "v1alpha1", "jobflows", _CU),
    Hook("validate-jobtemplates.tephra.dev", "/jobtemplates/validate", _FLOW, "v1alpha1", "jobtemplates", _CU),
    Hook("validate-cronjobs.tephra.dev", "/cronjobs/validate", _BATCH, "v1alpha1", "cronjobs", _CU),
    Hook("validate-hypernodes.tephra.dev", "/hypernodes/validate", _TOPOLOGY, "v1alpha1", "hypernodes", _CU),
    Hook("validate-pods.tephra.dev", "/pods/validate", "", "v1", "pods", _CREATE, "Ignore"),
)


# Defaulted by the mutating webhook (its task is named `default0`), then refused by the validating one
# (minAvailable above replicas): a refusal naming `default0` says the apiserver calls both.
PROBE: Final[Json] = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "tephra-up-webhook-probe", "namespace": CERT_NAMESPACE},
    "spec": {
        "queue": "default",
        "tasks": [
            {
                "replicas": 1,
                "minAvailable": 2,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "p", "image": "none"}]}},
            }
        ],
    },
}


def admission_args(port: int) -> list[str]:
    """vc-admission's flags: serve the webhook on loopback with the self-managed certificate."""
    return [
        *("--webhook-port", str(port), "--webhook-host", HOST, "--service-dns", "localhost"),
        *("--cert-secret", CERT_SECRET, "--cert-namespace", CERT_NAMESPACE),
        *("--mutating-webhook", MUTATING_NAME, "--validating-webhook", VALIDATING_NAME),
    ]


def webhook(hook: Hook, *, port: int, ca_bundle: str) -> Json:
    """`hook` as the install registers it, called at `https://127.0.0.1:<port><path>` with `ca_bundle`."""
    doc: Json = {
        "name": hook.name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "timeoutSeconds": 10,
        "failurePolicy": hook.failure_policy,
        "clientConfig": {"url": f"https://{HOST}:{port}{hook.path}", "caBundle": ca_bundle},
        "rules": [
            {
                "apiGroups": [hook.group],
                "apiVersions": [hook.version],
                "resources": [hook.resource],
                "operations": list(hook.operations),
            }
        ],
    }
    if hook.resource == "pods":
        skipped = {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(SKIPPED_NAMESPACES)}
        doc["namespaceSelector"] = {"matchExpressions": [skipped]}
    return doc


def configurations(port: int, ca_bundle: str) -> list[tuple[str, Json]]:
    """(plural, object) of the two configurations `up` registers; `ca_bundle` is base64 PEM."""
    found: list[tuple[str, Json]] = []
    for plural, kind, name, mutating in (
        (MUTATING, "MutatingWebhookConfiguration", MUTATING_NAME, True),
        (VALIDATING, "ValidatingWebhookConfiguration", VALIDATING_NAME, False),
    ):
        hooks = [webhook(h, port=port, ca_bundle=ca_bundle) for h in HOOKS if h.mutating == mutating]
        doc = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name, "labels": dict(LABELS)},
            "webhooks": hooks,
        }
        found.append((plural, doc))
    return found


class UpWebhooks:
    """The apiserver side: remove `up`'s configurations, register them pointing at admission's port."""

    def __init__(self, kubeconfig: str | None, port: int) -> None:
        self.kubeconfig = kubeconfig
        self.port = port

    def admission_args(self) -> list[str]:
        return admission_args(self.port)

    async def remove(self) -> list[str]:
        """Delete both configurations where they exist; returns the names deleted."""
        from vc_kube.client import KubeApiError, KubeClient

        removed: list[str] = []
        try:
            async with await KubeClient.connect(self.kubeconfig, agent="vcctl-up") as kube:
                for plural, name in ((MUTATING, MUTATING_NAME), (VALIDATING, VALIDATING_NAME)):
                    try:
                        await kube.request(
                            "DELETE", f"{ADMISSIONREGISTRATION}/{plural}/{name}", request_timeout_s=REQUEST_TIMEOUT_S
                        )
                        removed.append(name)
                    except KubeApiError as exc:
                        if exc.status != 404:
                            raise
        except Exception as exc:  # any failure to reach or use the apiserver: say which and what is left
            raise CliError(
                f"cannot remove the webhook configurations {MUTATING_NAME}, {VALIDATING_NAME}: {exc}"
            ) from exc
        return removed

    async def register(self) -> None:
        """Create both configurations (replacing any), trusting the CA admission keeps in its Secret."""
        from vc_kube.client import KubeClient

        try:
            async with await KubeClient.connect(self.kubeconfig, agent="vcctl-up") as kube:
                secret = await kube.request(
                    "GET",
                    f"/api/v1/namespaces/{CERT_NAMESPACE}/secrets/{CERT_SECRET}",
                    request_timeout_s=REQUEST_TIMEOUT_S,
                )
                bundle = (secret.get("data") or {}).get("ca.crt") or ""
                if not _is_pem(bundle):
                    raise CliError(f"secret {CERT_NAMESPACE}/{CERT_SECRET} holds no CA (data.ca.crt) to trust")
                for plural, doc in configurations(self.port, bundle):
                    await _create_or_replace(kube, plural, doc)
                await _wait_active(kube)
        except CliError:
            raise
        except Exception as exc:  # any failure to reach or use the apiserver ends `up` with it
            raise CliError(f"cannot register admission's webhooks with the API server: {exc}") from exc


def _is_pem(data: str) -> bool:
    try:
        return b"-----BEGIN CERTIFICATE-----" in base64.b64decode(data, validate=True)
    except ValueError:
        return False


async def _create_or_replace(kube: KubeClient, plural: str, doc: Json) -> None:
    """POST; when one exists already (created since `remove`), PUT over it at its resourceVersion."""
    from vc_kube.client import KubeApiError

    path = f"{ADMISSIONREGISTRATION}/{plural}"
    try:
        await kube.request("POST", path, body=doc, request_timeout_s=REQUEST_TIMEOUT_S)
        return
    except KubeApiError as exc:
        if exc.status != 409:
            raise
    name = doc["metadata"]["name"]
    current = await kube.request("GET", f"{path}/{name}", request_timeout_s=REQUEST_TIMEOUT_S)
    replaced = {**doc, "metadata": {**doc["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
    await kube.request("PUT", f"{path}/{name}", body=replaced, request_timeout_s=REQUEST_TIMEOUT_S)


async def _wait_active(kube: KubeClient) -> None:
    """Until a dry-run create of PROBE is refused with `default0` in the message (see PROBE)."""
    from vc_kube.client import KubeApiError

    path = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{CERT_NAMESPACE}/jobs"
    deadline = time.monotonic() + ACTIVE_TIMEOUT_S
    answer = ""
    while time.monotonic() < deadline:
        try:
            await kube.request("POST", path, query={"dryRun": "All"}, body=PROBE, request_timeout_s=REQUEST_TIMEOUT_S)
            answer = "admitted unchecked (the webhooks are not called yet)"
        except KubeApiError as exc:
            answer = str(exc)
            if "denied the request" in answer and "default0" in answer:
                return
        await asyncio.sleep(0.25)
    raise CliError(f"the API server does not call admission's webhooks after {ACTIVE_TIMEOUT_S:.0f} s: {answer}")
