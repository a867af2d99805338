"""NATS user NKeys: an Ed25519 key pair in NATS's text encoding (`SU...` seed, `U...` public key). Pure.

The server's configuration holds only public keys; each client keeps its seed and signs the server's
nonce with it when it connects, so no secret ever crosses the wire or sits in the server's files.
The encoding is nkeys.go's: a prefix byte (two for a seed), the raw key, a CRC-16/XMODEM, base32
without padding. `nkeys` (the PyPI package nats-py signs with) reads what this writes; a unit test
holds the two together.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

_PREFIX_SEED: Final = 18 << 3  # 'S'
_PREFIX_USER: Final = 20 << 3  # 'U'
_RAW_KEY_BYTES: Final = 32


class BadNkey(ValueError):
    """Text that is not a NATS user seed or public key; the message says why (never the seed)."""


@dataclass(frozen=True, slots=True)
class UserKey:
    seed: str  # secret: `SU...`
    public_key: str  # `U...`, what the server's configuration names

    def __repr__(self) -> str:  # a log line or a traceback must never carry the seed
        return f"UserKey(public_key={self.public_key!r})"


def new_user_key() -> UserKey:
    # The raw-bytes methods, not private_bytes(serialization...): importing cryptography's serialization
    # module (its SSH key formats) costs every process that connects to NATS about 60 ms.
    return user_key_from_raw(Ed25519PrivateKey.generate().private_bytes_raw())


def user_key_from_raw(raw_seed: bytes) -> UserKey:
    if len(raw_seed) != _RAW_KEY_BYTES:
        raise BadNkey(f"a seed is {_RAW_KEY_BYTES} bytes, not {len(raw_seed)}")
    public = Ed25519PrivateKey.from_private_bytes(raw_seed).public_key().public_bytes_raw()
    prefix = bytes([_PREFIX_SEED | (_PREFIX_USER >> 5), (_PREFIX_USER & 31) << 3])
    return UserKey(seed=_encode(prefix + raw_seed), public_key=_encode(bytes([_PREFIX_USER]) + public))


def parse_user_seed(text: str) -> UserKey:
    """The key pair of a `SU...` seed; BadNkey when it is not one (wrong prefix, checksum, length)."""
    raw = _decode(text.strip(), what="seed")
    if len(raw) != 2 + _RAW_KEY_BYTES or raw[0] & 0xF8 != _PREFIX_SEED:
        raise BadNkey("not an NKey seed (it must start with 'S')")
    if ((raw[0] & 7) << 5) | (raw[1] >> 3) != _PREFIX_USER:
        raise BadNkey("not a user seed (it must start with 'SU')")
    return user_key_from_raw(raw[2:])


def is_user_public_key(text: str) -> bool:
    try:
        raw = _decode(text, what="public key")
    except BadNkey:
        return False
    return len(raw) == 1 + _RAW_KEY_BYTES and raw[0] == _PREFIX_USER


def sign(key: UserKey, data: bytes) -> bytes:
    """An Ed25519 signature of `data` by the key's seed (what a NATS client signs the nonce with)."""
    raw = _decode(key.seed, what="seed")[2:]
    return Ed25519PrivateKey.from_private_bytes(raw).sign(data)


def verify(public_key: str, signature: bytes, data: bytes) -> bool:
    """True when `signature` is the seed of `public_key` signing `data`."""
    if not is_user_public_key(public_key):
        return False
    raw = _decode(public_key, what="public key")[1:]
    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(signature, data)
    except InvalidSignature:
        return False
    return True


def _encode(payload: bytes) -> str:
    return base64.b32encode(payload + _crc16(payload).to_bytes(2, "little")).decode().rstrip("=")


def _decode(text: str, *, what: str) -> bytes:
    try:
        data = base64.b32decode(text + "=" * (-len(text) % 8))
    except (binascii.Error, ValueError):
        raise BadNkey(f"the {what} is not base32") from None
    if len(data) < 3 or _crc16(data[:-2]) != int.from_bytes(data[-2:], "little"):
        raise BadNkey(f"the {what}'s checksum does not match")
    return data[:-2]


def _crc16(data: bytes) -> int:
    """CRC-16/XMODEM (polynomial 0x1021, initial 0), as nkeys.go's crc16."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc
