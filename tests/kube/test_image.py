"""deploy/docker: one image, one entry point per service. Static checks run everywhere; building the
image needs a Docker engine, which this project's machines do not have, so that test says so and skips."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "docker" / "Dockerfile"


def console_scripts() -> set[str]:
    scripts: set[str] = set()
    for pyproject in ROOT.glob("*/*/pyproject.toml"):
        scripts |= set(tomllib.loads(pyproject.read_text()).get("project", {}).get("scripts", {}))
    return scripts


def test_every_entry_point_the_image_and_manifests_name_is_a_console_script() -> None:
    scripts = console_scripts()
    listed = set()
    for line in DOCKERFILE.read_text().splitlines():  # the header lists the image's entry points
        if line.startswith("#   vc"):
            listed |= set(line[1:].split())
    assert listed and listed <= scripts, listed - scripts
    for path in (ROOT / "deploy" / "k8s" / "base" / "services.yaml",):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == "Deployment":
                (container,) = doc["spec"]["template"]["spec"]["containers"]
                assert container["command"][0] in scripts and container["command"][0] in listed
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name, service in compose["services"].items():
        arg = (service.get("build") or {}).get("args", {}).get("SERVICE")
        if arg:  # the image's default command is vc-$SERVICE
            assert f"vc-{arg}" in scripts, name


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_build_context() -> None:
    patterns = {
        line.strip().rstrip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    # .kube holds the test apiserver's keys and an admin token; .venv is this machine's environment.
    assert {".kube", ".venv", ".data", ".tools", ".git"} <= patterns
    assert not any(p.startswith("!") for p in patterns)  # nothing re-included
    assert "**/__pycache__" in patterns


def test_the_image_builds() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no Docker engine on this machine (no `docker` command): the image build is not tested here")
    if subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode != 0:
        pytest.skip("`docker info` fails: no Docker engine reachable, the image build is not tested here")
    done = subprocess.run(
        [docker, "build", "-f", str(DOCKERFILE), "-t", "tephra:test", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    listing = subprocess.run(
        [docker, "run", "--rm", "--entrypoint", "ls", "tephra:test", "-a", "/src"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ".kube" not in listing.stdout.split() and ".venv" in listing.stdout.split()  # the image's own venv
