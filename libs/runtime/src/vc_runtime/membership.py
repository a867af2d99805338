"""Live membership of a group of instances, with leases, epochs, rendezvous hashing and fencing.

Each instance holds a lease key `<group>.<instance>` in the `vc-leases` KV bucket and renews it with
compare-and-set every ttl/3. Its epoch is the KV revision of the lease's creation: revisions only grow,
so a re-joining instance always gets a larger epoch. Peers consider an instance alive while they keep
seeing renewals (timed on their own monotonic clock, so no wall-clock skew matters).

Keys (jobs, queues, PodGroups) belong to the live member with the highest rendezvous hash
(vc_core.ownership.rendezvous_owner): when a member joins or leaves only its share moves. A group may
assign its keys otherwise (`assign`: the scheduler deals PodGroups out by their pods' shard). Fencing:
`can_write()` is False once this instance's own lease deadline has passed on its monotonic clock. A
paused instance (SIGSTOP) that wakes after its lease lapsed therefore writes nothing; it re-joins
under a new epoch and waits a settle period, so the peers that took over its keys have seen it before
it claims any back.

Where it runs: the lease's whole protocol (joining, renewals, the watch of the peers' leases, the
member set it yields, leaving) runs in a thread of its own, on its own event loop and NATS connection
(`vc_runtime.loop_thread`). The service's loop may be blocked by a long synchronous callback, and a
scheduling cycle computes in a worker thread for seconds; neither delays a renewal past its deadline
any more (one renewal needs the GIL a few times, and gets it every switch interval), nor the view of
the peers (a peer seen late would look gone, and its keys claimed while it still writes them). The
service's side reads the state this thread publishes (plain attribute reads, atomic under the GIL) and
is woken by events set on its own loop. The fence reads the monotonic clock where it is asked, so a
lease that lapsed is never taken as valid, whichever thread is late.

One thing is not handed over to the thread: telling whether the service is alive at all. The
service's loop ticks a heartbeat, and a loop that has not ticked for LOOP_STALL_S (blocked far beyond
any callback's due, hung) no longer gets its lease renewed: peers take its keys, as they would a
paused instance's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable

import structlog
from nats.aio.client import Client
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from vc_bus.buckets import open_bucket, while_unavailable
from vc_bus.connection import connect_like
from vc_bus.kvwatch import watch_bucket
from vc_core.ownership import rendezvous_owner
from vc_core.store import WatchOp
from vc_proto import subjects
from vc_runtime.aio import sleep_or_stop
from vc_runtime.loop_thread import LoopThread

log = structlog.get_logger(__name__)
# The service's loop ticks this often (the heartbeat the lease thread checks).
LOOP_TICK_S = 0.5
# A service loop silent this long is hung, not busy: its lease is let lapse. Far above any synchronous
# stretch of a working service (a cycle's bookkeeping, a large batch of watch deliveries).
LOOP_STALL_S = 60.0
# Leaving (deleting the lease) at shutdown waits this long for NATS; then the lease simply expires.
LEAVE_TIMEOUT_S = 2.0
# The lease thread is given this long to leave and close its connection at shutdown.
STOP_TIMEOUT_S = 4.0


async def lease_bucket(nc: Client, *, replicas: int = 1) -> KeyValue:
    return await open_bucket(nc.jetstream(), subjects.LEASES_BUCKET, replicas=replicas)


class Membership:
    def __init__(
        self,
        nc: Client,
        *,
        group: str,
        instance: str,
        ttl_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        replicas: int = 1,
        assign: Callable[[str, tuple[str, ...]], str | None] = rendezvous_owner,
    ) -> None:
        """`assign`: who among the members owns a key (the same function wherever the group's keys are
        judged, so every judge agrees)."""
        self._nc = nc
        self._assign = assign
        self._replicas = replicas
        self.group = group
        self.instance = subjects.escape_token(instance)
        self.ttl_s = ttl_s
        self._clock = clock
        self._kv: KeyValue | None = None
        self._revision = 0
        self.epoch = 0
        self._deadline = 0.0
        self._last_sent = 0.0  # when the last join or renewal was sent (the lease counts from then)
        self._settled_at = float("inf")
        self._settle_announced = False
        self._seen: dict[str, float] = {}
        self.members: tuple[str, ...] = ()
        # How many changes owners have been told of (`_tell_owners`). A follower compares it with the
        # count it last acted on: a change told while it was not waiting is not lost to it (wait_changed
        # clears the event first, and a wait that times out in the moment the event is set misses it).
        self.changes = 0
        # Events of the service's loop, set from the lease thread through `_signal`.
        self._changed = asyncio.Event()
        self._ready = asyncio.Event()
        self._write_lock = asyncio.Lock()  # joins and renewals compare-and-set the same lease (lease thread)
        self._thread = LoopThread(f"membership:{group}")
        self._service_loop: asyncio.AbstractEventLoop | None = None
        self._service_thread = threading.get_ident()
        self._loop_seen = clock()  # the service loop's last heartbeat
        self._stall_logged = False

    # -- queries -----------------------------------------------------------------------------------
    def can_write(self) -> bool:
        """This instance's lease is still valid by its own monotonic clock (the write fence)."""
        return self.epoch > 0 and self._clock() < self._deadline

    def owner(self, key: str) -> str | None:
        return self._assign(key, self.members)

    def owns(self, key: str) -> bool:
        """This instance is the key's single writer right now."""
        return self.can_write() and self._clock() >= self._settled_at and self.owner(key) == self.instance

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def wait_settled(self) -> None:
        """Until this instance may claim keys: joined, lease valid and the settle period over."""
        await self._ready.wait()
        # The settle deadline and the lease expiry are times on the injected clock, not events anyone sets:
        # polling that clock is the wait (and keeps tests' fake clocks working).
        while not (self.can_write() and self._clock() >= self._settled_at):  # noqa: ASYNC110 - a clock deadline
            await asyncio.sleep(0.05)

    async def wait_changed(self) -> None:
        """Until the member set (or this instance's standing) changes next, counted from this call: a
        follower that must miss no change compares `changes` with the count it last acted on as well."""
        self._changed.clear()
        await self._changed.wait()

    # -- the worker (the service's loop) ------------------------------------------------------------
    async def run(self, shutdown: asyncio.Event) -> None:
        """Start the lease thread, tick the heartbeat it checks, and stop it (leaving) at shutdown."""
        self._service_loop = asyncio.get_running_loop()
        self._service_thread = threading.get_ident()
        self._loop_seen = self._clock()
        await self._thread.start(self._serve)
        try:
            while not self._thread.finished() and not await sleep_or_stop(shutdown, LOOP_TICK_S):
                self._loop_seen = self._clock()
        finally:
            await self._thread.stop(timeout_s=STOP_TIMEOUT_S)  # raises what failed in the thread

    def _tell_owners(self) -> None:
        """The member set, or this instance's standing, changed: count it, and wake `wait_changed`."""
        self.changes += 1
        self._signal(self._changed)

    def _signal(self, event: asyncio.Event) -> None:
        """Set an event of the service's loop, from whichever thread."""
        loop = self._service_loop
        if loop is None or threading.get_ident() == self._service_thread:
            event.set()
        else:
            with contextlib.suppress(RuntimeError):  # the service's loop has closed: nobody waits
                loop.call_soon_threadsafe(event.set)

    # -- the lease thread --------------------------------------------------------------------------
    async def _serve(self, stop: asyncio.Event) -> None:
        async with connect_like(self._nc, name=f"{self.group}:{self.instance}:lease") as nc:
            self._kv = await lease_bucket(nc, replicas=self._replicas)
            await while_unavailable(f"the {self.group} lease", self._join)  # a cluster still electing its leader
            async with asyncio.TaskGroup() as tg:
                renew = tg.create_task(self._renew_loop(), name=f"membership:{self.group}:renew")
                watch = tg.create_task(self._watch_loop(nc), name=f"membership:{self.group}:watch")
                await stop.wait()
                # Not waited for: a renewal under way with NATS gone would hold the shutdown for its
                # whole timeout, for a lease about to be deleted (or left to expire) anyway.
                renew.cancel()
                watch.cancel()
            if nc.is_connected:
                await self._leave()

    def _key(self) -> str:
        return f"{self.group}.{self.instance}"

    def _value(self, epoch: int | None = None) -> bytes:
        epoch = self.epoch if epoch is None else epoch
        value = {"instance": self.instance, "epoch": epoch, "ttl_s": self.ttl_s}
        return json.dumps(value).encode()

    async def _join(self) -> None:
        assert self._kv is not None
        self._deadline = 0.0  # fenced until the new lease is written
        sent = self._last_sent = self._clock()
        try:
            self._revision = await self._kv.create(self._key(), b"{}")
        except KeyWrongLastSequenceError:
            # A lease of a previous life of this instance name: take it over under a new epoch.
            entry = await self._kv.get(self._key())
            self._revision = await self._kv.update(self._key(), b"{}", last=entry.revision)
        epoch = self._revision
        self._revision = await self._kv.update(self._key(), self._value(epoch), last=self._revision)
        # Published in this order: the service's side never sees the new epoch with a stale deadline.
        self.epoch = epoch
        self._deadline = sent + self.ttl_s
        # Peers must see us before we claim keys that were theirs: wait for one watch round trip.
        self._settled_at = self._clock() + min(1.0, self.ttl_s / 2)
        self._settle_announced = False
        self._seen[self.instance] = self._clock()
        self._recompute()
        self._tell_owners()  # a new epoch: owners must re-claim their keys once settled
        log.info("membership.joined", group=self.group, epoch=self.epoch)

    async def _renew_loop(self) -> None:
        while True:
            await asyncio.sleep(self.next_renewal_in())
            if self._service_stalled():
                self._recompute()
                continue
            await self._renew()

    def _service_stalled(self) -> bool:
        """The service's loop has not ticked for LOOP_STALL_S: it is hung, and must lose its lease."""
        silent_s = self._clock() - self._loop_seen
        stalled = silent_s > LOOP_STALL_S
        if stalled:
            self._last_sent = self._clock()  # no renewal now: look again a third of the ttl later
            if not self._stall_logged:
                log.error("membership.service_loop_stalled", group=self.group, silent_s=round(silent_s, 1))
        self._stall_logged = stalled
        return stalled

    def next_renewal_in(self) -> float:
        """Seconds until the next renewal: ttl/3 after the last one was sent, not after it was answered.
        Counting from the answer, one slow acknowledgement (a loaded machine: over ttl/3 late) pushed the
        next renewal past the lease, and the instance dropped its planned work as if paused."""
        return max(0.0, self._last_sent + self.ttl_s / 3 - self._clock())

    async def _renew(self) -> None:
        async with self._write_lock:
            await self._renew_locked()

    async def _renew_locked(self) -> None:
        assert self._kv is not None
        sent = self._last_sent = self._clock()
        try:
            if sent >= self._deadline:
                # Paused or cut off past the lease: peers may own our keys now. Re-join, new epoch.
                log.warning("membership.lease_lapsed", group=self.group, epoch=self.epoch)
                await self._join()
            else:
                lease_ended = self._deadline
                self._revision = await self._kv.update(self._key(), self._value(), last=self._revision)
                self._deadline = sent + self.ttl_s
                self._seen[self.instance] = self._clock()
                if self._clock() >= lease_ended:
                    # The renewal outlived the lease it renewed: writes were fenced meanwhile, and work
                    # given up for it (a key that was not ours to write) must be looked at again.
                    self._tell_owners()
        except (KeyWrongLastSequenceError, KeyNotFoundError):
            log.warning("membership.lease_lost", group=self.group, epoch=self.epoch)
            await self._join()
        except Exception as exc:  # NATS unavailable: keep trying; the fence stops writes meanwhile
            log.warning("membership.renew_failed", group=self.group, error=repr(exc))
        self._recompute()
        if not self._settle_announced and self.can_write() and self._clock() >= self._settled_at:
            # Owners wait for the settle period before claiming keys; tell them it is over.
            self._settle_announced = True
            self._tell_owners()

    async def _watch_loop(self, nc: Client) -> None:
        js = nc.jetstream()
        # Raw KV, not an Informer: leases are heartbeats, not stored objects, and their arrival time is what counts.
        async for entry in watch_bucket(js, subjects.LEASES_BUCKET, f"{self.group}.*"):
            name = entry.key.partition(".")[2]
            if entry.op is WatchOp.PUT and entry.value != b"{}":
                self._seen[name] = self._clock()
            elif entry.op is WatchOp.DELETE:
                self._seen.pop(name, None)
            elif entry.op is WatchOp.SYNCED:
                self._signal(self._ready)
            self._recompute()

    def _recompute(self) -> None:
        now = self._clock()
        alive = tuple(sorted(n for n, seen in self._seen.items() if now - seen < self.ttl_s))
        if self.instance not in alive and self.can_write():
            alive = tuple(sorted((*alive, self.instance)))
        if alive != self.members:
            log.info("membership.changed", group=self.group, members=list(alive))
            self.members = alive
            self._tell_owners()

    async def _leave(self) -> None:
        """Graceful exit: delete the lease so peers take over at once instead of after the ttl."""
        if self._kv is None or self.epoch == 0:
            return
        try:
            async with asyncio.timeout(LEAVE_TIMEOUT_S):
                await self._kv.delete(self._key(), last=self._revision)
        except Exception as exc:  # best effort; the lease then simply expires
            log.info("membership.leave_failed", group=self.group, error=repr(exc))
        self.epoch = 0
        self._deadline = 0.0
