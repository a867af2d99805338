"""Install Tephra's CRDs (deploy/k8s/crds, generated from proto/) into an apiserver, if missing or stale.

Used by `make kube-up`, by `vcctl up --backend kube` and by the kube tests. Creates each CRD, or
replaces its spec when it differs, then waits until every one is Established (a CR write before that
is a 404).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import structlog
import yaml

from vc_kube.client import KubeApiError, KubeClient

log = structlog.get_logger(__name__)

CRD_KIND = "CustomResourceDefinition"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
DEFAULT_DIR = Path(__file__).resolve().parents[4] / "deploy" / "k8s" / "crds"


def load_crds(directory: Path = DEFAULT_DIR) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.yaml")):
        # Only the CRDs: the folder also holds the kustomization that lists them for `kubectl apply -k`.
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == CRD_KIND)
    return docs


async def ensure_crds(kube: KubeClient, directory: Path = DEFAULT_DIR, *, timeout_s: float = 60.0) -> list[str]:
    """Create or update every CRD in `directory`; return their names once all are Established."""
    names = []
    for crd in load_crds(directory):
        name = crd["metadata"]["name"]
        names.append(name)
        try:
            await kube.request("POST", CRD_PATH, body=crd)
            log.info("crd.created", name=name)
        except KubeApiError as exc:
            if exc.status != 409:
                raise
            current = await kube.request("GET", f"{CRD_PATH}/{name}")
            if current.get("spec", {}).get("versions") != crd["spec"]["versions"] or _drifted(current, crd):
                body = {
                    **crd,
                    "metadata": {**crd["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
                }
                await kube.request("PUT", f"{CRD_PATH}/{name}", body=body)
                log.info("crd.updated", name=name)
    deadline = asyncio.get_running_loop().time() + timeout_s
    pending = list(names)
    while pending:
        pending = [n for n in pending if not _established(await kube.request("GET", f"{CRD_PATH}/{n}"))]
        if pending and asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"CRDs not Established after {timeout_s}s: {pending}")
        if pending:
            await asyncio.sleep(0.1)
    return names


def _drifted(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    # The apiserver adds defaults inside spec (conversion, preserveUnknownFields); compare what we own.
    return any(current["spec"].get(k) != wanted["spec"].get(k) for k in ("group", "names", "scope"))


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


async def _main(kubeconfig: str | None, directory: Path) -> None:
    async with await KubeClient.connect(kubeconfig) as kube:
        names = await ensure_crds(kube, directory)
    print(f"CRDs established: {', '.join(names)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m vc_kube.crds", description=__doc__)
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    asyncio.run(_main(args.kubeconfig, args.dir))


if __name__ == "__main__":
    main()
