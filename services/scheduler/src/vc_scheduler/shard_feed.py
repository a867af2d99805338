"""SHELL: the scheduler cache's watches of pods and PodGroups, over the shards its instance owns.

Pods are stored under their PodGroup's shard (vc_proto.pod_shards), and an instance owns the PodGroups
of some shards (share.Partition.shards): it is sent those shards' pods only, by one consumer filtered
on them (one `*.<shard>.>` each; `>` for all of them). A PodGroup's key names no shard, so every
PodGroup is delivered and the cache keeps those of its shards only (`wants`, from the key: the others'
are dropped before they are decoded). Of the other shards it reads what their owners write
(shard_records.py). Until the loop says which shards it covers (`cover`), neither is read.

A change of the covered shards closes each consumer and opens one over the new set:
- shards only lost (a member joined): from the revision after the last one applied, so nothing of the
  kept shards is read twice; the cache drops the lost shards' pods and PodGroups (cache.regroup);
- shards gained (a member left, or the first cover): from the start of every covered shard, each key's
  last value, as a watch's first sync reads it. The cache is unsynced meanwhile (`on_restart`): it
  shows neither the gained shards whole nor the revision they were followed to, so its loop plans
  nothing and its instance lends nothing until the read reaches the end (SYNCED).

"The cache has followed the pods stream to revision R" (the hand-over's wait, peers.Several) cannot be
read off the last delivery, since a consumer over some shards may be sent nothing past R for a long
time. It holds once the cache applied min(R, L), L the newest revision among the covered shards' keys
(one last-by-subject get per shard filter): deliveries come in revision order, so a change of the
covered shards at R or before arrives before any after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any, Final

from nats.js.errors import NotFoundError

from vc_bus.kvwatch import RawEntry, watch_bucket
from vc_proto import subjects
from vc_proto.pod_shards import SHARDS
from vc_runtime.aio import until, wait_or_stop

ALL_SHARDS: Final = frozenset(range(SHARDS))


def shard_filters(shards: frozenset[int]) -> list[str]:
    """The pods bucket's key filters for `shards`: one for the whole bucket when it is every shard."""
    return [">"] if shards == ALL_SHARDS else [subjects.pod_shard_filter(s) for s in sorted(shards)]


def every_key(_shards: frozenset[int]) -> list[str]:
    """A bucket whose keys name no shard (PodGroups): all of it, the shards told apart by their keys."""
    return [">"]


class ShardFeed:
    """Which shards the watch of one kind (pods, PodGroups) covers, and the watch itself (`entries`)."""

    def __init__(
        self,
        kind: str,
        covered: frozenset[int] | None,
        *,
        on_restart: Callable[[], None],
        resume_at: Callable[[], int],
        filters: Callable[[frozenset[int]], list[str]] = shard_filters,
    ) -> None:
        """`covered`: None until `cover` says (nothing is read meanwhile). `on_restart`: a watch opens
        from the start of the covered shards (the cache is unsynced until its SYNCED). `resume_at`: the
        last revision the cache applied, which a watch over fewer shards resumes after. `filters`: the
        bucket's key filters for a set of shards."""
        self.kind = kind
        self._filters = filters
        self.covered = covered
        self._every = covered == ALL_SHARDS
        self._on_restart = on_restart
        self._reopen = asyncio.Event()
        if covered is not None:
            self._reopen.set()
        self._stop: asyncio.Event | None = None  # ends the open watch
        self._from_start = True  # the next watch reads the covered shards from their start
        self._resume_at = resume_at

    def cover(self, shards: frozenset[int]) -> None:
        """Follow the objects of `shards` from now on (the watch reopens over them when they changed)."""
        if shards == self.covered:
            return
        if self.covered is None or shards - self.covered:
            self._from_start = True
            self._on_restart()  # (at once: from now on the cache does not hold what it covers)
        self.covered, self._every = shards, shards == ALL_SHARDS
        self._reopen.set()
        if self._stop is not None:
            self._stop.set()

    def narrowed(self) -> bool:
        """Whether the watch covers some shards only (or none yet): what it delivers must be told apart."""
        return self.covered is not None and not self._every

    def wants(self, shard: int | None) -> bool:
        """Whether an object of `shard` is one the cache follows now (a PodGroup of another instance's, or
        a pod delivered by a watch over shards since given up, is not)."""
        covered = self.covered
        return covered is None or self._every or shard is None or shard in covered

    async def entries(self, js: Any, shutdown: asyncio.Event) -> AsyncIterator[RawEntry]:
        """The covered shards' entries, the watch reopened at each change of them, until `shutdown`."""
        bucket = subjects.bucket(self.kind)
        while await wait_or_stop(self._reopen, shutdown):
            self._reopen.clear()
            covered = self.covered
            if covered is None:
                continue
            start = 0 if self._from_start else self._resume_at()
            if start == 0:
                self._on_restart()
            self._from_start = False
            stop = self._stop = asyncio.Event()
            relay = asyncio.ensure_future(shutdown.wait())
            relay.add_done_callback(partial(_set, stop))
            try:
                async for entry in until(stop, watch_bucket(js, bucket, self._filters(covered), start)):
                    yield entry
            finally:
                relay.cancel()
                self._stop = None


def _set(event: asyncio.Event, _done: object) -> None:
    event.set()


class FollowedPods:
    """The pods stream as the scheduler's hand-over of nodes reads it (peers.PodsStream), over the
    shards the cache covers."""

    def __init__(self, js: Any, cache: Any) -> None:
        """`cache`: the SchedulerCache whose pods watch is `cache.feeds["Pod"]`."""
        self._js = js
        self._cache = cache

    def cover(self, shards: frozenset[int]) -> None:
        self._cache.cover(shards)

    def synced(self) -> bool:
        return bool(self._cache.holds_covered())

    def followed_revision(self) -> int:
        return int(self._cache.followed.get("Pod", 0))

    async def last_revision(self) -> int:
        covered = self._cache.feeds["Pod"].covered
        stream = f"KV_{subjects.bucket('Pod')}"
        if covered is None or covered == ALL_SHARDS:
            return int((await self._js.stream_info(stream)).state.last_seq)
        prefix = f"$KV.{subjects.bucket('Pod')}."
        newest = await asyncio.gather(*(self._last_of(stream, prefix + f) for f in shard_filters(covered)))
        return max(newest, default=0)

    async def _last_of(self, stream: str, subject: str) -> int:
        try:
            return int((await self._js.get_last_msg(stream, subject)).seq or 0)
        except NotFoundError:
            return 0  # no pod of that shard was ever written (or every one was purged)

    async def followed(self, revision: int, timeout_s: float) -> bool:
        cache, synced = self._cache, self._cache.synced["Pod"]
        if synced.is_set() and self.followed_revision() >= revision:
            return True
        deadline = asyncio.get_running_loop().time() + timeout_s
        try:
            async with asyncio.timeout_at(deadline):
                await synced.wait()
                target = min(revision, await self.last_revision())
        except TimeoutError:
            return False
        left = deadline - asyncio.get_running_loop().time()
        return bool(await cache.followed_to("Pod", target, max(left, 0.0)))
