"""`vcctl up --metrics-port-base N`: each child's health/metrics port is fixed by its place in
METRICS_PORT_ORDER (schedulers after), whatever else the flags start; clashes are refused before
anything starts; without the flag, any free ports."""

from __future__ import annotations

import argparse
from collections import deque

import pytest

from vc_bus import server
from vc_bus.server import free_port, port_in_use
from vc_cli.errors import CliError
from vc_cli.main import build_parser
from vc_cli.up import METRICS_PORT_ORDER, check_arguments, check_ports_free, metrics_port, plan_children

NATS = "nats://127.0.0.1:4222"


def up_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["up", *argv])


def ports(args: argparse.Namespace) -> dict[str, int]:
    return {c.name: c.health_port for c in plan_children(args, NATS)}


def test_every_child_gets_its_place_and_schedulers_come_last() -> None:
    planned = ports(up_args("--metrics-port-base", "19000", "--scheduler-replicas", "2"))
    assert planned["admission"] == 19000
    assert planned["job-controller"] == 19000 + METRICS_PORT_ORDER.index("job-controller")
    assert planned["scheduler-0"] == 19000 + len(METRICS_PORT_ORDER)
    assert planned["scheduler-1"] == 19000 + len(METRICS_PORT_ORDER) + 1
    assert len(set(planned.values())) == len(planned)  # no two children share a port
    assert {name: metrics_port(19000, name) for name in planned} == planned


def test_a_child_that_is_not_started_moves_no_other_port() -> None:
    with_nodes = ports(up_args("--metrics-port-base", "19000"))
    without = ports(up_args("--metrics-port-base", "19000", "--nodes", "0"))
    assert "node-sim" in with_nodes and "node-sim" not in without
    assert {k: v for k, v in with_nodes.items() if k != "node-sim"} == without


def test_without_a_base_the_ports_are_any_free_ones() -> None:
    planned = ports(up_args())
    assert len(set(planned.values())) == len(planned) and all(p > 0 for p in planned.values())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--metrics-port-base", "0"], "--metrics-port-base must be between 1 and", id="zero"),
        pytest.param(["--metrics-port-base", "65530"], "--metrics-port-base must be between 1 and", id="past-65535"),
        pytest.param(["--metrics-port-base", "4220"], "--nats-port 4222 is podgroup-controller's", id="nats-clash"),
        pytest.param(
            ["--metrics-port-base", "9000", "--dashboard-port", "9001"], "--dashboard-port 9001", id="dashboard-clash"
        ),
    ],
)
def test_clashing_or_impossible_bases_are_refused_before_anything_starts(argv: list[str], message: str) -> None:
    with pytest.raises(CliError) as refused:
        check_arguments(up_args(*argv))
    assert refused.value.code == 2 and message in str(refused.value)


def test_without_a_base_no_child_gets_a_port_given_to_another_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ports drawn at random for the children leave out --nats-port and --dashboard-port."""
    args = up_args("--nats-port", "0", "--dashboard-port", "0")
    children = len(plan_children(args, NATS))
    # Exactly as many candidates as the children and the two flags: a child given a flag's port would
    # leave another child without one. (A window of free ports: other tests hold ports meanwhile.)
    base = _free_window(children + 2)
    monkeypatch.setattr(server, "_LISTEN_PORTS", range(base, base + children + 2))
    monkeypatch.setattr(server, "_recent", deque(maxlen=64))
    args = up_args("--nats-port", str(base), "--dashboard-port", str(base + 1))
    check_ports_free(args)
    assert set(ports(args).values()) == set(range(base + 2, base + children + 2))


def _free_window(size: int, tries: int = 200) -> int:
    """The first port of `size` consecutive ports none of which is in use now."""
    for _ in range(tries):
        base = free_port()
        if base + size <= 65_536 and not any(port_in_use(port, reuse=False) for port in range(base, base + size)):
            return base
    raise AssertionError(f"no {size} consecutive free ports found in {tries} tries")
