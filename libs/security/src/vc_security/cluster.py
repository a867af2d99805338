"""What the cluster install keeps in Secrets for a closed NATS, made from what exists. Pure.

    nats-ca                    ca.crt, ca.key         the CA (read by the bootstrap Job only)
    nats-tls                   ca.crt, tls.crt, tls.key   nats-server's certificate (mounted by NATS)
    nats-auth                  auth.conf               the `authorization` block: every identity's public
                                                        NKey and permissions (mounted by NATS; no secret)
    tephra-nats-<identity>     creds.json              one per service and `admin` (each pod mounts its own)

`plan()` takes the Secrets' current data and returns the data each should hold: what is missing or
unusable is made, what is there is kept, and nats-auth always follows the identities' keys, so
deleting one identity's Secret and running the bootstrap again rotates that key alone.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from vc_security import pki
from vc_security.credentials import BadCredentials, ClientCredentials, decode_credentials
from vc_security.identities import ADMIN, SERVICE_GRANTS, Backend, admin_grant, permissions
from vc_security.natsconf import NatsUser, authorization_block
from vc_security.nkey import new_user_key

CA_SECRET: Final = "nats-ca"
TLS_SECRET: Final = "nats-tls"
AUTH_SECRET: Final = "nats-auth"
CREDS_KEY: Final = "creds.json"
CA_VALIDITY: Final = datetime.timedelta(days=3650)
SERVER_VALIDITY: Final = datetime.timedelta(days=365)
RENEW_MARGIN: Final = datetime.timedelta(days=30)

SecretData = dict[str, str]  # a Secret's `data`: base64 values


def identities() -> tuple[str, ...]:
    return (*SERVICE_GRANTS, ADMIN)


def creds_secret(identity: str) -> str:
    return f"tephra-nats-{identity}"


def secret_names() -> tuple[str, ...]:
    """Every Secret the bootstrap reads or writes (its RBAC names exactly these)."""
    return (CA_SECRET, TLS_SECRET, AUTH_SECRET, *(creds_secret(i) for i in identities()))


def server_dns_names(namespace: str) -> list[str]:
    """The client Service's names, and each server's own behind the headless `nats-cluster` Service
    (the routes between the servers verify those, both ways)."""
    clients = [f"nats.{namespace}.svc", f"nats.{namespace}.svc.cluster.local", f"nats.{namespace}", "nats"]
    return [*clients, f"*.nats-cluster.{namespace}.svc", f"*.nats-cluster.{namespace}.svc.cluster.local"]


@dataclass(frozen=True, slots=True)
class Plan:
    data: dict[str, SecretData]  # Secret name -> the data it should hold
    made: tuple[str, ...]  # what was made anew (for the log), e.g. "tephra-nats-gc"


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _raw(data: SecretData | None, key: str) -> bytes | None:
    if not data or key not in data:
        return None
    try:
        return base64.b64decode(data[key], validate=True)
    except (binascii.Error, ValueError):
        return None


def plan(current: Mapping[str, SecretData | None], *, namespace: str, backend: Backend, now: datetime.datetime) -> Plan:
    made: list[str] = []
    out: dict[str, SecretData] = {}
    ca_pem, ca_key = _raw(current.get(CA_SECRET), "ca.crt"), _raw(current.get(CA_SECRET), "ca.key")
    if ca_pem is None or ca_key is None or pki.expires_within(ca_pem, now, RENEW_MARGIN):
        ca_pem, ca_key = pki.new_ca("tephra-nats-ca", now, CA_VALIDITY)
        made.append(CA_SECRET)
    out[CA_SECRET] = {"ca.crt": _b64(ca_pem), "ca.key": _b64(ca_key)}

    tls = current.get(TLS_SECRET)
    cert, key = _raw(tls, "tls.crt"), _raw(tls, "tls.key")
    names = server_dns_names(namespace)
    if (
        cert is None
        or key is None
        or _raw(tls, "ca.crt") != ca_pem
        or pki.expires_within(cert, now, RENEW_MARGIN)
        or pki.dns_names_of(cert) != frozenset(names)  # e.g. one made before the routes verified theirs
    ):
        cert, key = pki.issue_server_cert(ca_pem, ca_key, names, now, SERVER_VALIDITY, client_auth=True)
        made.append(TLS_SECRET)
    out[TLS_SECRET] = {"ca.crt": _b64(ca_pem), "tls.crt": _b64(cert), "tls.key": _b64(key)}

    users: list[NatsUser] = []
    for identity in identities():
        name = creds_secret(identity)
        creds = _usable_creds(current.get(name), identity)
        if creds is None:
            creds = ClientCredentials(identity, new_user_key())
            made.append(name)
        creds = creds.with_ca(ca_pem)  # the CA travels with the credentials (a new CA reaches every pod)
        out[name] = {CREDS_KEY: _b64(creds.encode())}
        grant = SERVICE_GRANTS.get(identity) or admin_grant(backend)
        users.append(NatsUser(identity, creds.key.public_key, permissions(identity, grant, backend)))
    out[AUTH_SECRET] = {"auth.conf": _b64(authorization_block(users).encode())}
    return Plan(out, tuple(made))


def _usable_creds(data: SecretData | None, identity: str) -> ClientCredentials | None:
    raw = _raw(data, CREDS_KEY)
    if raw is None:
        return None
    try:
        creds = decode_credentials(raw, source=creds_secret(identity))
    except BadCredentials:
        return None
    return creds if creds.identity == identity else None
