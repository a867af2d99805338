"""What a KV bucket holds, read the way the services read it (a watch up to SYNCED), not with nats-py's
`keys()`, which may answer "no keys" for keys written a moment before under load."""

from __future__ import annotations

from nats.aio.client import Client

from vc_bus.kvwatch import watch_bucket
from vc_core.store import WatchOp


async def live_keys(nc: Client, bucket: str) -> list[str]:
    """The keys of `bucket` holding a value now, sorted."""
    keys: list[str] = []
    async for entry in watch_bucket(nc.jetstream(), bucket):
        if entry.op is WatchOp.SYNCED:
            return sorted(keys)
        if entry.op is WatchOp.PUT:
            keys.append(entry.key)
    raise AssertionError("the watch ended before it was synced")
