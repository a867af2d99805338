"""The credentials `vcctl up` keeps in its data directory (DATA/auth, mode 0700, every file 0600).

    ca.pem, ca-key.pem              a throwaway CA (10 years)
    server-cert.pem, server-key.pem nats-server's certificate for 127.0.0.1 and localhost (1 year;
                                    made again at start when less than 30 days remain)
    <identity>.creds                one per service and `admin` (vc_security.credentials)
    identities.json                 admin and the tenants: role, namespaces, public key (registry.py)
    server-auth.conf                the nats-server `authorization` and `tls` blocks made from all that

Whatever is missing is made; nothing present is replaced (delete a file to rotate it, see
docs/tenancy.md). The server's configuration holds public keys only.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from vc_security import pki
from vc_security.credentials import ClientCredentials, load_credentials, write_private
from vc_security.identities import (
    ADMIN,
    SERVICE_GRANTS,
    Backend,
    admin_grant,
    permissions,
    services_for,
    tenant_grant,
)
from vc_security.natsconf import NatsUser, authorization_block, tls_block
from vc_security.nkey import new_user_key
from vc_security.registry import BUILT_IN_ADMIN, Person, check_tenant, decode_registry, encode_registry

CA_COMMON_NAME: Final = "tephra-nats-ca"
SERVER_NAMES: Final = ("localhost",)
CA_VALIDITY: Final = datetime.timedelta(days=3650)
SERVER_VALIDITY: Final = datetime.timedelta(days=365)
RENEW_MARGIN: Final = datetime.timedelta(days=30)


class AuthDir:
    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def ca_path(self) -> Path:
        return self.root / "ca.pem"

    @property
    def server_cert_path(self) -> Path:
        return self.root / "server-cert.pem"

    @property
    def server_key_path(self) -> Path:
        return self.root / "server-key.pem"

    @property
    def registry_path(self) -> Path:
        return self.root / "identities.json"

    @property
    def server_conf_path(self) -> Path:
        return self.root / "server-auth.conf"

    def creds_path(self, identity: str) -> Path:
        return self.root / f"{identity}.creds"

    # -- making what is missing ----------------------------------------------------------------------
    def ensure(self, backend: Backend = "nats", *, now: datetime.datetime | None = None) -> None:
        """CA, server certificate, the credentials of admin and of every service `backend` runs, the
        registry."""
        now = now or datetime.datetime.now(datetime.UTC)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.root, 0o700)
        self._ensure_certs(now)
        for identity in (*services_for(backend), ADMIN):
            if not self.creds_path(identity).exists():
                write_private(self.creds_path(identity), ClientCredentials(identity, new_user_key()).encode())
        if not self.registry_path.exists():
            write_private(self.registry_path, encode_registry({ADMIN: BUILT_IN_ADMIN}))

    def _ensure_certs(self, now: datetime.datetime) -> None:
        ca_key = self.root / "ca-key.pem"
        if not (self.ca_path.exists() and ca_key.exists()) or pki.expires_within(
            self.ca_path.read_bytes(), now, RENEW_MARGIN
        ):
            ca_pem, ca_key_pem = pki.new_ca(CA_COMMON_NAME, now, CA_VALIDITY)
            write_private(ca_key, ca_key_pem)
            write_private(self.ca_path, ca_pem)
            self.server_cert_path.unlink(missing_ok=True)  # signed by the old CA
        cert = self.server_cert_path
        if (
            not cert.exists()
            or not self.server_key_path.exists()
            or pki.expires_within(cert.read_bytes(), now, RENEW_MARGIN)
        ):
            cert_pem, key_pem = pki.issue_server_cert(
                self.ca_path.read_bytes(), ca_key.read_bytes(), SERVER_NAMES, now, SERVER_VALIDITY
            )
            write_private(self.server_key_path, key_pem)
            write_private(cert, cert_pem)

    # -- reading -------------------------------------------------------------------------------------
    def credentials(self, identity: str) -> ClientCredentials:
        """The identity's credentials with the CA (what a client connects with)."""
        return load_credentials(self.creds_path(identity), ca_path=self.ca_path)

    def people(self) -> dict[str, Person]:
        if not self.registry_path.exists():
            return {ADMIN: BUILT_IN_ADMIN}
        return decode_registry(self.registry_path.read_bytes(), source=str(self.registry_path))

    def users(self, backend: Backend = "nats") -> list[NatsUser]:
        """Every identity the server admits: the services, admin and each tenant, with its permissions."""
        users = [
            NatsUser(name, self.credentials(name).key.public_key, permissions(name, SERVICE_GRANTS[name], backend))
            for name in services_for(backend)
        ]
        # `vcctl up` serves its users through admission's write API with either backend (with kube,
        # admission writes to the apiserver): the admin keeps its write subject. The cluster install
        # (vc_security.cluster) does not: there users write with their own kubeconfig.
        admin = admin_grant("nats")
        users.append(NatsUser(ADMIN, self.credentials(ADMIN).key.public_key, permissions(ADMIN, admin, backend)))
        for person in self.people().values():
            if person.role == "tenant" and person.public_key:
                grant = tenant_grant(person.identity, person.namespaces)
                users.append(NatsUser(person.identity, person.public_key, permissions(person.identity, grant, backend)))
        return users

    def server_config(self, backend: Backend = "nats", extra_users: Iterable[NatsUser] = ()) -> str:
        """The `authorization` and `tls` blocks of nats-server's configuration."""
        return authorization_block([*self.users(backend), *extra_users]) + tls_block(
            str(self.server_cert_path), str(self.server_key_path)
        )

    def write_server_config(self, backend: Backend | None = None) -> Path:
        """server-auth.conf for `backend` (default: the one it was last written for), for nats-server to
        include; the backend is kept beside it so `vcctl user create` writes the same kind again."""
        backend_file = self.root / "backend"
        if backend is None:
            recorded = backend_file.read_text().strip() if backend_file.exists() else "nats"
            backend = "kube" if recorded == "kube" else "nats"
        write_private(backend_file, backend.encode())
        write_private(self.server_conf_path, self.server_config(backend).encode())
        return self.server_conf_path

    # -- tenants -------------------------------------------------------------------------------------
    def add_tenant(self, name: str, namespaces: list[str]) -> ClientCredentials:
        """A new tenant identity: its credentials (with the CA, to hand to the person) and registry entry.
        ValueError when the name is taken or invalid."""
        check_tenant(name, namespaces)
        people = self.people()
        if name in people:
            raise ValueError(f"identity {name!r} exists (`vcctl user delete {name}` first to replace it)")
        key = new_user_key()
        people[name] = Person(name, "tenant", frozenset(namespaces), key.public_key)
        write_private(self.registry_path, encode_registry(people))
        return ClientCredentials(name, key, self.ca_path.read_bytes(), frozenset(namespaces))

    def remove_tenant(self, name: str) -> None:
        people = self.people()
        if people.get(name) is None or people[name].role != "tenant":
            raise ValueError(f"no tenant identity {name!r}")
        del people[name]
        write_private(self.registry_path, encode_registry(people))
