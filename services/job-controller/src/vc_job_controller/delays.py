"""Delayed policy actions kept in a KV bucket, so a controller restart (or a new owner) still fires them.

Volcano keeps them in memory and forgets them on restart; here each is stored under
`<namespace>.<job>.<delay key>` until it fires or is cancelled. Its `due_at` is absolute, so a
restored timer fires when it was meant to (or at once, if that moment has passed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
from nats.aio.client import Client
from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.kv import KeyValue

from vc_bus.buckets import open_bucket
from vc_bus.decoding import decode_or_none, report_undecodable
from vc_bus.kvwatch import watch_bucket
from vc_core.store import WatchOp
from vc_core.times import parse_rfc3339
from vc_job_controller.logic.view import DelayedAction
from vc_proto import subjects
from vc_proto.vocabulary import Action

BUCKET = "vc-job-delays"
JOB_LEVEL = "_"  # key token for a job-level delay (its delay key is ""); no pod is named "_"
_decoder = msgspec.json.Decoder(DelayedAction)


def kv_key(namespace: str, job: str, delay_key: str) -> str:
    return f"{namespace}.{subjects.escape_token(job)}.{subjects.escape_token(delay_key) or JOB_LEVEL}"


class DelayStore:
    def __init__(self, nc: Client, *, replicas: int = 1) -> None:
        self._nc = nc
        self._replicas = replicas
        self._kv: KeyValue | None = None

    async def _bucket(self) -> KeyValue:
        if self._kv is None:
            self._kv = await open_bucket(self._nc.jetstream(), BUCKET, replicas=self._replicas)
        return self._kv

    async def put(self, namespace: str, job: str, delayed: DelayedAction) -> None:
        await (await self._bucket()).put(kv_key(namespace, job, delayed.key), msgspec.json.encode(delayed))

    async def delete(self, namespace: str, job: str, delay_key: str) -> None:
        try:
            await (await self._bucket()).delete(kv_key(namespace, job, delay_key))
        except (KeyNotFoundError, KeyDeletedError):
            pass

    async def load(self) -> AsyncIterator[tuple[str, str, DelayedAction]]:
        """Every stored delay as (namespace, job, action), read once up to now; bad entries are skipped."""
        await self._bucket()
        # Raw KV, not an Informer: delayed actions are not stored objects, and are read once at start-up.
        async for entry in watch_bucket(self._nc.jetstream(), BUCKET):
            if entry.op is WatchOp.SYNCED:
                return
            if entry.op is not WatchOp.PUT:
                continue
            where = {"key": entry.key, "revision": entry.revision}
            parts = entry.key.split(".", 2)
            if len(parts) != 3:
                report_undecodable(source=BUCKET, kind="DelayedAction", error="key is not ns.job.delay", **where)
                continue
            delayed = decode_or_none(decode_delay, entry.value, source=BUCKET, kind="DelayedAction", **where)
            if delayed is not None:
                yield parts[0], subjects.unescape_token(parts[1]), delayed


def decode_delay(data: bytes) -> DelayedAction:
    """A stored delay, checked as far as firing it needs: a known action and a readable due time."""
    delayed = _decoder.decode(data)
    if delayed.action not in Action.__members__.values():
        raise ValueError(f"unknown action {delayed.action[:64]!r}")
    if delayed.due_at:
        parse_rfc3339(delayed.due_at)  # raises ValueError
    return delayed
