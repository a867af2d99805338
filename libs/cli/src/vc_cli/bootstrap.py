"""vc-nats-bootstrap: the cluster install's one-shot Job that closes NATS (docs/install.md).

Reads the Secrets vc_security.cluster names in its namespace, makes what is missing (CA, nats-server's
certificate, an NKey per service and `admin`) and writes nats-auth from the identities' public keys.
Idempotent: run again, it changes nothing; delete an identity's Secret and run it again to rotate
that key. Every write is a create, or a merge patch guarded by the Secret's resourceVersion; a lost
race starts the pass over from fresh reads. RBAC: get and patch on exactly these Secrets, create in
its own namespace (tests/kube/test_rbac.py).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import sys
from typing import Any

from vc_kube.client import KubeApiError, KubeClient
from vc_security.cluster import AUTH_SECRET, SecretData, plan, secret_names

ATTEMPTS = 5
MERGE_PATCH = "application/merge-patch+json"


def _log(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, **fields}), file=sys.stderr, flush=True)


async def bootstrap(kube: KubeClient, namespace: str, *, now: datetime.datetime | None = None) -> tuple[str, ...]:
    """One pass; returns what was made anew. Raises KubeApiError on a refusal (e.g. RBAC)."""
    base = f"/api/v1/namespaces/{namespace}/secrets"
    for attempt in range(ATTEMPTS):
        current: dict[str, dict[str, Any] | None] = {}
        for name in secret_names():
            try:
                current[name] = await kube.request("GET", f"{base}/{name}")
            except KubeApiError as exc:
                if exc.status != 404:
                    raise
                current[name] = None
        wanted = plan(
            {n: (s or {}).get("data") for n, s in current.items()},
            namespace=namespace,
            backend="kube",
            now=now or datetime.datetime.now(datetime.UTC),
        )
        try:
            for name, data in wanted.data.items():
                await _write(kube, base, name, current[name], data)
        except KubeApiError as exc:
            if exc.status != 409:
                raise
            _log("nats_bootstrap.conflict", attempt=attempt)  # another run wrote first: read again
            continue
        return wanted.made
    raise RuntimeError(f"the Secrets kept changing under the bootstrap ({ATTEMPTS} attempts)")


async def _write(kube: KubeClient, base: str, name: str, current: dict[str, Any] | None, data: SecretData) -> None:
    if current is None:
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "data": data,
            "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "tephra"}},
        }
        await kube.request("POST", base, body=body)
        return
    if current.get("data") == data:
        return
    patch = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]}, "data": data}
    await kube.request("PATCH", f"{base}/{name}", body=patch, content_type=MERGE_PATCH)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vc-nats-bootstrap", description="make the Secrets of a closed NATS")
    parser.add_argument("--namespace", default=os.environ.get("POD_NAMESPACE", "tephra-system"))
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="default: in-cluster")
    args = parser.parse_args(argv)

    async def run() -> tuple[str, ...]:
        async with await KubeClient.connect(args.kubeconfig) as kube:
            return await bootstrap(kube, args.namespace)

    try:
        made = asyncio.run(run())
    except KubeApiError as exc:
        _log("nats_bootstrap.refused", status=exc.status, error=str(exc))
        return 1
    except Exception as exc:  # the Job retries (backoffLimit); say why once, plainly
        _log("nats_bootstrap.failed", error=f"{type(exc).__name__}: {exc}")
        return 1
    _log("nats_bootstrap.done", namespace=args.namespace, made=list(made), auth=AUTH_SECRET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
