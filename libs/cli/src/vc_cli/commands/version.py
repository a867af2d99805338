"""vcctl version: this vcctl's version, and the server's when it can be reached.

    Client Version: 0.1.0
    API Versions: batch.volcano.sh/v1alpha1, bus.volcano.sh/v1alpha1, scheduling.volcano.sh/v1beta1
    Python Version: 3.11.2
    Python OS/Arch: linux/x86_64
    Server Version: 0.1.0
    NATS Server Version: 2.15.1 (JetStream)

The server's Tephra version is known for a `vcctl up` on this machine (it notes it beside its data
directory, running.py); NATS' version comes from the server itself, and with `--backend kube` the
apiserver's from its /version. An unreachable server is said on stderr and is not an error (exit 0),
so `vcctl version` always tells the client's version; `--client` does not try the server at all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import sys
from importlib import metadata
from typing import Any

import yaml

from vc_cli import running
from vc_cli.client import Endpoint, anonymous_ca, open_nats, resolve_credentials
from vc_cli.errors import CliError
from vc_proto.kinds import KINDS

SERVER_TIMEOUT_S = 10.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    version = sub.add_parser("version", help="print the client's version, and the server's when it is reachable")
    version.add_argument("--client", action="store_true", help="the client's version only (no connection)")
    version.add_argument("-o", "--output", choices=["json", "yaml"])
    version.set_defaults(standalone=run)


def client_version() -> str:
    try:
        return metadata.version("vc-cli")
    except metadata.PackageNotFoundError:  # run from a source tree without being installed
        return "unknown"


def client_info() -> dict[str, Any]:
    return {
        "clientVersion": client_version(),
        "apiVersions": sorted({k.api_version for k in KINDS.values() if k.group.endswith("volcano.sh")}),
        "pythonVersion": platform.python_version(),
        "platform": f"{sys.platform}/{platform.machine()}",
    }


async def server_info(endpoint: Endpoint) -> dict[str, Any]:
    """What the server tells about itself; raises CliError when it cannot be reached."""
    if endpoint.backend == "kube":
        return await _kube_info(endpoint)
    credentials = resolve_credentials(endpoint)
    nc = await open_nats(
        endpoint.server, credentials, ca_pem=None if credentials else anonymous_ca(endpoint), name="vcctl-version"
    )
    try:
        info: dict[str, Any] = {
            "serverVersion": running.version_for(endpoint.server) or "unknown",
            "natsServerVersion": nats_version(nc.connected_server_version),
        }
        info["jetStream"] = bool(getattr(nc, "_server_info", {}).get("jetstream"))
        return info
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


def nats_version(version: Any) -> str:
    """`2.15.1` (nats-py's ServerVersion prints itself as `<nats server v2.15.1>`)."""
    try:
        plain = f"{version.major}.{version.minor}.{version.patch}"
    except (AttributeError, ValueError, TypeError):
        return str(version)
    return f"{plain}-{version.dev}" if version.dev else plain


async def _kube_info(endpoint: Endpoint) -> dict[str, Any]:
    from vc_kube.client import KubeClient

    kubeconfig = endpoint.kubeconfig or os.environ.get("KUBECONFIG")
    try:
        async with await KubeClient.connect(kubeconfig) as kube:
            found = await kube.request("GET", "/version", request_timeout_s=SERVER_TIMEOUT_S)
    except Exception as exc:  # any failure to reach the apiserver: its reason, once
        raise CliError(f"the apiserver ({kubeconfig or 'default kubeconfig'}) did not answer: {exc}") from exc
    return {
        "serverVersion": "unknown (Tephra's services run in the cluster)",
        "kubernetesVersion": str(found.get("gitVersion", "unknown")) if isinstance(found, dict) else "unknown",
    }


async def run(args: argparse.Namespace) -> int:
    info: dict[str, Any] = client_info()
    problem = None
    if not args.client:
        endpoint = Endpoint(args.server, creds=args.creds, ca=args.ca, backend=args.backend, kubeconfig=args.kubeconfig)
        try:
            async with asyncio.timeout(SERVER_TIMEOUT_S):
                info.update(await server_info(endpoint))
        except (CliError, TimeoutError) as exc:
            problem = str(exc) or f"no answer within {SERVER_TIMEOUT_S:.0f} s"
    if args.output == "json":
        print(json.dumps(info, indent=2))
    elif args.output == "yaml":
        yaml.safe_dump(info, sys.stdout, sort_keys=False)
    else:
        for line in format_info(info):
            print(line)
    if problem:
        print(f"Server Version: not reachable: {problem}", file=sys.stderr)
    return 0


def format_info(info: dict[str, Any]) -> list[str]:
    lines = [
        f"Client Version: {info['clientVersion']}",
        f"API Versions: {', '.join(info['apiVersions'])}",
        f"Python Version: {info['pythonVersion']}",
        f"Python OS/Arch: {info['platform']}",
    ]
    if "serverVersion" in info:
        lines.append(f"Server Version: {info['serverVersion']}")
    if "natsServerVersion" in info:
        lines.append(
            f"NATS Server Version: {info['natsServerVersion']}" + (" (JetStream)" if info.get("jetStream") else "")
        )
    if "kubernetesVersion" in info:
        lines.append(f"Kubernetes Version: {info['kubernetesVersion']}")
    return lines
