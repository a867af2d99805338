"""The webhook's serving certificate: a private CA, a leaf signed by it, and when to renew them. Pure.

`generate()` makes a fresh CA and leaf (development, `--generate-certs`). `plan()` is the rotation
policy the self-managed mode (`cert_manager`) applies to what it reads from its Secret:

- nothing there, or something unreadable, or a leaf for other names: a new CA and leaf;
- the CA has less than `renew_fraction` of its validity left: phase 1, a new signing CA is added to
  the trust bundle *in front of* the old one, the leaf stays. The bundle goes into the webhook
  configurations first, so whichever leaf a replica serves, the apiserver trusts it;
- the leaf was signed by an older CA and every webhook configuration already trusts the new one:
  phase 2, a leaf from the new CA;
- the leaf has less than `renew_fraction` of its validity left: a new leaf from the same CA (the
  bundle, and so the webhook configurations, do not change);
- CAs that expired leave the bundle.

Time is always passed in (`now`): nothing here reads a clock, a file or the network.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from vc_security import pki

CA_COMMON_NAME: Final = "tephra-admission-ca"
# Kubernetes' TLS Secret keys, plus the trust bundle (cert-manager's spelling) and the CA's key.
SECRET_KEYS: Final = ("ca.crt", "tls.crt", "tls.key", "ca.key")


@dataclass(frozen=True, slots=True)
class Validity:
    ca: datetime.timedelta = datetime.timedelta(days=3650)
    leaf: datetime.timedelta = datetime.timedelta(days=365)
    renew_fraction: float = 1 / 3  # renew when less than this share of the validity remains


@dataclass(frozen=True, slots=True)
class ServingCert:
    """ca_pem is the trust bundle: the signing CA first, then older CAs still valid."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    ca_key_pem: bytes = b""  # the signing CA's key; empty for certificates this process did not make

    def write(self, directory: Path) -> tuple[Path, Path, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        paths = (directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
        for path, data in zip(paths, (self.ca_pem, self.cert_pem, self.key_pem), strict=True):
            path.write_bytes(data)
        paths[2].chmod(0o600)
        return paths

    def secret_data(self) -> dict[str, str]:
        """The Secret's `data` (base64 values), keys as in SECRET_KEYS."""
        raw = dict(zip(SECRET_KEYS, (self.ca_pem, self.cert_pem, self.key_pem, self.ca_key_pem), strict=True))
        return {k: base64.b64encode(v).decode() for k, v in raw.items()}


class UnreadableCert(ValueError):
    """What a Secret holds cannot be used; the message says why."""


def from_secret_data(data: dict[str, str] | None) -> ServingCert:
    """The inverse of `ServingCert.secret_data`; raises UnreadableCert naming the key at fault."""
    data = data or {}
    values: list[bytes] = []
    for key in SECRET_KEYS:
        if key not in data:
            raise UnreadableCert(f"data.{key}: missing")
        try:
            values.append(base64.b64decode(data[key], validate=True))
        except (binascii.Error, ValueError) as exc:
            raise UnreadableCert(f"data.{key}: not base64 ({exc})") from exc
    return ServingCert(*values)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def new_ca(now: datetime.datetime, validity: datetime.timedelta) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a fresh CA that may sign leaves only."""
    return pki.new_ca(CA_COMMON_NAME, now, validity)


def issue(
    ca_pem: bytes, ca_key_pem: bytes, dns_names: Sequence[str], now: datetime.datetime, validity: datetime.timedelta
) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a serving leaf for `dns_names` and 127.0.0.1, never outliving its CA."""
    return pki.issue_server_cert(ca_pem, ca_key_pem, dns_names, now, validity)


def generate(dns_names: list[str], *, days: int = 365, now: datetime.datetime | None = None) -> ServingCert:
    """A fresh CA and a leaf signed by it, both valid for `days`."""
    now = now or datetime.datetime.now(datetime.UTC)
    validity = datetime.timedelta(days=days)
    ca_pem, ca_key_pem = new_ca(now, validity)
    cert_pem, key_pem = issue(ca_pem, ca_key_pem, dns_names, now, validity)
    return ServingCert(ca_pem=ca_pem, cert_pem=cert_pem, key_pem=key_pem, ca_key_pem=ca_key_pem)


def fresh(dns_names: Sequence[str], now: datetime.datetime, validity: Validity) -> ServingCert:
    ca_pem, ca_key_pem = new_ca(now, validity.ca)
    cert_pem, key_pem = issue(ca_pem, ca_key_pem, dns_names, now, validity.leaf)
    return ServingCert(ca_pem=ca_pem, cert_pem=cert_pem, key_pem=key_pem, ca_key_pem=ca_key_pem)


def remaining_share(cert: x509.Certificate, now: datetime.datetime) -> float:
    """The share of the certificate's validity still ahead of `now` (negative once expired)."""
    total = (cert.not_valid_after_utc - cert.not_valid_before_utc).total_seconds()
    return (cert.not_valid_after_utc - now).total_seconds() / total if total > 0 else -1.0


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _names(cert: x509.Certificate) -> list[str]:
    try:
        alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return alt.get_values_for_type(x509.DNSName)


@dataclass(frozen=True, slots=True)
class Parsed:
    bundle: list[x509.Certificate]  # [0] is the signing CA
    leaf: x509.Certificate


def parse(current: ServingCert) -> Parsed:
    """Checks that the parts fit together; raises UnreadableCert saying what does not."""
    try:
        bundle = x509.load_pem_x509_certificates(current.ca_pem)
    except ValueError as exc:
        raise UnreadableCert(f"ca.crt: not PEM certificates ({exc})") from exc
    try:
        leaf = x509.load_pem_x509_certificate(current.cert_pem)
    except ValueError as exc:
        raise UnreadableCert(f"tls.crt: not a PEM certificate ({exc})") from exc
    try:
        ca_key = serialization.load_pem_private_key(current.ca_key_pem, password=None)
        key = serialization.load_pem_private_key(current.key_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise UnreadableCert(f"tls.key or ca.key: not a PEM private key ({exc})") from exc
    if ca_key.public_key() != bundle[0].public_key():
        raise UnreadableCert("ca.key: does not belong to the first certificate of ca.crt")
    if key.public_key() != leaf.public_key():
        raise UnreadableCert("tls.key: does not belong to tls.crt")
    if not any(_signed_by(leaf, ca) for ca in bundle):
        raise UnreadableCert("tls.crt: not signed by any CA of ca.crt")
    return Parsed(bundle=bundle, leaf=leaf)


@dataclass(frozen=True, slots=True)
class Plan:
    reason: str  # why it changes, for the log; "" when nothing does
    cert: ServingCert | None  # what to store; None: keep what is there


def plan(
    current: ServingCert | None,
    *,
    dns_names: Sequence[str],
    now: datetime.datetime,
    validity: Validity,
    trusted_bundles: Sequence[bytes],
) -> Plan:
    """What the Secret should hold next. `trusted_bundles`: the caBundle of every webhook this
    certificate serves, as the apiserver has them now."""
    if current is None:
        return Plan("no certificate yet", fresh(dns_names, now, validity))
    try:
        parsed = parse(current)
    except UnreadableCert as exc:
        return Plan(f"unreadable ({exc}): starting over", fresh(dns_names, now, validity))
    if sorted(_names(parsed.leaf)) != sorted(dns_names):
        return Plan(
            f"the certificate is for {_names(parsed.leaf)}, not {list(dns_names)}", fresh(dns_names, now, validity)
        )
    signing = parsed.bundle[0]
    leaf_left = remaining_share(parsed.leaf, now)
    if remaining_share(signing, now) < validity.renew_fraction:
        if leaf_left <= 0:  # nothing is served that works: no reason for two phases
            return Plan(
                "the certificate expired and its CA is due: a new CA and certificate", fresh(dns_names, now, validity)
            )
        ca_pem, ca_key_pem = new_ca(now, validity.ca)
        bundle = ca_pem + b"".join(_cert_pem(c) for c in parsed.bundle if remaining_share(c, now) > 0)
        return Plan(
            "CA renewal, phase 1: the new CA joins the trust bundle",
            replace(current, ca_pem=bundle, ca_key_pem=ca_key_pem),
        )
    # Older CAs stay trusted until they expire: another replica may serve a leaf of theirs until it re-reads.
    live = [c for c in parsed.bundle if c is signing or remaining_share(c, now) > 0]
    bundle = b"".join(_cert_pem(c) for c in live)
    signing_pem = _cert_pem(signing)
    leaf_from_old_ca = not _signed_by(parsed.leaf, signing)
    # Phase 2 waits until every webhook configuration trusts the new CA (unless the old leaf is dead anyway).
    waiting = leaf_from_old_ca and leaf_left > 0 and not all(signing_pem in b for b in trusted_bundles)
    if not waiting and (leaf_from_old_ca or leaf_left < validity.renew_fraction):
        reason = "CA renewal, phase 2: a certificate from the new CA" if leaf_from_old_ca else "certificate renewal"
        cert_pem, key_pem = issue(signing_pem, current.ca_key_pem, dns_names, now, validity.leaf)
        return Plan(reason, replace(current, ca_pem=bundle, cert_pem=cert_pem, key_pem=key_pem))
    if len(live) < len(parsed.bundle):
        return Plan("expired CAs leave the trust bundle", replace(current, ca_pem=bundle))
    return Plan("", None)
