"""The webhook's self-managed serving certificate: the kube I/O around the pure policy in `certs`.

One pass (`sync`):
1. read the Secret (namespace/name from the flags); create it with a fresh CA and leaf when absent.
   Two replicas starting together both try: the apiserver accepts one create, the loser re-reads and
   serves the winner's certificate;
2. read the named webhook configurations' caBundles and let `certs.plan` decide whether to renew; a
   renewal is a merge patch with the Secret's resourceVersion as precondition, so of two replicas
   renewing at once one wins and the other re-reads (never two certificates in flight);
3. put the Secret's trust bundle into every webhook of those configurations (same precondition);
4. serve the Secret's leaf from the next handshake on (`ServingTLS.load`): no restart.

`run` repeats the pass every `check_interval_s`, so a replica picks up what another one renewed and
renewal happens well before expiry (a third of the validity ahead by default).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import structlog
from cryptography import x509

from vc_admission import certs
from vc_admission.http import ServingTLS
from vc_core.errors import PermanentError, TemporaryError, VcError
from vc_kube.client import MERGE_PATCH, KubeApiError, KubeClient, map_error

log = structlog.get_logger(__name__)

ADMISSIONREGISTRATION: Final = "/apis/admissionregistration.k8s.io/v1"
MUTATING: Final = "mutatingwebhookconfigurations"
VALIDATING: Final = "validatingwebhookconfigurations"
MAX_RACES: Final = 8  # lost compare-and-sets in one pass before it is reported as temporary
Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CertConfig:
    namespace: str
    secret: str
    dns_names: tuple[str, ...]
    mutating: tuple[str, ...] = ()
    validating: tuple[str, ...] = ()
    validity: certs.Validity = field(default_factory=certs.Validity)
    check_interval_s: float = 3600.0


class _Raced(Exception):
    """Another writer changed the object between our read and our write: read again."""


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class CertManager:
    def __init__(
        self, kube: KubeClient, config: CertConfig, tls: ServingTLS, clock: Callable[[], datetime.datetime] = _now
    ) -> None:
        self.kube = kube
        self.config = config
        self.tls = tls
        self.clock = clock

    @property
    def _secret_path(self) -> str:
        return f"/api/v1/namespaces/{self.config.namespace}/secrets"

    async def sync(self) -> certs.ServingCert:
        """One pass; returns the certificate now served. Retries lost races; raises TemporaryError or PermanentError."""
        for _ in range(MAX_RACES):
            try:
                return await self._sync_once()
            except _Raced:
                continue
        raise TemporaryError(f"secret {self.config.namespace}/{self.config.secret}: lost {MAX_RACES} races in a row")

    async def _sync_once(self) -> certs.ServingCert:
        secret = await self._get(f"{self._secret_path}/{self.config.secret}", "Secret")
        current: certs.ServingCert | None = None
        if secret is not None:
            try:
                current = certs.from_secret_data(secret.get("data"))
            except certs.UnreadableCert as exc:
                log.warning("webhook_cert.unreadable", secret=self.config.secret, error=str(exc))
        configs = await self._webhook_configs()
        bundles = [
            base64.b64decode(h.get("clientConfig", {}).get("caBundle") or "")
            for _, doc in configs
            for h in doc.get("webhooks") or []
        ]
        decision = certs.plan(
            current,
            dns_names=self.config.dns_names,
            now=self.clock(),
            validity=self.config.validity,
            trusted_bundles=bundles,
        )
        if decision.cert is not None:
            await self._store(secret, decision.cert)
            log.info(
                "webhook_cert.renewed", secret=self.config.secret, reason=decision.reason, **_describe(decision.cert)
            )
            current = decision.cert
        assert current is not None
        for plural, doc in configs:
            await self._trust(plural, doc, current.ca_pem)
        if self.tls.load(current.cert_pem, current.key_pem):
            log.info("webhook_cert.serving", **_describe(current))
        return current

    async def run(self, shutdown: asyncio.Event) -> None:
        """Re-check every interval until shutdown; a failed pass is retried sooner, and logged."""
        delay = self.config.check_interval_s
        while True:
            try:
                await asyncio.wait_for(shutdown.wait(), timeout=delay)
                return
            except TimeoutError:
                pass
            try:
                await self.sync()
                delay = self.config.check_interval_s
            except VcError as exc:
                # The served certificate stays valid for a third of its life: keep serving, retry.
                log.error("webhook_cert.check_failed", error=str(exc))
                delay = min(self.config.check_interval_s, 30.0)

    # --- kube I/O ------------------------------------------------------------------------------

    async def _get(self, path: str, kind: str) -> Json | None:
        try:
            return await self.kube.request("GET", path)
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise map_error(exc, kind, path.rsplit("/", 1)[-1]) from exc

    async def _store(self, secret: Json | None, cert: certs.ServingCert) -> None:
        name = self.config.secret
        try:
            if secret is None:
                body = {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "kubernetes.io/tls",
                    "metadata": {
                        "name": name,
                        "namespace": self.config.namespace,
                        "labels": {
                            "app.kubernetes.io/part-of": "tephra",
                            "app.kubernetes.io/managed-by": "tephra-admission",
                        },
                    },
                    "data": cert.secret_data(),
                }
                await self.kube.request("POST", self._secret_path, body=body)
            else:
                patch = {
                    "metadata": {"resourceVersion": secret["metadata"]["resourceVersion"]},
                    "data": cert.secret_data(),
                }
                await self.kube.request("PATCH", f"{self._secret_path}/{name}", body=patch, content_type=MERGE_PATCH)
        except KubeApiError as exc:
            # 409: AlreadyExists (a replica created it first) or Conflict (it renewed first);
            # 404 on a patch: deleted since we read it (created again on the next read).
            if exc.status == 409 or (exc.status == 404 and secret is not None):
                raise _Raced from exc
            if exc.status == 404:
                raise PermanentError(f"namespace {self.config.namespace!r} (--cert-namespace) does not exist") from exc
            raise map_error(exc, "Secret", f"{self.config.namespace}/{name}") from exc

    async def _webhook_configs(self) -> list[tuple[str, Json]]:
        found: list[tuple[str, Json]] = []
        for plural, names in ((MUTATING, self.config.mutating), (VALIDATING, self.config.validating)):
            for name in names:
                doc = await self._get(f"{ADMISSIONREGISTRATION}/{plural}/{name}", plural)
                if doc is None:
                    # Not installed (yet): nothing to keep trusting us; the next pass looks again.
                    log.warning("webhook_cert.config_missing", kind=plural, name=name)
                    continue
                found.append((plural, doc))
        return found

    async def _trust(self, plural: str, doc: Json, bundle: bytes) -> None:
        """Every webhook of `doc` gets `bundle` as caBundle (one merge patch, resourceVersion-guarded)."""
        wanted = _b64(bundle)
        hooks = doc.get("webhooks") or []
        if all(h.get("clientConfig", {}).get("caBundle") == wanted for h in hooks):
            return
        # A merge patch replaces a list whole: send every webhook back as read, caBundle changed.
        patched = [{**h, "clientConfig": {**h.get("clientConfig", {}), "caBundle": wanted}} for h in hooks]
        name = doc["metadata"]["name"]
        body = {"metadata": {"resourceVersion": doc["metadata"]["resourceVersion"]}, "webhooks": patched}
        try:
            await self.kube.request(
                "PATCH", f"{ADMISSIONREGISTRATION}/{plural}/{name}", body=body, content_type=MERGE_PATCH
            )
        except KubeApiError as exc:
            if exc.status in (404, 409):  # deleted, re-applied or patched by another replica meanwhile
                raise _Raced from exc
            raise map_error(exc, plural, name) from exc
        log.info("webhook_cert.trusted", kind=plural, name=name, webhooks=len(hooks))


def _describe(cert: certs.ServingCert) -> dict[str, object]:
    leaf = x509.load_pem_x509_certificate(cert.cert_pem)
    return {
        "serial": f"{leaf.serial_number:x}",
        "not_after": leaf.not_valid_after_utc.isoformat(),
        "cas_trusted": cert.ca_pem.count(b"BEGIN CERTIFICATE"),
    }
