"""free_port: ports a server can bind, never from the range outgoing connections draw their source ports from."""

from __future__ import annotations

import socket
from collections import deque
from pathlib import Path

import pytest

from vc_bus import server
from vc_bus.server import free_port, port_in_use


def ephemeral() -> range:
    """This machine's ip_local_port_range (Linux's default where it cannot be read)."""
    try:
        low, high = (int(bound) for bound in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def test_ports_are_bindable_distinct_and_outside_the_ephemeral_range() -> None:
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)  # none handed out twice before it is bound
    assert not any(port in ephemeral() for port in ports)
    for port in ports[:20]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_something_listens_on_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    first = free_port()
    with socket.socket() as held:
        held.bind(("127.0.0.1", first))
        held.listen()
        assert port_in_use(first)
        # Only two candidates: the held one and the next; the next is the answer, once.
        monkeypatch.setattr(server, "_LISTEN_PORTS", range(first, first + 2))
        monkeypatch.setattr(server, "_recent", deque(maxlen=8))
        if port_in_use(first + 1, reuse=False):
            pytest.skip(f"port {first + 1} is busy on this machine")
        assert free_port() == first + 1
        with pytest.raises(OSError, match="no free port"):
            free_port()  # the held one is in use, the other was just handed out
