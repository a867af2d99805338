"""The identities admission answers to: each person's role and namespaces (`identities.json`). Pure.

    {"identities": {"admin": {"role": "admin"},
                    "alice": {"role": "tenant", "namespaces": ["team-a"], "publicKey": "U..."}}}

Services are not in it: they write directly, never through admission. The NATS server decides who
may publish on which `vc.rpc.admission.write.<identity>` subject; this file decides what that
identity may then do. Bounded: a file this large or a list this long is refused, not truncated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

import msgspec

from vc_security.identities import ADMIN, SERVICES, check_identity_name

PersonRole = Literal["admin", "tenant"]
MAX_IDENTITIES: Final = 10_000
MAX_NAMESPACES: Final = 256
MAX_REGISTRY_BYTES: Final = 8 * 1024 * 1024


class BadRegistry(ValueError):
    pass


class _Entry(msgspec.Struct, rename="camel", omit_defaults=True, forbid_unknown_fields=True):
    role: PersonRole
    namespaces: list[str] = msgspec.field(default_factory=list)
    public_key: str | None = None


class _File(msgspec.Struct, omit_defaults=True):
    identities: dict[str, _Entry] = msgspec.field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Person:
    identity: str
    role: PersonRole
    namespaces: frozenset[str] = frozenset()
    public_key: str | None = None


BUILT_IN_ADMIN: Final = Person(ADMIN, "admin")


def check_tenant(name: str, namespaces: list[str]) -> None:
    check_identity_name(name)
    if name == ADMIN or name in SERVICES:
        raise ValueError(f"identity {name!r} is reserved (admin and the services' names)")
    if not namespaces:
        raise ValueError("a tenant needs at least one namespace")
    if len(namespaces) > MAX_NAMESPACES:
        raise ValueError(f"{len(namespaces)} namespaces; at most {MAX_NAMESPACES}")
    for namespace in namespaces:
        try:
            check_identity_name(namespace)  # namespaces are DNS labels too
        except ValueError:
            raise ValueError(
                f"namespace {namespace!r} must be a lowercase DNS label of at most 63 characters"
            ) from None


def decode_registry(data: bytes, *, source: str) -> dict[str, Person]:
    if len(data) > MAX_REGISTRY_BYTES:
        raise BadRegistry(f"{source}: {len(data)} bytes; at most {MAX_REGISTRY_BYTES}")
    try:
        raw = msgspec.json.decode(data, type=_File)
    except msgspec.DecodeError as exc:
        raise BadRegistry(f"{source}: {exc}") from None
    if len(raw.identities) > MAX_IDENTITIES:
        raise BadRegistry(f"{source}: {len(raw.identities)} identities; at most {MAX_IDENTITIES}")
    people: dict[str, Person] = {}
    for name, entry in raw.identities.items():
        try:
            if entry.role == "tenant":
                check_tenant(name, entry.namespaces)
            else:
                check_identity_name(name)
        except ValueError as exc:
            raise BadRegistry(f"{source}: identities.{name}: {exc}") from None
        people[name] = Person(name, entry.role, frozenset(entry.namespaces), entry.public_key)
    return people


def encode_registry(people: Mapping[str, Person]) -> bytes:
    entries = {
        name: _Entry(role=p.role, namespaces=sorted(p.namespaces), public_key=p.public_key)
        for name, p in sorted(people.items())
    }
    return msgspec.json.format(msgspec.json.encode(_File(entries))) + b"\n"
