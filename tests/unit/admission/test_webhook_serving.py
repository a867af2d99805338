"""The webhook server's certificate can change while it serves (ServingTLS), and the flags that pick
the certificate's source are checked at start, each error naming its flag."""

from __future__ import annotations

import argparse
import asyncio
import socket
import ssl

import pytest
from cryptography import x509

from vc_admission import certs
from vc_admission.http import ServingTLS, serve_webhook
from vc_admission.webhook_tls import WebhookOptions, add_webhook_arguments, cert_config, webhook_worker
from vc_bus.server import free_port
from vc_core.errors import ConfigError
from vc_runtime.probes import Probes
from vc_runtime.settings import RuntimeSettings, options_of
from vc_validation import StaticContext

NAMES = ["tephra-admission.tephra-system.svc"]


def handshake(port: int, ca_pem: bytes) -> int:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


async def test_a_new_certificate_is_served_from_the_next_handshake_without_a_restart() -> None:
    first, second = certs.generate(NAMES), certs.generate(NAMES)
    tls, shutdown, started, port = ServingTLS(), asyncio.Event(), asyncio.Event(), free_port()
    assert tls.load(first.cert_pem, first.key_pem) and not tls.load(first.cert_pem, first.key_pem)
    server = asyncio.create_task(
        serve_webhook(StaticContext(), host="127.0.0.1", port=port, tls=tls.context, started=started, shutdown=shutdown)
    )
    await started.wait()
    try:
        assert (
            await asyncio.to_thread(handshake, port, first.ca_pem)
            == x509.load_pem_x509_certificate(first.cert_pem).serial_number
        )
        assert tls.load(second.cert_pem, second.key_pem)
        assert (
            await asyncio.to_thread(handshake, port, second.ca_pem)
            == x509.load_pem_x509_certificate(second.cert_pem).serial_number
        )
        with pytest.raises(ssl.SSLCertVerificationError):  # the old CA no longer verifies what is served
            await asyncio.to_thread(handshake, port, first.ca_pem)
    finally:
        shutdown.set()
        await server  # ends on shutdown


def parse(*argv: str) -> WebhookOptions:
    parser = argparse.ArgumentParser()
    add_webhook_arguments(parser)
    flags = vars(parser.parse_args(["--webhook-port", "8443", *argv]))
    return options_of(RuntimeSettings(service="admission", flags=flags), WebhookOptions)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "--webhook-port needs --cert-secret NAME, or --tls-cert and --tls-key, or --generate-certs DIR"),
        (("--cert-secret", "s", "--cert-validity", "0s"), "--cert-validity: must be positive"),
        (("--cert-secret", "s", "--ca-validity", "ten years"), "--ca-validity"),
        (("--cert-secret", "s", "--cert-validity", "87600h", "--ca-validity", "8760h"), "longer than --ca-validity"),
        (("--cert-secret", "s", "--service-dns", " , "), "--service-dns: at least one DNS name"),
    ],
)
def test_bad_flags_are_refused_at_start_naming_the_flag(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        webhook_worker(parse(*argv), None, StaticContext(), Probes())


def test_the_self_managed_flags_as_the_manifests_give_them() -> None:
    config = cert_config(
        parse(
            "--cert-secret",
            "tephra-admission-tls",
            "--cert-namespace",
            "tephra-system",
            "--mutating-webhook",
            "tephra-mutate",
            "--validating-webhook",
            "tephra-validate",
            "--service-dns",
            "a.svc,b.svc",
        )
    )
    assert (config.secret, config.namespace, config.mutating, config.validating) == (
        "tephra-admission-tls",
        "tephra-system",
        ("tephra-mutate",),
        ("tephra-validate",),
    )
    assert config.dns_names == ("a.svc", "b.svc") and config.check_interval_s == 3600.0
    assert config.validity.leaf.days == 365 and config.validity.ca.days == 3650
