"""The real ssh key generator (RSA 2048, as Volcano's ssh plugin), injected into the pure plugins."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from vc_job_controller.plugins.interface import SshKeyPair

KEY_BITS = 2048


def generate_rsa_key_pair() -> SshKeyPair:
    """PKCS#1 PEM private key and an OpenSSH public key line, like Go's x509/ssh marshalling."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private_pem = key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.TraditionalOpenSSL,
        encryption_algorithm=serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        encoding=serialization.Encoding.OpenSSH, format=serialization.PublicFormat.OpenSSH
    )
    return SshKeyPair(private_key_pem=private_pem, public_key=public + b"\n")
