"""nats-server configuration for a closed bus: one NKey user per identity with its permissions, and
TLS for every client. Pure: text in, text out.

Every value is written as a JSON string: in nats-server's configuration an unquoted `$JS.API.>`
would be read as a variable reference.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from vc_security.identities import Permissions

TLS_HANDSHAKE_TIMEOUT_S = 2


@dataclass(frozen=True, slots=True)
class NatsUser:
    identity: str
    public_key: str
    permissions: Permissions


def _list(items: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def authorization_block(users: Iterable[NatsUser]) -> str:
    """`authorization { users = [...] }`: only these NKeys may connect, each to its subjects only."""
    lines = ["authorization {", "  users = ["]
    for user in sorted(users, key=lambda u: u.identity):
        p = user.permissions
        lines += [
            f"    # {user.identity}",
            "    {",
            f"      nkey: {json.dumps(user.public_key)}",
            "      permissions: {",
            f"        publish: {{ allow: {_list(p.publish)} }}",
            f"        subscribe: {{ allow: {_list(p.subscribe)} }}",
        ]
        if p.allow_responses:
            lines.append("        allow_responses: true")
        lines += ["      }", "    }"]
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def tls_block(cert_file: str, key_file: str) -> str:
    """Clients must speak TLS (the server presents `cert_file`; clients are not asked for certificates:
    they prove who they are with their NKey)."""
    return (
        "tls {\n"
        f"  cert_file: {json.dumps(cert_file)}\n"
        f"  key_file: {json.dumps(key_file)}\n"
        f"  timeout: {TLS_HANDSHAKE_TIMEOUT_S}\n"
        "}\n"
    )
