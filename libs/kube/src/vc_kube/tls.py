"""TLS to the apiserver that resumes sessions, so that a new connection skips the full handshake.

Tephra speaks HTTP/1.1, one request per connection at a time, so a loaded service opens many
connections (client.MAX_CONNECTIONS); client-go multiplexes HTTP/2 streams over one. A full
handshake costs the apiserver a signature with its certificate's key and the client a certificate
chain check; resuming with the session ticket an earlier connection received costs neither. The
server's identity was checked on the connection that received the ticket, and a ticket is only
good with the server that issued it, so resumption keeps what verification gave.
"""

from __future__ import annotations

import ssl
from typing import Any

from kubernetes_asyncio import client as k8s_client
from prometheus_client import Counter

TLS_HANDSHAKES = Counter(
    "tephra_kube_tls_handshakes_total",
    "TLS handshakes with the kube-apiserver, by whether an earlier connection's session was resumed",
    ["resumed"],
)
_handshakes = {True: TLS_HANDSHAKES.labels("true"), False: TLS_HANDSHAKES.labels("false")}
# Reads of a connection looked at for a ticket: one comes with the first answers or not at all (a
# server that issues none is not asked on every read for as long as the connection lives).
_TICKET_READS = 8


class _ResumingSSLObject(ssl.SSLObject):
    """Counts its handshake, and hands the first session ticket it receives to its context. (TLS 1.3
    sends tickets after the handshake, with the connection's first answers: hence on read.)"""

    _reads_checked = 0

    def do_handshake(self) -> None:
        super().do_handshake()  # raises SSLWantReadError until the handshake is complete
        _handshakes[self.session_reused].inc()

    def read(self, len: int = 1024, buffer: Any = None) -> Any:
        data = super().read(len, buffer)
        if self._reads_checked < _TICKET_READS:
            self._reads_checked += 1
            session = self.session
            if session is not None and session.has_ticket:
                context = self.context
                if isinstance(context, ResumingContext):
                    context.remember(self.server_hostname, session)
                self._reads_checked = _TICKET_READS
        return data


class ResumingContext(ssl.SSLContext):
    """A client context that offers each new connection the newest session with a ticket that an
    earlier connection to the same server name received."""

    sslobject_class = _ResumingSSLObject

    def __new__(cls, protocol: int = ssl.PROTOCOL_TLS_CLIENT) -> ResumingContext:
        return super().__new__(cls, protocol)

    def __init__(self, protocol: int = ssl.PROTOCOL_TLS_CLIENT) -> None:
        super().__init__()
        self._sessions: dict[str | None, ssl.SSLSession] = {}

    def remember(self, server_hostname: str | None, session: ssl.SSLSession) -> None:
        self._sessions[server_hostname] = session

    def wrap_bio(  # type: ignore[override]  # the same parameters; typeshed's stub differs by version
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        if session is None and not server_side:
            session = self._sessions.get(server_hostname)
        return super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)


def client_context(cfg: k8s_client.Configuration) -> ResumingContext:
    """kubernetes-asyncio's TLS set-up for a configuration (its CA, else the system's; its client
    certificate; its verification switches), in a context that resumes sessions."""
    # kubernetes-asyncio starts from create_default_context: its verification flags (Python 3.13 adds
    # strict X.509 and partial chains there) and its SSLKEYLOGFILE.
    reference = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    context = ResumingContext()
    context.verify_flags = reference.verify_flags
    if reference.keylog_filename:
        context.keylog_filename = reference.keylog_filename
    if cfg.ssl_ca_cert:
        context.load_verify_locations(cafile=cfg.ssl_ca_cert)
    else:
        context.load_default_certs()
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
    if not cfg.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if getattr(cfg, "disable_strict_ssl_verification", False):
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context
