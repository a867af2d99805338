"""`vcctl up` plans vc-dashboard as one more child: on --dashboard-port, else on 8090 when it is free
(a URL that stays the same between runs), else on any free port; its URL is printed before `ready`."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import pytest

from vc_bus.server import NatsServer
from vc_cli.up import DASHBOARD_PORT, Child, _announce, plan_children


def arguments(**overrides: object) -> argparse.Namespace:
    fields: dict[str, object] = {
        "backend": "nats",
        "kubeconfig": None,
        "scheduler_conf": None,
        "scheduler_replicas": 1,
        "nodes": 2,
        "node_cpu": "32",
        "node_memory": "256Gi",
        "node_gpu": "8",
        "node_pods": "110",
        "default_duration": None,
        "dashboard_port": None,
    }
    fields.update(overrides)
    return argparse.Namespace(**fields)


def dashboard(children: list[Child]) -> Child:
    (found,) = [c for c in children if c.url]
    return found


def test_the_dashboard_is_planned_with_its_port_and_url() -> None:
    child = dashboard(plan_children(arguments(dashboard_port=18090), "nats://127.0.0.1:4222"))
    assert child.name == "vc-dashboard" and Path(child.argv[0]).name == "vc-dashboard"
    assert child.argv[child.argv.index("--http-port") + 1] == "18090"
    assert child.url == "http://127.0.0.1:18090/"
    assert child.health_port != 18090  # its probes and /metrics are on their own port


def test_the_default_port_when_free_else_any_free_port() -> None:
    try:
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", DASHBOARD_PORT))
            holder.listen()
            moved = dashboard(plan_children(arguments(), "nats://127.0.0.1:4222"))
            assert moved.url != f"http://127.0.0.1:{DASHBOARD_PORT}/"
    except OSError:
        pytest.skip(
            f"port {DASHBOARD_PORT} is in use on this machine already; the fallback is tested by the first case"
        )
    again = dashboard(plan_children(arguments(), "nats://127.0.0.1:4222"))
    assert again.url == f"http://127.0.0.1:{DASHBOARD_PORT}/"


def test_the_url_is_printed_right_before_ready(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    children = plan_children(arguments(dashboard_port=18091), "nats://127.0.0.1:4222")
    _announce(NatsServer(tmp_path / "nats"), children, tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == ["dashboard: http://127.0.0.1:18091/", "ready"]
    assert sum(line.startswith("dashboard:") for line in lines) == 1
