"""SHELL: the scheduler's cache of the cluster, fed by the shared KV change streams.

Objects are kept as the core's snapshot views (decoded by the same loader `vcctl sim cycle` uses).
`assume()` marks a pod bound the moment a cycle decides it, so the next cycle never places it twice
while the write is in flight (Volcano's AddBindTask / kube-scheduler's assume); the watch then
confirms or corrects it. What the cache shows of its own binds until the watch shows them stored, and
what they occupy, follows the rules in own_binds.py.

With several instances the cache also remembers the uids of pods it saw deleted (tombstones): the
placement ledger drops their reservations (see ledger.py).

Several instances each plan over a share of the cluster (share.py). A cache made with `share_only` is
sent the pods of its instance's own shards only (shard_feed.py), from the time the loop first says which
those are (`regroup`, or `expect_alone`: a lone instance's share is every shard); what the other shards'
pods add up to comes from their owners' records (shard_records.py, in the index). A pod of its shards
outside the share (one that names no PodGroup yet, on another instance's node) is held brief
(loader.brief_pod: where the pod is, its PodGroup, phase and requests) with its stored bytes, and decoded
whole only when the share takes it (`full_pod`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import partial
from typing import Any, TypeVar, cast

import msgspec

from vc_bus.decoding import decode_or_none, report_undecodable
from vc_bus.kvwatch import RawEntry, watch_bucket
from vc_bus.objects import with_meta
from vc_core.interning import shared
from vc_core.resources import PODS, Resources
from vc_core.store import WatchOp
from vc_proto import codec, subjects
from vc_proto.kinds import KubeObject
from vc_proto.pod_shards import shard_of_key
from vc_runtime.aio import until
from vc_sched_core.snapshot.cluster import (
    GROUP_NAME_ANNOTATION,
    ClusterSnapshot,
    HyperNodeObj,
    NodeObj,
    PersistentVolumeClaimObj,
    PersistentVolumeObj,
    PodDisruptionBudgetObj,
    PodGroupObj,
    PodObj,
    PriorityClassObj,
    QueueObj,
    ResourceQuotaObj,
    read_annotations,
)
from vc_sched_core.snapshot.kube import Pod as PodView
from vc_sched_core.snapshot.loader import SnapshotError, brief_pod, convert_pod, convert_view, decode_json, decode_view
from vc_scheduler.cluster_index import TERMINAL, ClusterIndex, podgroup_key
from vc_scheduler.ledger import UNSEEN_AFTER_S
from vc_scheduler.own_binds import Kept, OwnBinds
from vc_scheduler.shard_feed import ALL_SHARDS, ShardFeed, every_key, shard_filters

KINDS = (
    "Node",
    "Pod",
    "PodGroup",
    "Queue",
    "PriorityClass",
    "HyperNode",
    "ResourceQuota",
    "PodDisruptionBudget",
    "PersistentVolumeClaim",
    "PersistentVolume",
)
# The kinds an instance follows only over its own shards (shard_feed.py); every instance reads all of the rest.
SHARDED_KINDS = ("Pod", "PodGroup")
BOUND_BY = "scheduling.tephra.dev/bound-by"  # "<instance>/<epoch>": which scheduler life bound the pod
MAX_TOMBSTONES = 200_000
# A tombstone outlives every reservation it could cancel: one of a pod the view does not see expires
# after ledger.UNSEEN_AFTER_S anyway. Older ones only cost memory and the per-cycle gone() set.
TOMBSTONE_TTL_S = 2 * UNSEEN_AFTER_S
# The unbound pods whose stored bytes are kept for a bind without a read (1-2 KB each). A backlog of
# hundreds of thousands of pods waiting (the seeds' load: 555,000 at its peak) would otherwise hold
# about a GB of them; past this many, a pod's bind reads it first. Five cycles' binds at the default
# bound (--binds-per-cycle 20,000): a backlog as large as the scale-out benchmark's binds without reads.
MAX_UNBOUND_KEPT = 100_000
# The longest the watches' entries wait while a cycle opens (SchedulerCache.hold). The cycle plans in a
# thread that shares the GIL with the event loop; at the seeds' scale the loop would meanwhile apply
# tens of thousands of changes (the last cycle's binds and starts, new pods) that this cycle's snapshot
# no longer sees, and the opening took several times its own CPU in wall time while the binder had
# nothing to write (docs/benchmarks.md, "10,000 nodes, 1,000,000 pods"). Held, the entries wait in the
# server (a pull consumer asks for no more) and are applied once the cycle hands over its first binds.
# At that scale an opening lasts 10 s or more, and a hold of 5 s lapsed half-way through it. The bound
# stays well inside what the watch tolerates unread: its consumer is dropped after 30 s without a pull
# request (kvwatch), and the server's heartbeats reach it all the while.
HOLD_MAX_S = 15.0
ObjT = TypeVar("ObjT", bound=KubeObject)


def stored_object(kind: type[ObjT], stored: tuple[bytes, int]) -> ObjT | None:
    """The cache's stored bytes of an object (stored_unbound, stored_podgroup) as the object at that
    revision, ready for a compare-and-set without reading it back (None: not that kind, or bytes that
    do not decode, reported: the caller reads the store instead).

    The version is the one the store's compare-and-set checks: on the NATS backend the KV revision (the
    value carries none), on the kube backend the apiserver's resourceVersion the relay's value carries
    (the KV revision there would fail the patch's precondition: a conflict, a GET, and a second try)."""
    obj = decode_or_none(codec.decode_object, stored[0], source=subjects.bucket(kind.__name__), kind=kind.__name__)
    if not isinstance(obj, kind):
        return None
    return obj if obj.metadata.resource_version else with_meta(obj, resource_version=str(stored[1]))


def resource_version_number(obj: KubeObject) -> int:
    """An object's resourceVersion as a number (0 when absent or not numeric), to tell the newer of two
    versions of one object that came from the same store."""
    rv = obj.metadata.resource_version
    return int(rv) if rv and rv.isdigit() else 0


def _new_work(kind: str, old: Any, new: Any) -> bool:
    """Whether a stored change may give a cycle something new to do: a new pod or PodGroup, freed
    resources (a pod finishing, being deleted or unbound), a PodGroup's demands changing, or any
    change of a node, queue, priority class, hypernode, quota, disruption budget or volume (a quota
    deleted or raised may admit a waiting PodGroup, a budget deleted or loosened may free victims for
    preempt, a claim created or bound may let a waiting pod fit)."""
    if old is None or new is None or kind not in ("Pod", "PodGroup"):
        return True
    if kind == "Pod":
        return (
            (new.phase in TERMINAL) != (old.phase in TERMINAL)
            or new.deleting != old.deleting
            or (bool(old.node_name) and not new.node_name)
            or new.requests != old.requests
        )
    return (old.min_member, old.min_resources, old.queue, old.priority_class_name, old.min_task_member) != (
        new.min_member,
        new.min_resources,
        new.queue,
        new.priority_class_name,
        new.min_task_member,
    )


def _equal(kind: str, old: Any, new: Any) -> bool:
    """Whether two views of one object are equal; a pod's node and phase first, as most of its changes
    differ there (a bind, a start), which settles it without comparing every field."""
    if kind == "Pod" and (old.node_name != new.node_name or old.phase != new.phase):
        return False
    return bool(old == new)


def _demand(kind: str, old: Any, new: Any) -> str | None:
    """For new work: the PodGroup key whose demand it is (a new pod of a group, a new or changed
    PodGroup: only the instance owning that PodGroup has work), else None (freed resources, a node, a
    queue, a priority class: something every instance plans around)."""
    if kind == "PodGroup" and new is not None:
        return str(new.key)
    if kind == "Pod" and old is None and new is not None and new.group_name:
        return f"{new.namespace}/{new.group_name}"
    return None


class SchedulerCache:
    def __init__(self, *, share_only: bool = False) -> None:
        self.nodes: dict[str, NodeObj] = {}
        self.pods: dict[str, PodObj] = {}
        self.podgroups: dict[str, PodGroupObj] = {}
        self.queues: dict[str, QueueObj] = {}
        self.priority_classes: dict[str, PriorityClassObj] = {}
        self.hypernodes: dict[str, HyperNodeObj] = {}  # the network-topology-aware plugin's tree
        self.resource_quotas: dict[str, ResourceQuotaObj] = {}  # the resourcequota plugin's enqueue gate
        self.pod_disruption_budgets: dict[str, PodDisruptionBudgetObj] = {}  # the pdb plugin's victim filter
        # The predicates' volume check (plugins/volume_binding.py): claims and the volumes they are bound to.
        self.persistent_volume_claims: dict[str, PersistentVolumeClaimObj] = {}
        self.persistent_volumes: dict[str, PersistentVolumeObj] = {}
        # PodGroup key -> the vcjob that owns it, for publishing verdicts on the job's history.
        self.owner_job: dict[str, str] = {}
        self.synced = {kind: asyncio.Event() for kind in KINDS}
        self.changed = asyncio.Event()  # set on a change that may give a cycle new work (wakes the loop)
        # What that new work is, since the loop last drained it: the PodGroups with new demands, and
        # whether anything else came (resources freed, nodes, queues): work for every instance.
        self.demands: set[str] = set()
        self.shared_work = False
        # Bumped on every change of what a cycle reads that may give it something new to do (not on
        # assume: an assumed bind is what the last cycle decided); `quiet` on every other one (a bind
        # confirmed, a pod started, a PodGroup status written: _new_work). Both unchanged, a cycle would
        # see what the last saw; `quiet` alone moved, it would mostly report statuses (idle.py).
        self.version = 0
        self.quiet = 0
        self._order = 0
        self.decode_errors = 0
        self._gone: OrderedDict[str, float] = OrderedDict()  # uid -> when the pod was seen deleted
        # This instance's binds from a cycle's decision until the watch shows them stored (own_binds.py).
        self._own = OwnBinds()
        # Stored bytes and revision of unbound pods (at most MAX_UNBOUND_KEPT): a bind is then one
        # compare-and-set, without first reading the pod back (a stale copy only costs a Conflict and
        # the read after all; a pod not kept is read first).
        self._unbound_raw: dict[str, tuple[bytes, int]] = {}
        self._podgroup_raw: dict[str, tuple[bytes, int]] = {}  # the same for status writes
        # What the objects add up to, kept per change (pods by node and PodGroup, the ledger's view,
        # queue sums and node usage): an instance's cycle gathers its share from it (share.py).
        self.index = ClusterIndex()
        # PodGroup key -> the store revision of this instance's own last status write of it (echoes).
        self._echoes: dict[str, int] = {}
        self.follow_all = True  # every change counts for the loop (see _concerns)
        # By kind, the store revision the watch has delivered up to, and who waits for one (followed_to).
        self.followed: dict[str, int] = {}
        self._revision_waiters: list[tuple[str, int, asyncio.Future[None]]] = []
        self._held_until = 0.0  # while a cycle opens: when the watches' entries are applied again (hold)
        self._released = asyncio.Event()
        # Which pods are held whole, by their node and PodGroup key: all of them, or with `share_only`
        # those of the share. Until the loop says what the share is (regroup), every pod that names a
        # PodGroup: the pods watch is opened over the instance's own shards (their PodGroups are its own)
        # just before, and their pods arrive meanwhile.
        self.share_only = share_only
        self._whole: Callable[[str, str | None], bool] = (
            (lambda _n, group: group is not None) if share_only else (lambda _n, _g: True)
        )
        self._partitioned = False  # the loop has said what the share is (regroup)
        self._brief_raw: dict[str, bytes] = {}  # pod key -> the stored bytes of a pod held brief
        # The pods and PodGroups watches cover the shards the loop says (`share_only`: none until it
        # does), reopened as they change (shard_feed.py); while one reads them from their start, the keys
        # it delivered, so that those it did not are known deleted at its SYNCED (their delete was purged
        # meanwhile).
        self.feeds = {
            kind: ShardFeed(
                kind,
                None if share_only else ALL_SHARDS,
                on_restart=partial(self._restart, kind),
                resume_at=partial(self._applied, kind),
                filters=shard_filters if kind == "Pod" else every_key,
            )
            for kind in SHARDED_KINDS
        }
        self._replayed: dict[str, set[str]] = {}
        self._tables: dict[str, dict[str, Any]] = {
            "Node": self.nodes,
            "Pod": self.pods,
            "PodGroup": self.podgroups,
            "Queue": self.queues,
            "PriorityClass": self.priority_classes,
            "HyperNode": self.hypernodes,
            "ResourceQuota": self.resource_quotas,
            "PodDisruptionBudget": self.pod_disruption_budgets,
            "PersistentVolumeClaim": self.persistent_volume_claims,
            "PersistentVolume": self.persistent_volumes,
        }

    def snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(
            nodes=tuple(self.nodes.values()),
            pods=tuple(self.pods.values()),
            podgroups=tuple(self.podgroups.values()),
            queues=tuple(self.queues.values()),
            priority_classes=tuple(self.priority_classes.values()),
            hypernodes=tuple(self.hypernodes.values()),
            resource_quotas=tuple(self.resource_quotas.values()),
            pod_disruption_budgets=tuple(self.pod_disruption_budgets.values()),
            persistent_volume_claims=tuple(self.persistent_volume_claims.values()),
            persistent_volumes=tuple(self.persistent_volumes.values()),
        )

    def gone(self) -> frozenset[str]:
        self._expire_tombstones(time.monotonic())
        return frozenset(self._gone)

    def assume(self, pod_key: str, node: str, annotations: Mapping[str, str] | None = None) -> None:
        """`annotations`: what the bind writes with the node (deviceshare's GPU assignment): the next
        cycle counts the pod's GPUs before the watch shows the stored bind."""
        pod = self.pods.get(pod_key)
        if pod is not None and not pod.node_name:
            merged = {**pod.annotations, **read_annotations(annotations)} if annotations else pod.annotations
            assumed = msgspec.structs.replace(pod, node_name=node, annotations=merged)
            self.pods[pod_key] = assumed
            self._own.assume(pod_key, assumed, time.monotonic())
            self.index.place(pod_key, pod, assumed)

    def forget_assumed(self, pod_key: str) -> None:
        """Undo an assume whose bind did not happen (own_binds.OwnBinds.undo says what is shown then)."""
        shown = self.pods.get(pod_key)
        stored, instead = self._own.undo(pod_key, shown)
        if stored:
            return  # the store has the bind after all (the watch showed it): nothing to undo
        if instead is not None and shown is not None:
            self._show(pod_key, shown, instead)
        self.version += 1
        self.shared_work = True  # the node it was assumed on has room again
        self.changed.set()

    def assumed(self) -> frozenset[str]:
        """Pods whose node in the cache is only assumed (no stored bind seen yet)."""
        return self._own.assumed(self.pods.get)

    def occupying(self, node: str) -> dict[str, Resources]:
        """By pod uid, the requests (`pods` included) of what occupies `node` as this instance's cycles
        see it: the stored binds (the index's view, and the other shards' pods there their owners list
        as away) and this instance's own binds in flight, assumed or written and not yet seen stored."""
        self.unseen_binds()  # (gives up those past UNSEEN_AFTER_S first)
        stored = dict(self.index.by_node.get(node, {}))
        for away in self.index.away_on(node, self._gone).values():  # (other shards' pods it is not sent)
            stored.setdefault(away.uid, {**away.requests, PODS: Fraction(1)})
        return self._own.occupying(node, self.index.pods_on.get(node, ()), self.pods.get, stored)

    def full_pod(self, key: str) -> PodObj | None:
        """The pod's whole view: one held brief is decoded from its stored bytes now, and kept whole."""
        raw = self._brief_raw.pop(key, None)
        pod = self.pods.get(key)
        if raw is None or pod is None:
            return pod
        try:
            whole = cast(PodObj, convert_view("Pod", decode_view("Pod", raw, pod.order), pod.order))
        except SnapshotError as exc:  # counted brief, and no whole view: held as if never decoded
            self.decode_errors += 1
            report_undecodable(source=subjects.bucket("Pod"), kind="Pod", error=exc, key=key)
            del self.pods[key]
            self._unbound_raw.pop(key, None)
            self._index_gone("Pod", key, pod)
            return None
        self.pods[key] = whole
        return whole

    def expect_alone(self) -> None:
        """The instance's membership says it is alone: its share will be the whole cluster, so its pods
        watch opens over every shard at once, and each pod is decoded whole as it arrives, not brief and
        then again at the first partition (1.5-2 s per 100,000 pods at start-up). If members join
        meanwhile, the first partition narrows the watch and holds the pods outside the share brief."""
        if self.share_only and not self._partitioned:
            self._whole = lambda _node, _group: True
            self.cover(ALL_SHARDS)

    def cover(self, shards: frozenset[int]) -> None:
        """Follow the pods and PodGroups of `shards` from now on (those of the member set the instance
        announced)."""
        for feed in self.feeds.values():
            feed.cover(shards)

    def regroup(self, owns: Callable[[str], bool], owns_node: Callable[[str], bool], shards: frozenset[int]) -> None:
        """The share changed (the members did): the index recounts what lies outside it, the watches
        cover the share's shards, the pods and PodGroups of the shards they no longer cover are dropped
        (their owners' records count them now; not deletions), and the pods the share now takes are made
        whole (a walk over the pods and PodGroups, once per change of members)."""
        self.index.regroup(owns, owns_node, shards)
        self._partitioned = True
        if not self.share_only:
            return
        self.cover(shards)
        wants = self.feeds["Pod"].wants
        for key, pod in [(k, p) for k, p in self.pods.items() if not wants(self.index.shard_of(k, p))]:
            self._pod_gone(key, pod, deleted=False)
        for key, pg in [(k, g) for k, g in self.podgroups.items() if not wants(shard_of_key(k))]:
            self._podgroup_gone(key, pg)
        self._whole = self.index.concerns_place
        taken = [k for k, p in self.pods.items() if k in self._brief_raw and self._whole(p.node_name, podgroup_key(p))]
        for key in taken:
            self.full_pod(key)

    def holds(self, shards: frozenset[int]) -> bool:
        """Whether the cache holds every pod and PodGroup of `shards`: its watches cover them and have
        read them to the end (not while they read shards from their start). A cache that is not
        `share_only` follows every shard, and its owner waits for the watches' sync before it plans."""
        covered = self.feeds["Pod"].covered
        if not self.share_only:
            return True
        return covered is not None and shards <= covered and all(self.synced[k].is_set() for k in SHARDED_KINDS)

    def holds_covered(self) -> bool:
        """Whether the cache holds every pod and PodGroup of the shards it covers (what an owner lends
        from, and counts its shards' records by)."""
        return self.holds(self.feeds["Pod"].covered or frozenset()) if self.share_only else True

    async def until_holds(self, shards: frozenset[int], timeout_s: float) -> bool:
        """`holds(shards)`, waiting up to `timeout_s` for the watches to read them to the end."""
        covered = self.feeds["Pod"].covered
        if self.holds(shards) or covered is None or not shards <= covered:
            return self.holds(shards)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                for kind in SHARDED_KINDS:
                    await self.synced[kind].wait()
        return self.holds(shards)

    def stored_unbound(self, pod_key: str) -> tuple[bytes, int] | None:
        return self._unbound_raw.get(pod_key)

    def stored_podgroup(self, key: str) -> tuple[bytes, int] | None:
        return self._podgroup_raw.get(key)

    def bound(self, pod_key: str) -> float | None:
        """The bind was written: the monotonic time it was assumed (None: not assumed here)."""
        return self._own.written(pod_key, time.monotonic())

    def unseen_binds(self) -> int:
        """This instance's binds written and not yet seen stored by the watch. One past UNSEEN_AFTER_S is
        given up (its pod went another way): the pod is shown as the watch last delivered it."""
        for key, kept in self._own.expired(time.monotonic()):
            shown = self.pods.get(key)
            if kept is None or shown is None or not shown.node_name or kept.version.uid != shown.uid:
                continue
            self._show(key, shown, kept)
            self.version += 1
            self.shared_work = True  # the node has room again, and the pod waits
            self.changed.set()
        return self._own.unseen()

    def _show(self, pod_key: str, shown: PodObj, instead: Kept) -> None:
        """Show `instead` (a version, and its stored bytes if brief) where the cache showed an own bind."""
        self.pods[pod_key] = instead.version
        if instead.brief is not None:
            self._brief_raw[pod_key] = instead.brief
        self.index.place(pod_key, shown, instead.version)

    async def follow(self, js: Any, kind: str, shutdown: asyncio.Event) -> None:
        # Raw KV, not an Informer: it decodes into snapshot views and keeps bytes and revision for CAS.
        if kind in self.feeds:
            entries = self.feeds[kind].entries(js, shutdown)
        else:
            entries = until(shutdown, watch_bucket(js, subjects.bucket(kind)))
        async for entry in entries:
            if self._held_until:
                await self._until_released()
            self.apply(kind, entry)

    def hold(self) -> None:
        """Leave the watches' entries unapplied until `release`, for at most HOLD_MAX_S: a cycle opens."""
        self._held_until = time.monotonic() + HOLD_MAX_S
        self._released.clear()

    @property
    def held(self) -> bool:
        return self._held_until > time.monotonic()

    def release(self) -> None:
        """Apply the watches' entries again (the ones that waited first, in order)."""
        self._held_until = 0.0
        self._released.set()

    async def _until_released(self) -> None:
        left = self._held_until - time.monotonic()
        if left > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._released.wait()
        self._held_until = 0.0  # (released, or held as long as it may be)

    def apply(self, kind: str, entry: RawEntry) -> None:
        """One entry of the store's watch of `kind`'s bucket."""
        table = self._tables[kind]
        if entry.op is WatchOp.SYNCED:
            delivered = self._replayed.pop(kind, None)
            if delivered is not None:
                self._sweep(kind, delivered)
            self.synced[kind].set()
            self._advance(kind, entry.revision)
            self.version += 1
            self.shared_work = True
            self.changed.set()
            return
        shard = subjects.shard_of_pod_key(entry.key) if kind == "Pod" else None
        feed = self.feeds.get(kind)
        if feed is not None and feed.narrowed():
            if kind == "PodGroup":
                namespace, name = subjects.split_key(entry.key)
                shard = shard_of_key(f"{namespace}/{name}")
            if not feed.wants(shard):
                return  # (another instance's PodGroup, or a pod delivered by a watch over a shard given up)
        if self.synced[kind].is_set():  # (before: each key's last value so far, not every change yet)
            self._advance(kind, entry.revision)
        namespace, name = subjects.split_key(entry.key)
        # One string per key, however often the object changes: the tables and the index hold it in
        # several places, and each change would otherwise leave a copy of its own in some of them.
        key = shared(f"{namespace}/{name}" if namespace else name)
        replayed = self._replayed.get(kind)
        if replayed is not None:
            replayed.add(key)
        if entry.op is WatchOp.DELETE:
            # (Only a PodGroup's delete forgets what is kept per PodGroup key: a pod, a node or a queue
            # may have the same key as a PodGroup that stays.)
            old = table.get(key)
            if kind == "Pod":
                table.pop(key, None)
                self._pod_gone(key, old, deleted=True, popped=True)
            elif kind == "PodGroup":
                self._podgroup_gone(key, old)
            else:
                table.pop(key, None)
                self._index_gone(kind, key, old)
            if kind == "Queue":
                self.index.queues(self.queues.values())
            if old is None or not self._concerns(kind, key, old, None):
                return
            new = None
        else:
            old = table.get(key)
            changed = self._put(kind, key, entry.value, table, shard)
            new = table.get(key)
            if kind == "Pod" and new is not old:
                self.index.place(key, old, new)
            elif kind == "Queue":
                self.index.queues(self.queues.values())
            if kind == "Pod":
                self._track_unbound(key, new, entry.value, entry.revision)
            elif kind == "PodGroup":
                self._podgroup_raw[key] = (entry.value, entry.revision)
            if not self._concerns(kind, key, old, new):
                return
            if not changed:
                # What a cycle reads of it is as it was (a node's heartbeat, a pod's status
                # conditions): the same object stays, nothing to cycle for.
                return
            if self._echo(kind, key, entry.revision, old, new):
                return
            if not _new_work(kind, old, new):
                # A bind confirmed, a pod started, a PodGroup status written: nothing a cycle could act
                # on (a later cycle sees it all the same). Waking up for these would run a cycle per
                # pod transition instead of one per batch of new work.
                self.quiet += 1
                return
        self.version += 1
        demand = _demand(kind, old, new)
        if demand is None:
            self.shared_work = True
        else:
            self.demands.add(demand)
        self.changed.set()

    def _restart(self, kind: str) -> None:
        """The watch of `kind` reads the covered shards from their start (shard_feed.ShardFeed):
        unsynced, at no revision, until its SYNCED."""
        self.synced[kind].clear()
        self.followed[kind] = 0
        if self._tables[kind]:
            self._replayed[kind] = set()
        else:
            self._replayed.pop(kind, None)

    def _applied(self, kind: str) -> int:
        return self.followed.get(kind, 0)

    def _sweep(self, kind: str, delivered: set[str]) -> None:
        """A read from the start is over: what the cache holds of the covered shards that it did not
        deliver was deleted while the watch did not cover its shard, or its delete was purged since."""
        wants = self.feeds[kind].wants
        if kind == "Pod":
            for key, pod in [(k, p) for k, p in self.pods.items() if k not in delivered]:
                if wants(self.index.shard_of(key, pod)):
                    self._pod_gone(key, pod, deleted=True)
        else:
            for key, pg in [(k, g) for k, g in self.podgroups.items() if k not in delivered]:
                if wants(shard_of_key(key)):
                    self._podgroup_gone(key, pg)
        self.version += 1
        self.shared_work = True

    def _podgroup_gone(self, key: str, old: PodGroupObj | None) -> None:
        """The cache no longer holds the PodGroup (deleted, or of a shard the watch no longer covers)."""
        self.podgroups.pop(key, None)
        self._index_gone("PodGroup", key, old)
        self._podgroup_raw.pop(key, None)
        self.owner_job.pop(key, None)
        self._echoes.pop(key, None)

    def _pod_gone(self, key: str, old: PodObj | None, *, deleted: bool, popped: bool = False) -> None:
        """The cache no longer holds the pod: deleted (a tombstone remembers its uid for the ledger), or
        of a shard the watch no longer covers (not a deletion: it lives on in its owner's records)."""
        if not popped:
            self.pods.pop(key, None)
        self._index_gone("Pod", key, old)
        self._unbound_raw.pop(key, None)
        self._brief_raw.pop(key, None)
        self._own.seen(key)
        if deleted and old is not None:
            self._tombstone(old.uid)

    async def followed_to(self, kind: str, revision: int, timeout_s: float) -> bool:
        """Whether the watch of `kind` has delivered every change up to `revision`, waiting up to
        `timeout_s` for it."""
        if self.followed.get(kind, 0) >= revision:
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._revision_waiters.append((kind, revision, waiter))
        try:
            async with asyncio.timeout(timeout_s):
                await waiter
            return True
        except TimeoutError:
            return False
        finally:
            self._revision_waiters = [w for w in self._revision_waiters if w[2] is not waiter]

    def _advance(self, kind: str, revision: int) -> None:
        if revision <= self.followed.get(kind, 0):
            return
        self.followed[kind] = revision
        for waited, wanted, waiter in self._revision_waiters:
            if waited == kind and wanted <= revision and not waiter.done():
                waiter.set_result(None)

    def expect_echo(self, key: str, revision: int) -> None:
        """The status writer stored a PodGroup's status at `revision`: when the watch delivers that very
        revision, and it changes nothing but the status, it is no change for the loop."""
        if len(self._echoes) > 2 * len(self.podgroups) + 1024:  # of PodGroups deleted before their echo
            self._echoes = {k: r for k, r in self._echoes.items() if k in self.podgroups}
        self._echoes[key] = revision

    def _echo(self, kind: str, key: str, revision: int, old: Any, new: Any) -> bool:
        """Whether a stored change is this instance's own status write coming back (expect_echo) and
        nothing else: the cycle that decided that status already planned on it, so it is no change for
        the loop (counting it ran a cycle per status write)."""
        if kind != "PodGroup" or key not in self._echoes:
            return False
        return self._echoes.pop(key) == revision and not _new_work(kind, old, new)

    def _concerns(self, kind: str, key: str, old: Any, new: Any) -> bool:
        """Whether the change can matter to this instance's next cycle (its share: ClusterIndex.concerns),
        or the loop asked to hear of every change (`follow_all`: a PodGroup of its share waits for room it
        may borrow elsewhere)."""
        return self.follow_all or self.index.concerns(kind, key, old, new)

    def take_work(self) -> tuple[set[str], bool]:
        """The new work since the last call (demands by PodGroup, whether any is shared), emptied."""
        demands, shared = self.demands, self.shared_work
        self.demands, self.shared_work = set(), False
        return demands, shared

    def _track_unbound(self, key: str, pod: PodObj | None, data: bytes, revision: int) -> None:
        if pod is None or pod.node_name or pod.phase != "Pending" or pod.deleting:
            self._unbound_raw.pop(key, None)
        elif key in self._unbound_raw or len(self._unbound_raw) < MAX_UNBOUND_KEPT:
            self._unbound_raw[key] = (data, revision)

    def _tombstone(self, uid: str) -> None:
        now = time.monotonic()
        self._gone.pop(uid, None)  # to the end: the dict stays in the order the pods went
        self._gone[uid] = now
        while len(self._gone) > MAX_TOMBSTONES:
            self._gone.popitem(last=False)
        self._expire_tombstones(now)

    def _expire_tombstones(self, now: float) -> None:
        while self._gone and now - next(iter(self._gone.values())) > TOMBSTONE_TTL_S:
            self._gone.popitem(last=False)

    def _put(self, kind: str, key: str, data: bytes, table: dict[str, Any], shard: int | None = None) -> bool:
        """Store the decoded view; False when it equals the one held (which is then kept, the same
        object: the carried session state and ledger view compare objects by identity). `shard`: the one
        a pod's store key names."""
        self._order += 1
        old = table.get(key)
        # A view's order is its key's first arrival (its place among the others, as in the dict).
        order = getattr(old, "order", self._order) if old is not None else self._order
        obj: Any  # the view's type follows `kind`, as the table's values do
        try:
            if kind == "Pod":
                obj, meta = self._pod(key, data, order), None
            else:
                obj, meta = decode_json(kind, data, order)
        except SnapshotError as exc:  # kept: the previous view, if any (a bad value is skipped, not a delete)
            self.decode_errors += 1
            report_undecodable(source=subjects.bucket(kind), kind=kind, error=exc, key=key)
            return False
        self._index_stored(kind, key, obj, shard)
        if kind == "Pod" and obj.node_name:
            self._own.seen(key)  # stored bound: an own bind of it is seen
        elif kind == "Pod" and old is not None and self._own.keeps(key, old, obj):
            # Kept aside whole or brief as decoded, its bytes with it: the pod shown is the bind.
            self._own.keep(key, Kept(obj, self._brief_raw.pop(key, None)))
            return False
        if meta is not None and kind == "PodGroup":
            job = next((o.name for o in meta.owner_references if o.kind == "Job"), None)
            if job:
                self.owner_job[key] = job
        if kind == "Pod" and old is not None and self._own.confirm(key, old, obj):
            # The stored bind of a pod we assumed: our object already says so. Keep it (nothing a cycle
            # reads changed), and no longer count the pod as only assumed.
            return False
        if old is not None and not (kind == "Pod" and self._own.is_assumed(key)) and _equal(kind, old, obj):
            return False
        if kind == "Pod" and old is not None and old.uid != obj.uid:
            self._tombstone(old.uid)  # deleted and re-created under the same name (its delete not seen)
            self._own.recreated(key, old.uid)
        table[key] = obj
        return True

    def _pod(self, key: str, data: bytes, order: int) -> PodObj:
        """A stored pod as the cache holds it: whole, or brief with its bytes kept (share_only)."""
        view = cast(PodView, decode_view("Pod", data, order))
        group = view.metadata.annotations.get(GROUP_NAME_ANNOTATION)
        if self._whole(view.spec.node_name, f"{view.metadata.namespace or 'default'}/{group}" if group else None):
            previous = self.pods.get(key) if key not in self._brief_raw else None
            whole = convert_pod(view, order, previous)
            self._brief_raw.pop(key, None)
            return whole
        pod = brief_pod(view, order)
        self._brief_raw[key] = data
        return pod

    def _index_stored(self, kind: str, key: str, obj: Any, shard: int | None) -> None:
        if kind == "Pod":
            self.index.stored_pod(key, obj, shard)
        elif kind == "PodGroup":
            self.index.stored_podgroup(key, obj)
        elif kind == "Node":
            self.index.stored_node(key, obj)

    def _index_gone(self, kind: str, key: str, old: Any) -> None:
        """`old`: the object the cache held (its tables' own: for a pod, what the index placed)."""
        if kind == "Pod":
            self.index.stored_pod(key, None)
            self.index.place(key, old, None)
        elif kind == "PodGroup":
            self.index.stored_podgroup(key, None)
        elif kind == "Node":
            self.index.stored_node(key, None)
