"""free_port: ports a server can bind, never from the range outgoing connections draw their source ports from."""

from __future__ import annotations

import socket
from collections import deque

import pytest

from vc_bus import server
from vc_bus.server import ephemeral_ports, free_port, listen_ports, port_in_use, reserve_ports


def test_ports_are_bindable_distinct_and_outside_the_ephemeral_range() -> None:
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)  # none handed out twice before it is bound
    assert not any(port in ephemeral_ports() for port in ports)
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


def test_a_port_reserved_for_a_given_flag_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """vcctl up reserves --nats-port and --dashboard-port before it picks its services' health ports."""
    first = free_port()
    monkeypatch.setattr(server, "_LISTEN_PORTS", range(first, first + 2))
    monkeypatch.setattr(server, "_recent", deque(maxlen=8))
    if port_in_use(first, reuse=False) or port_in_use(first + 1, reuse=False):
        pytest.skip(f"port {first} or {first + 1} is busy on this machine")
    reserve_ports(first, None)
    assert free_port() == first + 1
    with pytest.raises(OSError, match="no free port"):
        free_port()


@pytest.mark.parametrize(
    ("ephemeral", "expected"),
    [
        (range(32768, 61000), range(20000, 32768)),  # Linux's default: the side below is wider
        (range(1024, 50000), range(50000, 65536)),  # a low range: the ports above it
        (range(1024, 65536), range(20000, 65536)),  # no side left: every port from 20000
        (range(20500, 65000), range(20000, 65536)),  # neither side has 1,000: every port from 20000
    ],
)
def test_the_ports_handed_out_avoid_the_machines_ephemeral_range(ephemeral: range, expected: range) -> None:
    assert listen_ports(ephemeral) == expected
