"""Where the webhook's certificate comes from, and the worker that serves the webhook with it.

Three sources, by flag:
- `--cert-secret NAME` (the install's default): self-managed in a Secret of `--cert-namespace`, its
  CA put into the webhook configurations named by `--mutating-webhook`/`--validating-webhook`,
  renewed before expiry (`cert_manager`);
- `--tls-cert`/`--tls-key`: files someone else renews (e.g. cert-manager into a mounted Secret);
  re-read every `--cert-check-interval` and served anew when they change;
- `--generate-certs DIR`: development, a throwaway CA written to DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import structlog

from vc_admission import certs
from vc_admission.http import ServingTLS, serve_webhook
from vc_core.durations import parse_duration
from vc_core.errors import ConfigError, InvalidObject, TemporaryError, VcError
from vc_runtime.probes import Probes
from vc_runtime.service import FnWorker
from vc_validation import AdmissionContext

if TYPE_CHECKING:
    # cert_manager imports the kube client, whose kubernetes-asyncio costs seconds of CPU at every start:
    # only a self-managed certificate (--cert-secret) needs it, so it is imported there, not here.
    from vc_admission.cert_manager import CertConfig

log = structlog.get_logger(__name__)
PROBE = "webhook-serving"


def add_webhook_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--webhook-port", type=int, help="serve AdmissionReview over HTTPS on this port (0: off)")
    parser.add_argument("--webhook-host")
    parser.add_argument("--tls-cert", help="serving certificate (PEM), re-read when it changes")
    parser.add_argument("--tls-key", help="serving key (PEM)")
    parser.add_argument(
        "--generate-certs", help="development: write a self-signed CA and serving cert to this directory"
    )
    parser.add_argument("--service-dns", help="DNS name(s), comma-separated, in a generated or self-managed cert")
    parser.add_argument("--cert-secret", help="self-managed: keep the CA and serving cert in this Secret (kube)")
    parser.add_argument(
        "--cert-namespace",
        default=os.environ.get("POD_NAMESPACE"),
        help="namespace of --cert-secret (default: $POD_NAMESPACE, else tephra-system)",
    )
    parser.add_argument(
        "--mutating-webhook",
        action="append",
        help="self-managed: MutatingWebhookConfiguration whose caBundle to keep (repeatable)",
    )
    parser.add_argument(
        "--validating-webhook",
        action="append",
        help="self-managed: ValidatingWebhookConfiguration whose caBundle to keep (repeatable)",
    )
    parser.add_argument("--cert-validity", help="self-managed: serving cert lifetime (Go duration)")
    parser.add_argument("--ca-validity", help="self-managed: CA lifetime (Go duration)")
    parser.add_argument(
        "--cert-check-interval", help="how often the certificate is re-read and renewal considered (Go duration)"
    )


class WebhookOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_webhook_arguments, typed, with their defaults."""

    webhook_port: int = 0
    webhook_host: str = "0.0.0.0"
    tls_cert: str | None = None
    tls_key: str | None = None
    generate_certs: str | None = None
    service_dns: str = "tephra-admission.tephra-system.svc"
    cert_secret: str | None = None
    # --cert-namespace's default when $POD_NAMESPACE is unset.
    cert_namespace: str = "tephra-system"
    mutating_webhook: tuple[str, ...] = ()
    validating_webhook: tuple[str, ...] = ()
    cert_validity: str = "8760h"
    ca_validity: str = "87600h"
    cert_check_interval: str = "1h"


def _duration(flag: str, text: str) -> datetime.timedelta:
    try:
        seconds = parse_duration(text, field=flag)
    except InvalidObject as exc:
        raise ConfigError(f"{flag}: {exc}") from exc
    if seconds <= 0:
        raise ConfigError(f"{flag}: must be positive, got {text!r}")
    return datetime.timedelta(seconds=seconds)


def cert_config(options: WebhookOptions) -> CertConfig:
    from vc_admission.cert_manager import CertConfig

    validity = certs.Validity(
        ca=_duration("--ca-validity", options.ca_validity), leaf=_duration("--cert-validity", options.cert_validity)
    )
    if validity.leaf > validity.ca:
        raise ConfigError("--cert-validity: longer than --ca-validity (a certificate never outlives its CA)")
    return CertConfig(
        namespace=options.cert_namespace,
        secret=options.cert_secret or "",
        dns_names=_dns_names(options),
        mutating=options.mutating_webhook,
        validating=options.validating_webhook,
        validity=validity,
        check_interval_s=_check_interval_s(options),
    )


def _check_interval_s(options: WebhookOptions) -> float:
    return _duration("--cert-check-interval", options.cert_check_interval).total_seconds()


def _dns_names(options: WebhookOptions) -> tuple[str, ...]:
    names = tuple(n.strip() for n in options.service_dns.split(",") if n.strip())
    if not names:
        raise ConfigError("--service-dns: at least one DNS name is needed")
    return names


