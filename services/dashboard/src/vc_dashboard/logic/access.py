"""Who is looking, what they may see, and which Host names the dashboard answers to. Pure.

The dashboard's people are vcctl's (`vcctl user create`, identities.json): the admin reads every
namespace, a tenant its own, as on NATS. Cluster-scoped pages (queues, nodes) are everyone's, as NATS
lets every identity read Queues and Nodes whole; jobs and their pods are shown only in namespaces the
viewer reads.

A browser sends the Host it thinks it is talking to. A page on another site that re-points its own
name at 127.0.0.1 (DNS rebinding) reaches the dashboard with that foreign name, so only the names
the dashboard is configured to serve are answered (by default the address it listens on and
localhost, by name or loopback address, as `kubectl port-forward` reaches it); the others get 421
Misdirected Request.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

# localhost and the loopback addresses: a rebinding page's requests carry its own name, never these.
LOCAL_NAMES: Final = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True, slots=True)
class Viewer:
    identity: str
    namespaces: frozenset[str] | None  # None: every namespace (the admin)

    def reads(self, namespace: str | None) -> bool:
        return self.namespaces is None or (namespace or "default") in self.namespaces


def allowed_hosts(listen_host: str, configured: Iterable[str] = ()) -> frozenset[str]:
    """The configured names, else the listen address and localhost (lower case, without a port)."""
    names = {host_name(name) for name in configured if name}
    return frozenset(names or {host_name(listen_host), *LOCAL_NAMES})


def host_name(host: str) -> str:
    """`Host` without its port: `example.com:8090` -> `example.com`, `[::1]:8090` -> `::1`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    name, _, port = host.rpartition(":")
    return name if name and port.isdigit() and ":" not in name else host


def host_allowed(header: str | None, allowed: frozenset[str]) -> bool:
    return bool(header) and host_name(header or "") in allowed
