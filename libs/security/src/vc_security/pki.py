"""A private CA and the serving certificates it signs (ECDSA P-256). Pure: time is passed in.

Shared by admission's webhook certificate (vc_admission.certs: its rotation policy) and the NATS
server's certificate (`vcctl up`'s throwaway one, the cluster install's bootstrap).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

BACKDATE: Final = datetime.timedelta(minutes=5)  # clock skew between this process and its peers
LOOPBACK: Final = ("127.0.0.1",)


@dataclass(frozen=True, slots=True)
class ServerCert:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    ca_key_pem: bytes

    def __repr__(self) -> str:  # never the keys
        return "ServerCert(...)"


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def new_ca(common_name: str, now: datetime.datetime, validity: datetime.timedelta) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a fresh CA that may sign leaves only."""
    key = ec.generate_private_key(ec.SECP256R1())
    usage = x509.KeyUsage(
        digital_signature=True,
        key_cert_sign=True,
        crl_sign=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        encipher_only=False,
        decipher_only=False,
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _pem(cert), _key_pem(key)


def issue_server_cert(
    ca_pem: bytes,
    ca_key_pem: bytes,
    dns_names: Sequence[str],
    now: datetime.datetime,
    validity: datetime.timedelta,
    *,
    ip_addresses: Sequence[str] = LOOPBACK,
    client_auth: bool = False,
) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a serving leaf for `dns_names` and `ip_addresses`, never outliving its CA."""
    if not dns_names:
        raise ValueError("a serving certificate needs at least one DNS name")
    ca = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an ECDSA key")
    key = ec.generate_private_key(ec.SECP256R1())
    alt = [x509.DNSName(n) for n in dns_names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    # client_auth: a server that also connects to its peers with it (NATS routes, verified both ways).
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client_auth else [])
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + validity, ca.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return _pem(cert), _key_pem(key)


def new_server_cert(
    ca_common_name: str,
    dns_names: Sequence[str],
    now: datetime.datetime,
    *,
    ca_validity: datetime.timedelta,
    validity: datetime.timedelta,
    ip_addresses: Sequence[str] = LOOPBACK,
) -> ServerCert:
    """A fresh CA and a serving certificate signed by it."""
    ca_pem, ca_key_pem = new_ca(ca_common_name, now, ca_validity)
    cert_pem, key_pem = issue_server_cert(ca_pem, ca_key_pem, dns_names, now, validity, ip_addresses=ip_addresses)
    return ServerCert(ca_pem=ca_pem, cert_pem=cert_pem, key_pem=key_pem, ca_key_pem=ca_key_pem)


def expires_within(cert_pem: bytes, now: datetime.datetime, margin: datetime.timedelta) -> bool:
    """The (first) certificate in `cert_pem` ends before `now + margin`, or is unreadable."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        return True
    return cert.not_valid_after_utc < now + margin


def dns_names_of(cert_pem: bytes) -> frozenset[str]:
    """The DNS names a (first) certificate in `cert_pem` serves; none when it is unreadable."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return frozenset()
    return frozenset(alt.get_values_for_type(x509.DNSName))
