"""`vcctl up` closes its bus and `vcctl user create` opens it to a tenant, as docs/tenancy.md says:
vcctl finds the admin's credentials by itself, a tenant works in its namespaces only, a deleted
tenant is shut out at once (the running nats-server reloads), and strangers never get in."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.system import BIN, SEEDS
from vc_bus.server import free_port

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture
def up(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    data, port = tmp_path / "data", free_port()
    data.mkdir()
    with (data / "up.log").open("a") as log:
        proc = subprocess.Popen(
            [str(BIN / "vcctl"), "up", "--data", str(data), "--nats-port", str(port), "--nodes", "2"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip() == "ready":
                break
        else:
            raise AssertionError(f"vcctl up exited {proc.wait()}: {(data / 'up.log').read_text()[-2000:]}")
        yield port, data
    finally:
        proc.terminate()
        proc.wait(60)


def vcctl(port: int, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VC_")}
    return subprocess.run(
        [str(BIN / "vcctl"), "--server", f"nats://127.0.0.1:{port}", *args],
        capture_output=True,
        text=True,
        env={**clean, **env},
        cwd=cwd,
        timeout=60,
    )


def test_the_admin_is_found_tenants_are_scoped_and_strangers_stay_out(up: tuple[int, Path], tmp_path: Path) -> None:
    port, data = up
    auth = data / "auth"
    assert stat.S_IMODE(auth.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in auth.iterdir())
    # Only the identities the nats backend runs: no kube relay (it may read and write every kind).
    assert (auth / "scheduler.creds").exists() and not (auth / "kube-relay.creds").exists()
    # From anywhere on this machine vcctl finds the admin of the `vcctl up` on that port.
    assert "default" in vcctl(port, "queue", "list", cwd=tmp_path).stdout
    # A stranger (no credentials found: VC_DATA points at nothing) is refused by the server.
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = vcctl(port, "queue", "list", cwd=tmp_path, VC_DATA=str(empty), VC_NATS__CA=str(auth / "ca.pem"))
    assert refused.returncode == 1 and "refused an anonymous client" in refused.stderr

    created = vcctl(
        port,
        "user",
        "create",
        "alice",
        "--namespaces",
        "team-a",
        "--data",
        str(data),
        "-o",
        str(tmp_path / "alice.creds"),
        cwd=tmp_path,
    )
    assert created.returncode == 0, created.stderr
    assert stat.S_IMODE((tmp_path / "alice.creds").stat().st_mode) == 0o600
    alice = ("--creds", str(tmp_path / "alice.creds"))
    job = str(SEEDS / "tensorflow-benchmark.yaml")
    ran = vcctl(port, *alice, "job", "run", "-f", job, "-n", "team-a", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    other = vcctl(port, *alice, "job", "run", "-f", job, "-n", "team-b", cwd=tmp_path)
    assert other.returncode == 1 and "alice may not create a Job in namespace 'team-b'" in other.stderr
    assert "team-a" in vcctl(port, "user", "list", "--data", str(data), cwd=tmp_path).stdout

    assert vcctl(port, "user", "delete", "alice", "--data", str(data), cwd=tmp_path).returncode == 0
    gone = vcctl(port, *alice, "job", "list", "-n", "team-a", cwd=tmp_path)
    assert gone.returncode == 1 and "refused identity 'alice'" in gone.stderr
