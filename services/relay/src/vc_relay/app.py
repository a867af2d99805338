"""vc-kube-relay: the one process that mirrors the apiserver into the NATS cache (`--backend kube`).

Run exactly one per cluster (two are harmless, only wasteful: both write the same values). Ready once
every kind has been listed and mirrored. The mirroring itself is vc_kube.relay; this is its wiring.
"""

from __future__ import annotations

from collections.abc import Sequence

from vc_kube.client import KubeClient
from vc_kube.relay import Relay
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings


class RelayApp:
    name = "kube-relay"

    def __init__(self, settings: RuntimeSettings) -> None:
        self.settings = settings

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        kube = await ctx.resources.enter_async_context(
            await KubeClient.connect(self.settings.kubeconfig, agent="vc-kube-relay")
        )
        relay = Relay(kube, ctx.nc, replicas=self.settings.nats_replicas)
        ctx.probes.require("relay-synced")

        async def synced(_: object) -> None:
            await relay.wait_synced()
            ctx.probes.set("relay-synced")

        return [FnWorker("relay", relay.run), FnWorker("relay-synced", synced)]
