"""A client's credentials file: who it is on NATS, its NKey seed, and the CA it trusts.

One small JSON file per identity (mode 0600: it holds the seed), e.g. `.data/auth/admin.creds`:

    {"identity": "admin", "seed": "SUA...", "ca": "-----BEGIN CERTIFICATE-----\\n..."}

A tenant's file also names its namespaces (`"namespaces": ["team-a"]`): the server holds the identity
to them whatever the file says; vcctl reads them to list across them and to say what was refused.

Every Tephra process and vcctl connect with one: `--nats-creds FILE` / `VC_NATS__CREDS`, and
`--nats-ca FILE` / `VC_NATS__CA` for a CA kept apart (e.g. a mounted Secret). The identity also
names the client's inbox prefix (`_INBOX.<identity>`), the only inboxes the server lets it read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec

from vc_security.identities import check_identity_name
from vc_security.nkey import BadNkey, UserKey, parse_user_seed
from vc_security.registry import MAX_NAMESPACES

CREDS_ENV: Final = "VC_NATS__CREDS"
CA_ENV: Final = "VC_NATS__CA"
MAX_CREDS_BYTES: Final = 64 * 1024


class BadCredentials(ValueError):
    """A credentials file that cannot be used; the message names the file and the field."""


class _File(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    identity: str
    seed: str
    ca: str | None = None
    namespaces: list[str] | None = None


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    identity: str
    key: UserKey
    ca_pem: bytes | None = None  # None: the server's certificate is checked against the system's CAs
    namespaces: frozenset[str] | None = None  # a tenant's namespaces; None: not held to any

    def encode(self) -> bytes:
        ca = self.ca_pem.decode() if self.ca_pem else None
        namespaces = sorted(self.namespaces) if self.namespaces is not None else None
        return msgspec.json.format(msgspec.json.encode(_File(self.identity, self.key.seed, ca, namespaces))) + b"\n"

    def with_ca(self, ca_pem: bytes) -> ClientCredentials:
        return ClientCredentials(self.identity, self.key, ca_pem, self.namespaces)


def decode_credentials(data: bytes, *, source: str) -> ClientCredentials:
    if len(data) > MAX_CREDS_BYTES:
        raise BadCredentials(f"{source}: {len(data)} bytes; a credentials file is at most {MAX_CREDS_BYTES}")
    try:
        raw = msgspec.json.decode(data, type=_File)
    except msgspec.DecodeError as exc:
        raise BadCredentials(f"{source}: not a Tephra credentials file ({exc})") from None
    try:
        check_identity_name(raw.identity)
    except ValueError as exc:
        raise BadCredentials(f"{source}: identity: {exc}") from None
    try:
        key = parse_user_seed(raw.seed)
    except BadNkey as exc:
        raise BadCredentials(f"{source}: seed: {exc}") from None
    if raw.ca is not None and "-----BEGIN CERTIFICATE-----" not in raw.ca:
        raise BadCredentials(f"{source}: ca: not a PEM certificate")
    return ClientCredentials(raw.identity, key, raw.ca.encode() if raw.ca else None, _namespaces(raw, source))


def _namespaces(raw: _File, source: str) -> frozenset[str] | None:
    if raw.namespaces is None:
        return None
    if not raw.namespaces or len(raw.namespaces) > MAX_NAMESPACES:
        raise BadCredentials(f"{source}: namespaces: {len(raw.namespaces)} given; 1 to {MAX_NAMESPACES}")
    for namespace in raw.namespaces:
        try:
            check_identity_name(namespace)
        except ValueError:
            raise BadCredentials(f"{source}: namespaces: {namespace!r} is not a namespace (a DNS label)") from None
    return frozenset(raw.namespaces)


def load_credentials(path: str | Path, *, ca_path: str | Path | None = None) -> ClientCredentials:
    """The credentials in `path`, with the CA of `ca_path` when given; BadCredentials naming what is wrong."""
    try:
        creds = decode_credentials(Path(path).read_bytes(), source=str(path))
    except OSError as exc:
        raise BadCredentials(f"{path}: {exc.strerror or exc}") from None
    if ca_path is not None:
        try:
            ca = Path(ca_path).read_bytes()
        except OSError as exc:
            raise BadCredentials(f"{ca_path}: {exc.strerror or exc}") from None
        if b"-----BEGIN CERTIFICATE-----" not in ca:
            raise BadCredentials(f"{ca_path}: not a PEM certificate")
        creds = creds.with_ca(ca)
    return creds


def ca_from_env() -> bytes | None:
    """The CA `VC_NATS__CA` names (for a client without credentials of its own), None when unset."""
    path = os.environ.get(CA_ENV)
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise BadCredentials(f"{CA_ENV}={path}: {exc.strerror or exc}") from None


def credentials_from_env() -> ClientCredentials | None:
    """`VC_NATS__CREDS` (and `VC_NATS__CA`), or None when unset."""
    path = os.environ.get(CREDS_ENV)
    if not path:
        return None
    return load_credentials(path, ca_path=os.environ.get(CA_ENV) or None)


def write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner can read (0600 from creation, never world-readable for a moment)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp")
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.chmod(tmp, 0o600)  # an existing file keeps its mode on O_CREAT
    os.replace(tmp, path)
