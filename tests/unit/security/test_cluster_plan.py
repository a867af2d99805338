"""The cluster install's Secrets (vc_security.cluster.plan): made when missing, kept when present,
one identity rotated when its Secret is gone, nats-auth following the keys. Pure: time passed in."""

from __future__ import annotations

import base64
import datetime

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from vc_security import pki
from vc_security.cluster import AUTH_SECRET, CA_SECRET, TLS_SECRET, creds_secret, identities, plan, secret_names
from vc_security.credentials import decode_credentials

NOW = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


def public_key(data: dict[str, dict[str, str]], identity: str) -> str:
    raw = base64.b64decode(data[creds_secret(identity)]["creds.json"])
    return decode_credentials(raw, source=identity).key.public_key


def test_from_nothing_everything_is_made_and_a_second_pass_keeps_it() -> None:
    first = plan({}, namespace="tephra-system", backend="kube", now=NOW)
    assert set(first.data) == set(secret_names()) and set(first.made) == set(secret_names()) - {AUTH_SECRET}
    auth = base64.b64decode(first.data[AUTH_SECRET]["auth.conf"]).decode()
    assert all(public_key(first.data, i) in auth for i in identities())
    seeds = [
        decode_credentials(base64.b64decode(first.data[creds_secret(i)]["creds.json"]), source=i).key.seed
        for i in identities()
    ]
    assert not any(seed in auth for seed in seeds)  # public keys only, never a seed
    again = plan(first.data, namespace="tephra-system", backend="kube", now=NOW + datetime.timedelta(days=1))
    assert again.made == () and again.data == first.data


def test_a_deleted_identity_alone_gets_a_new_key() -> None:
    first = plan({}, namespace="tephra-system", backend="kube", now=NOW).data
    current = {name: data for name, data in first.items() if name != creds_secret("gc")}
    second = plan(current, namespace="tephra-system", backend="kube", now=NOW)
    assert second.made == (creds_secret("gc"),)
    assert public_key(second.data, "gc") != public_key(first, "gc")
    assert public_key(second.data, "scheduler") == public_key(first, "scheduler")
    auth = base64.b64decode(second.data[AUTH_SECRET]["auth.conf"]).decode()
    assert public_key(second.data, "gc") in auth and public_key(first, "gc") not in auth


def test_the_server_certificate_is_renewed_before_it_expires_and_with_a_new_ca() -> None:
    first = plan({}, namespace="tephra-system", backend="kube", now=NOW).data
    late = plan(first, namespace="tephra-system", backend="kube", now=NOW + datetime.timedelta(days=340))
    assert late.made == (TLS_SECRET,)
    without_ca = {name: data for name, data in first.items() if name != CA_SECRET}
    renewed = plan(without_ca, namespace="tephra-system", backend="kube", now=NOW)
    assert set(renewed.made) == {CA_SECRET, TLS_SECRET}
    new_ca = renewed.data[CA_SECRET]["ca.crt"]
    assert all(  # every identity's credentials carry the new CA
        decode_credentials(base64.b64decode(renewed.data[creds_secret(i)]["creds.json"]), source=i).ca_pem
        == base64.b64decode(new_ca)
        for i in identities()
    )


def test_a_server_certificate_without_the_route_names_is_issued_again() -> None:
    """The routes verify each server's name behind the headless Service: a certificate made before they
    did (the client Service's names only) is replaced, for server and client use both."""
    first = plan({}, namespace="tephra-system", backend="kube", now=NOW).data
    cert = base64.b64decode(first[TLS_SECRET]["tls.crt"])
    assert "*.nats-cluster.tephra-system.svc" in pki.dns_names_of(cert)
    usages = x509.load_pem_x509_certificate(cert).extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    ca_pem, ca_key = (base64.b64decode(first[CA_SECRET][k]) for k in ("ca.crt", "ca.key"))
    year = datetime.timedelta(days=365)
    old_cert, old_key = pki.issue_server_cert(ca_pem, ca_key, ["nats.tephra-system.svc"], NOW, year)
    older = {**first, TLS_SECRET: {**first[TLS_SECRET], "tls.crt": base64.b64encode(old_cert).decode()}}
    older[TLS_SECRET]["tls.key"] = base64.b64encode(old_key).decode()
    again = plan(older, namespace="tephra-system", backend="kube", now=NOW)
    assert again.made == (TLS_SECRET,)
    assert "*.nats-cluster.tephra-system.svc" in pki.dns_names_of(base64.b64decode(again.data[TLS_SECRET]["tls.crt"]))
