"""`vcctl up` makes only the identities its backend runs: no credentials nothing uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from vc_cli.up import secure_bus


def test_the_nats_backend_makes_no_kube_relay_identity(tmp_path: Path) -> None:
    auth = secure_bus(tmp_path, "nats")
    assert not auth.creds_path("kube-relay").exists()
    assert auth.creds_path("scheduler").exists() and auth.creds_path("admin").exists()
    assert "# kube-relay" not in auth.server_conf_path.read_text()


@pytest.mark.parametrize("first", ["nats", "kube"])
def test_the_kube_backend_admits_its_relay(tmp_path: Path, first: str) -> None:
    secure_bus(tmp_path, first)  # type: ignore[arg-type]
    auth = secure_bus(tmp_path, "kube")
    assert auth.creds_path("kube-relay").exists()
    relay = auth.credentials("kube-relay").key.public_key
    assert relay in auth.server_conf_path.read_text()
    # Back on nats, a relay file left by a kube run is not admitted.
    secure_bus(tmp_path, "nats")
    assert relay not in auth.server_conf_path.read_text()