Renew = Callable[[asyncio.Event], Coroutine[Any, Any, None]]  # keeps the served certificate current until shutdown
# Loads the first certificate into the ServingTLS; None when shutdown came first.
Source = Callable[[ServingTLS, asyncio.Event, contextlib.AsyncExitStack], Awaitable[Renew | None]]


def webhook_worker(
    options: WebhookOptions, kubeconfig: str | None, context: AdmissionContext, probes: Probes
) -> FnWorker:
    """The webhook: the first certificate, then the HTTPS server and the renewal loop side by side.
    Readiness waits for the server (a Service sends the apiserver only to replicas that serve)."""
    port = options.webhook_port
    host = options.webhook_host or "0.0.0.0"  # an empty --webhook-host: every interface, as the default
    source = _source(options, kubeconfig)
    probes.require(PROBE)

    async def run(shutdown: asyncio.Event) -> None:
        tls = ServingTLS()
        async with contextlib.AsyncExitStack() as stack:
            renew = await source(tls, shutdown, stack)
            if renew is None:  # shut down before the first certificate
                return
            started = asyncio.Event()
            async with asyncio.TaskGroup() as tg:
                tg.create_task(
                    serve_webhook(context, host=host, port=port, tls=tls.context, started=started, shutdown=shutdown),
                    name="webhook-server",
                )
                tg.create_task(renew(shutdown), name="webhook-cert")
                await started.wait()
                probes.set(PROBE)

    return FnWorker("webhook", run)


def _source(options: WebhookOptions, kubeconfig: str | None) -> Source:
    """Validate the flags now (a bad flag exits 2 at start) and return how to get certificates."""
    if options.cert_secret:
        config = cert_config(options)
        return lambda tls, shutdown, stack: _self_managed(config, kubeconfig, tls, shutdown, stack)
    if options.generate_certs:
        directory = Path(options.generate_certs)
        names = list(_dns_names(options))
        return lambda tls, shutdown, stack: _generated(directory, names, tls)
    cert, key = options.tls_cert, options.tls_key
    if not cert or not key:
        raise ConfigError(
            "--webhook-port needs --cert-secret NAME, or --tls-cert and --tls-key, or --generate-certs DIR"
        )
    interval = _check_interval_s(options)
    return lambda tls, shutdown, stack: _files(Path(cert), Path(key), interval, tls)


async def _self_managed(
    config: CertConfig,
    kubeconfig: str | None,
    tls: ServingTLS,
    shutdown: asyncio.Event,
    stack: contextlib.AsyncExitStack,
) -> Renew | None:
    from vc_admission.cert_manager import CertManager
    from vc_kube.client import KubeClient

    try:
        kube = await KubeClient.connect(kubeconfig, agent="vc-admission")
    except Exception as exc:  # kubeconfig/in-cluster loading raises assorted types; all mean bad config
        raise ConfigError(f"--cert-secret: cannot load kube credentials ({kubeconfig or 'in-cluster'}): {exc}") from exc
    stack.push_async_callback(kube.close)
    manager = CertManager(kube, config, tls)
    delay = 0.5
    while not shutdown.is_set():
        try:
            await manager.sync()
            return manager.run
        except TemporaryError as exc:  # the apiserver is not there yet: keep trying, not ready meanwhile
            log.warning("webhook_cert.waiting", error=str(exc), retry_in_s=delay)
        except VcError as exc:  # e.g. 403: the role lacks a permission; say which and stop
            raise ConfigError(f"--cert-secret {config.namespace}/{config.secret}: {exc}") from exc
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(shutdown.wait(), timeout=delay)
        delay = min(delay * 2, 10.0)
    return None


async def _generated(directory: Path, names: list[str], tls: ServingTLS) -> Renew:
    cert = certs.generate(names)
    cert.write(directory)
    tls.load(cert.cert_pem, cert.key_pem)

    async def idle(shutdown: asyncio.Event) -> None:
        await shutdown.wait()

    return idle


async def _files(cert: Path, key: Path, interval_s: float, tls: ServingTLS) -> Renew:
    def load() -> bool:
        return tls.load(cert.read_bytes(), key.read_bytes())

    try:
        load()
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise ConfigError(f"--tls-cert/--tls-key: cannot load {cert}, {key}: {exc}") from exc

    async def reread(shutdown: asyncio.Event) -> None:
        # A mounted Secret is swapped atomically by the kubelet; a half-written pair fails to load and
        # the previous certificate keeps serving until the next look.
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(shutdown.wait(), timeout=interval_s)
                return
            try:
                if load():
                    log.info("webhook_cert.reloaded", cert=str(cert))
            except (OSError, ValueError) as exc:
                log.error("webhook_cert.reload_failed", cert=str(cert), error=str(exc))

    return reread
