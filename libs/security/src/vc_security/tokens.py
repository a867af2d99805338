"""Login tokens for the dashboard: a statement "I am <identity> until <time>", signed by the identity's
NKey. Pure.

    <identity>.<expires, unix seconds>.<Ed25519 signature, base64url>

Whoever holds an identity's credentials (`vcctl user create` wrote them; `admin.creds` for the admin)
can make one (`vcctl user token`), and whoever knows the identity's public key (identities.json, the
same registry admission reads) can check one, so the dashboard keeps no secret and no user list of its
own. The signed text names its purpose, so a token is not a signature of anything else (a NATS
nonce). A token is a bearer credential: it proves who holds it until it expires, and a deleted
identity's token stops working because its public key is gone from the registry.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Final

from vc_security.identities import check_identity_name
from vc_security.nkey import UserKey, sign, verify

PURPOSE: Final = b"tephra-dashboard-login\n"
MAX_TOKEN_LENGTH: Final = 256
MAX_LIFETIME_S: Final = 30 * 24 * 3600


class BadToken(ValueError):
    """A token that proves nothing; the message says why, for the person holding it."""


def issue_token(identity: str, key: UserKey, *, expires: int) -> str:
    signature = sign(key, _statement(identity, expires))
    return f"{identity}.{expires}.{base64.urlsafe_b64encode(signature).decode().rstrip('=')}"


def verify_token(token: str, public_key_of: Callable[[str], str | None], *, now: float) -> tuple[str, int]:
    """(identity, expires) when `token` is valid now; BadToken otherwise."""
    if len(token) > MAX_TOKEN_LENGTH or token.count(".") != 2:
        raise BadToken("not a Tephra login token (make one with `vcctl user token`)")
    identity, expires_text, signature_text = token.split(".")
    try:
        check_identity_name(identity)
        expires = int(expires_text) if expires_text.isascii() and expires_text.isdigit() else -1
        signature = base64.urlsafe_b64decode(signature_text + "=" * (-len(signature_text) % 4))
    except (ValueError, binascii.Error):
        raise BadToken("not a Tephra login token (make one with `vcctl user token`)") from None
    if expires <= now:
        raise BadToken("the token has expired: make a new one with `vcctl user token`")
    if expires > now + MAX_LIFETIME_S:
        raise BadToken("the token claims to last longer than Tephra issues them for")
    public_key = public_key_of(identity)
    if public_key is None or not verify(public_key, signature, _statement(identity, expires)):
        raise BadToken("the token is not signed by a known identity")
    return identity, expires


def _statement(identity: str, expires: int) -> bytes:
    return PURPOSE + f"{identity}\n{expires}".encode()
