"""The people a test dashboard knows, as `vcctl up` and `vcctl user create` make them: the admin (by
public key) and tenants in identities.json, with login tokens signed by their keys."""

from __future__ import annotations

import time
from pathlib import Path

from vc_dashboard.login import People
from vc_security.nkey import UserKey, new_user_key
from vc_security.registry import BUILT_IN_ADMIN, Person, encode_registry
from vc_security.tokens import issue_token

TENANTS = {"alice": frozenset({"team-a"}), "bob": frozenset({"team-b"})}


class Logins:
    def __init__(self, root: Path) -> None:
        self.keys: dict[str, UserKey] = {name: new_user_key() for name in ("admin", *TENANTS)}
        self.registry = root / "identities.json"
        self.write(TENANTS)
        self.people = People(str(self.registry), self.keys["admin"].public_key)

    def write(self, tenants: dict[str, frozenset[str]]) -> None:
        people = {"admin": BUILT_IN_ADMIN} | {
            name: Person(name, "tenant", namespaces, self.keys[name].public_key) for name, namespaces in tenants.items()
        }
        self.registry.write_bytes(encode_registry(people))

    def token(self, identity: str, *, lasts: float = 3600) -> str:
        return issue_token(identity, self.keys[identity], expires=int(time.time() + lasts))
