"""The tests' closed bus: the identities `vcctl up` makes (every service, admin), made once per session,
and the nats-server configuration that admits only them, over TLS.

Every service a test starts (a process via ServiceProcess, or in-process via run_app) connects as
its own identity with its own permissions, as under `vcctl up`, so a missing grant fails the test
that needs it. The test code itself (seeding objects, reading them back, hostile publishes) is the
one exception: the server admits an anonymous client as the `harness` identity, which may do
anything (`no_auth_user`). Only tests/security's servers, built from the production configuration
alone, refuse anonymous clients.
"""

from __future__ import annotations

import json
import os
import secrets
import ssl
import time
from dataclasses import dataclass
from pathlib import Path

from vc_bus.server import NatsServer
from vc_security.authdir import AuthDir
from vc_security.credentials import CA_ENV, ClientCredentials, write_private
from vc_security.identities import ADMIN, SERVICE_GRANTS, Backend, permissions
from vc_security.natsconf import NatsUser
from vc_security.tokens import issue_token

HARNESS = "harness"
RELAY = "kube-relay"


@dataclass
class SecureBus:
    auth: AuthDir
    harness_password: str

    def security(self, backend: Backend = "nats") -> str:
        """The production authorization and TLS, plus the harness user anonymous clients become."""
        harness = (
            f'    {{ user: "{HARNESS}", password: {json.dumps(self.harness_password)}, '
            'permissions: { publish: { allow: [">"] }, subscribe: { allow: [">"] } } }\n'
        )
        text = self.auth.server_config(backend, extra_users=self._relay(backend))
        return f"no_auth_user: {json.dumps(HARNESS)}\n" + text.replace("  users = [\n", "  users = [\n" + harness, 1)

    def _relay(self, backend: Backend) -> list[NatsUser]:
        """The kube tests run the relay against the same closed bus, which `vcctl up --backend nats` does
        not admit (nothing there uses it): the tests' bus admits it with either backend."""
        if backend == "kube":
            return []
        key = self.auth.credentials(RELAY).key.public_key
        return [NatsUser(RELAY, key, permissions(RELAY, SERVICE_GRANTS[RELAY], backend))]

    def server(self, data_dir: Path, **kwargs: object) -> NatsServer:
        return NatsServer(data_dir, security=self.security(), tls=True, **kwargs)  # type: ignore[arg-type]

    def credentials(self, identity: str) -> ClientCredentials:
        return self.auth.credentials(identity)

    def identity_args(self, binary: str) -> list[str]:
        """`--nats-creds/--nats-ca` for a service binary (`vc-X` is identity `X`); none for others."""
        identity = binary.removeprefix("vc-")
        if identity not in SERVICE_GRANTS:
            return []
        return ["--nats-creds", str(self.auth.creds_path(identity)), "--nats-ca", str(self.auth.ca_path)]

    def fork(self, root: Path) -> SecureBus:
        """A bus with identities of its own (so a test can add tenants) under the same CA and server
        certificate, which the harness already trusts."""
        auth = AuthDir(root)
        auth.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        for name in ("ca.pem", "ca-key.pem", "server-cert.pem", "server-key.pem"):
            write_private(auth.root / name, (self.auth.root / name).read_bytes())
        auth.ensure("kube")
        return SecureBus(auth, secrets.token_urlsafe(24))

    def dashboard_logins(self) -> list[str]:
        """vc-dashboard's flags for this bus's people (as `vcctl up` gives them)."""
        admin_key = self.credentials(ADMIN).key.public_key
        return ["--identities", str(self.auth.registry_path), "--admin-key", admin_key]

    def login_token(self, identity: str = ADMIN) -> str:
        """A dashboard login token for `identity`, as `vcctl user token` makes one."""
        return issue_token(identity, self.credentials(identity).key, expires=int(time.time()) + 3600)

    def admin_env(self) -> dict[str, str]:
        """What a vcctl process needs to act as the admin."""
        return {"VC_NATS__CREDS": str(self.auth.creds_path(ADMIN)), CA_ENV: str(self.auth.ca_path)}


_current: SecureBus | None = None


def open_test_bus(root: Path) -> SecureBus:
    """Make the session's identities (NKeys, CA, server certificate: milliseconds) and trust its CA as
    the system's CAs are trusted, in this process and its children: test code that connects with plain
    `nats.connect(url)` (the harness) checks the test servers' certificates against it."""
    global _current
    auth = AuthDir(root)
    auth.ensure("kube")
    _current = SecureBus(auth, secrets.token_urlsafe(24))
    os.environ[CA_ENV] = str(auth.ca_path)
    system = ssl.get_default_verify_paths()
    bundle = root / "trusted.pem"
    parts = [Path(system.cafile).read_bytes()] if system.cafile and Path(system.cafile).is_file() else []
    bundle.write_bytes(b"\n".join([*parts, auth.ca_path.read_bytes()]))
    os.environ["SSL_CERT_FILE"] = str(bundle)  # OpenSSL reads it whenever a default context is made
    return _current


def session_bus() -> SecureBus:
    if _current is None:
        raise RuntimeError("the session's test bus is made by tests/conftest.py (open_test_bus)")
    return _current


def current() -> SecureBus | None:
    return _current
