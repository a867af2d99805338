"""PURE (kept on the event loop by the cache): what the cache's objects add up to, updated per change.

A scheduler instance plans over its share of the cluster (share.py), so nothing a cycle needs may cost
a walk over every pod. The cache hands every change of a pod, PodGroup, node or queue to this index,
which keeps, at the cost of the change:

- where each pod is (its node as the cycle sees it, assumed binds included) and which pods each
  PodGroup has, so a share is gathered from its own nodes and PodGroups;
- the placement ledger's view of every pod (its stored node, whether it is terminal, its requests, its
  queue), with the occupying pods indexed by node and by queue and its ancestors (ledger.View);
- per PodGroup the sums the queue plugins take of a job (Σ requests of placed and pending pods, of
  placed ones, the unplaced minResources of an admitted one); per shard this instance owns, their totals
  by queue, which it publishes (`tally`, shard_records.ShardTally); and per queue the totals over the
  shards other instances own, from what they publish (`others`, shard_records.OtherShards), so
  cluster.Outside says the whole cluster's figures (fair share and quotas are the whole cluster's);
- per node its usage by stored pods, and the total allocatable and usage of other instances' nodes
  (the usage: what the other shards' records say their pods occupy, less their pods on this instance's
  nodes, plus its own shards' pods on the others' nodes);
- per PodGroup its pods by task status, for the state gauges (metrics.py), which then read the own
  PodGroups and the other shards' records instead of every pod;
- which of this instance's own PodGroups are settled and held out of its sessions (`settle`, `wake`):
  their sums count outside the share too, so a session walks only the jobs that can still change.

What is "other instances'" follows the ownership the caller sets (`regroup`), recounted only when the
members change.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, TypeVar

import msgspec

from vc_core.interning import shared
from vc_core.resources import PODS, Resources
from vc_proto.pod_shards import SHARDS, shard_of_key
from vc_sched_core.snapshot.cluster import (
    ROOT_QUEUE,
    NodeObj,
    Outside,
    PodGroupObj,
    PodObj,
    QueueObj,
    QueueSums,
)
from vc_scheduler.ledger import PodState, View, queue_chain
from vc_scheduler.shard_records import EPSILON, OtherShards, ShardTally

TERMINAL = frozenset({"Succeeded", "Failed"})
OCCUPYING = frozenset({"Pending", "Running"})
ONE_POD = Fraction(1)  # a pod's `pods` request
Amounts = dict[str, float]
_NONE: Mapping[str, int] = MappingProxyType({})  # no pods by task status (read only, shared)
MAX_ASKS = 65_536  # distinct requests dicts whose amounts the index keeps (ClusterIndex._asks)
V = TypeVar("V")


def podgroup_key(pod: PodObj) -> str | None:
    """The pod's PodGroup key, one string object for all its pods (the index keeps it per pod twice)."""
    group = pod.group_name
    return shared(f"{pod.namespace}/{group}") if group else None


def task_status(phase: str, deleting: bool, placed: bool) -> str:
    """A pod's task status as a session starts (Volcano's TaskStatus, lower case, as its label says)."""
    if deleting:
        return "releasing"
    if phase in ("Succeeded", "Failed", "Running", "Unknown"):
        return phase.lower()
    return "bound" if placed else "pending"


def _status(pod: PodObj) -> str:
    return task_status(pod.phase, pod.deleting, bool(pod.node_name))


class GroupFigures(msgspec.Struct, frozen=True, gc=False):  # one per PodGroup per refresh: built fastest
    """What the state gauges read of one PodGroup (read only: the index's own dicts)."""

    key: str
    pg: PodGroupObj | None
    request: Amounts
    allocated: Amounts
    placed: int  # pods counted in `allocated`
    waiting: int  # pods pending and unbound
    statuses: Mapping[str, int]  # its pods by task status


def _floats(requests: Mapping[str, Fraction]) -> Amounts:
    return {name: value.numerator / value.denominator for name, value in requests.items() if name != PODS}


def _all_floats(requests: Mapping[str, Fraction]) -> Amounts:
    """Requests as floats, `pods` included (what a pod occupies in a capped queue)."""
    return {name: value.numerator / value.denominator for name, value in requests.items()}


def _add(into: Amounts, amounts: Mapping[str, float], sign: float) -> None:
    for name, value in amounts.items():
        into[name] = into.get(name, 0.0) + sign * value


def is_placed(pod: PodObj) -> bool:
    """Volcano's allocated statuses as the store shows them: bound or running, not leaving."""
    return bool(pod.node_name) and pod.phase in OCCUPYING and not pod.deleting


def is_asked(pod: PodObj) -> bool:
    """Counted in its job's request: placed, or pending and unbound."""
    return is_placed(pod) or (pod.phase == "Pending" and not pod.deleting and not pod.node_name)


@dataclass(slots=True)
class _Group:
    """One PodGroup's sums (the queue plugins' _opening_sums over its stored pods)."""

    request: Amounts = field(default_factory=dict)
    allocated: Amounts = field(default_factory=dict)
    placed: int = 0  # pods counted in `allocated`
    asked: int = 0  # pods counted in `request`
    reserved: Amounts = field(default_factory=dict)  # the unplaced minResources of an admitted PodGroup
    pg: PodGroupObj | None = None


@dataclass(slots=True)
class _Usage:
    used: Amounts = field(default_factory=dict)
    pods: int = 0


class ClusterIndex:
    def __init__(self) -> None:
        self.pods_on: dict[str, dict[str, None]] = {}  # node -> keys of the pods on it (assumed included)
        self.pods_of: dict[str, dict[str, None]] = {}  # PodGroup key -> keys of its pods
        # The ledger's view (stored binds only): by uid, and occupying pods by node and by queue chain.
        self.states: dict[str, PodState] = {}
        self._group_uids: dict[str, dict[str, None]] = {}  # PodGroup key -> uids whose state names its queue
        self._uid_group: dict[str, str] = {}  # uid -> its PodGroup key in _group_uids
        self.by_node: dict[str, dict[str, Resources]] = {}
        self.by_queue: dict[str, dict[str, Resources]] = {}
        self._queue_of: dict[str, str] = {}  # PodGroup key -> its queue
        self._parents: dict[str, str] = {}
        self._chains: dict[str, tuple[str, ...]] = {}
        # The queue sums and node usage, and their totals over what other instances own.
        self._groups: dict[str, _Group] = {}
        # pod key -> the stored pod counted in the sums (the amounts it adds: `_amounts(pod)`)
        self._stored: dict[str, PodObj] = {}
        self._usage: dict[str, _Usage] = {}
        # By the identity of a pod's requests dict (the loader gives the pods of a template one: they ask
        # alike), that dict with the amounts the sums add (floats, without `pods`) and the ledger's
        # requests (with `pods`: 1), read only. Held, the dict keeps its id for no other.
        self._asks: dict[int, tuple[Resources, Amounts, Resources]] = {}
        self._nodes: dict[str, NodeObj] = {}
        self._owns_group: Callable[[str], bool] = lambda _key: True
        self._owns_node: Callable[[str], bool] = lambda _name: True
        # Per queue the sums of the own PodGroups held out of the sessions (settle); the other shards'
        # come from their owners' records (`others`).
        self._held_sums: dict[str, tuple[Amounts, Amounts, Amounts]] = {}
        self.tally = ShardTally()  # the own shards' sums, as this instance publishes them
        self.others = OtherShards()  # the other shards' sums, as their owners published them
        self._foreign_allocatable: Amounts = {}
        # What occupies the nodes, apart from what the other shards' records say (`others.used`): the own
        # shards' pods on other instances' nodes, and the other shards' pods on this instance's nodes.
        self._mine_away: Amounts = {}
        self._theirs_home: Amounts = {}
        self._shards: frozenset[int] = frozenset(range(SHARDS))  # the shards this instance owns
        self._bare_shards: dict[str, int] = {}  # pod key -> its shard, for a pod that names no PodGroup
        self._statuses: dict[str, dict[str, int]] = {}  # PodGroup key -> its stored pods by task status
        # Own PodGroups held out of the sessions while settled (settle); their sums count outside.
        self.held: set[str] = set()
        self.waiting: set[str] = set()  # those of them Inqueue with no pod yet (a session calls them unschedulable)
        self._stirred: set[str] = set()  # PodGroup keys whose figures moved since the last `wake`

    # -- where pods are (the cycle's side: assumed binds count) ---------------------------------------
    def place(self, key: str, old: PodObj | None, pod: PodObj | None) -> None:
        """The pod as the cache holds it now (None: gone) in place of `old`, the object it held before
        (None: none): its node and PodGroup entries. The cache passes what it replaced, so the index
        keeps no per-pod record of where it put each pod (a million entries at the seeds' scale)."""
        node = pod.node_name if pod is not None else ""
        old_node = old.node_name if old is not None else ""
        if old_node != node:
            if old_node:
                _drop(self.pods_on, old_node, key)
            if node:
                self.pods_on.setdefault(node, {})[key] = None
        if old is not None and pod is not None and old.group_name == pod.group_name and old.namespace == pod.namespace:
            return  # (its PodGroup is the same: most changes, a bind or a start)
        old_group = (podgroup_key(old) or "") if old is not None else ""
        group = (podgroup_key(pod) or "") if pod is not None else ""
        if old_group != group:
            if old_group:
                _drop(self.pods_of, old_group, key)
            if group:
                self.pods_of.setdefault(group, {})[key] = None

    # -- stored objects ----------------------------------------------------------------------------
    def stored_pod(self, key: str, pod: PodObj | None, shard: int | None = None) -> None:
        """A pod as stored (None: deleted): the ledger's view, the queue sums, the node usage. `shard`: the
        shard its store key names (a pod of a PodGroup is in its PodGroup's; one that names none, in the
        shard of the PodGroup the podgroup controller will give it, which only its key tells)."""
        if shard is not None and 0 <= shard < SHARDS and pod is not None and not pod.group_name:
            self._bare_shards[key] = shard
        old = self._stored.pop(key, None)
        old_amounts = self._amounts(old) if old is not None else None
        if old is not None and old_amounts is not None and pod is not None and _same_pod(old, pod):
            self._stored[key] = pod
            if pod.node_name != old.node_name or pod.phase != old.phase or pod.deleting != old.deleting:
                self._moved(key, old, pod, old_amounts)
                was, now = _status(old), _status(pod)
                if was != now:  # the same PodGroup (_same_pod): its key only when a count moves
                    group = podgroup_key(pod)
                    if group is not None:
                        self._count_status(group, was, -1)
                        self._count_status(group, now, 1)
            return  # (else a status or label change: nothing counted moves)
        self._restatus(old, pod)
        amounts: Amounts | None = None
        requests: Resources | None = None
        if pod is not None:
            amounts, requests = self._asked_of(pod.requests)
            self._stored[key] = pod
        self._use(key, old, old_amounts, -1.0)
        self._use(key, pod, amounts, 1.0)
        self._ask(old, old_amounts, pod, amounts)
        self._state(old, pod, requests)
        if pod is None:
            self._bare_shards.pop(key, None)

    def _amounts(self, pod: PodObj) -> Amounts:
        """What a stored pod adds to the sums: its requests as floats, without `pods` (the same floats
        each time they are worked out, so what was added is what is taken off)."""
        return self._asked_of(pod.requests)[0]

    def _asked_of(self, requests: Resources) -> tuple[Amounts, Resources]:
        held = self._asks.get(id(requests))
        if held is not None and held[0] is requests:
            return held[1], held[2]
        if len(self._asks) >= MAX_ASKS:  # of pods whose requests are their own (several containers)
            self._asks.clear()
        amounts, with_pods = _floats(requests), {**requests, PODS: ONE_POD}
        self._asks[id(requests)] = (requests, amounts, with_pods)
        return amounts, with_pods

    def _moved(self, key: str, old: PodObj, pod: PodObj, amounts: Amounts) -> None:
        """The same pod (uid, PodGroup, requests) bound, moved on in its phase or leaving: what most
        changes are (every bind of the cluster), so it moves its counts without re-deriving what stays."""
        if old.node_name != pod.node_name or (old.phase in OCCUPYING) != (pod.phase in OCCUPYING):
            self._use(key, old, amounts, -1.0)
            self._use(key, pod, amounts, 1.0)
        group = podgroup_key(pod)
        if group is not None:
            was, now = is_asked(old), is_asked(pod)
            if was and now:
                placed = int(is_placed(pod)) - int(is_placed(old))
                if placed:
                    self._shift(group, None, amounts, placed)
            elif was:
                self._shift(group, amounts, amounts if is_placed(old) else None, -1)
            elif now:
                self._shift(group, amounts, amounts if is_placed(pod) else None, 1)
        state = self.states.get(pod.uid)
        terminal = pod.phase in TERMINAL
        if state is not None and (state.node != pod.node_name or state.terminal != terminal):
            self._restate(pod.uid, PodState(pod.node_name, terminal, state.requests, state.queue))

    def _restatus(self, old: PodObj | None, new: PodObj | None) -> None:
        """Move a pod between its PodGroups' counts by task status (old None: new; new None: gone)."""
        was = (podgroup_key(old), _status(old)) if old is not None else (None, "")
        now = (podgroup_key(new), _status(new)) if new is not None else (None, "")
        if was == now:
            return
        if was[0] is not None:
            self._count_status(was[0], was[1], -1)
        if now[0] is not None:
            self._count_status(now[0], now[1], 1)

    def _count_status(self, group: str, status: str, sign: int) -> None:
        self._stirred.add(group)
        figures = self._groups.get(group)
        if figures is not None and figures.pg is not None and self._owns_group(group):
            self.tally.status(shard_of_key(group), figures.pg.queue, {status: 1}, sign)
        counts = self._statuses.setdefault(group, {})
        left = counts.get(status, 0) + sign
        if left:
            counts[status] = left
            return
        counts.pop(status, None)
        if not counts:
            del self._statuses[group]

    def gauge_groups(self) -> Iterable[GroupFigures]:
        """Every PodGroup of this instance's shards with stored pods or a stored object, as the state
        gauges read it (on the event loop: the figures are the index's own dicts). The other shards' come
        from their owners' records (`others`)."""
        statuses_of, owns = self._statuses, self._owns_group
        for key, group in self._groups.items():
            if owns(key):
                waiting = group.asked - group.placed
                statuses = statuses_of.get(key, _NONE)
                yield GroupFigures(key, group.pg, group.request, group.allocated, group.placed, waiting, statuses)
        for key, statuses in statuses_of.items():
            if key not in self._groups and owns(key):
                yield GroupFigures(key, None, {}, {}, 0, 0, statuses)

    def allocated_of(self, key: str) -> Amounts:
        """The requests of the PodGroup's placed pods (read only: the index's own dict; empty for one it
        does not know)."""
        group = self._groups.get(key)
        return group.allocated if group is not None else {}

    def pending(self, key: str) -> tuple[str, Amounts] | None:
        """For a pod stored pending and unbound in a PodGroup: that PodGroup's key and the pod's amounts
        (what a bind of it moves from asked to placed); None for any other."""
        held = self._stored.get(key)
        if held is None or not is_asked(held) or is_placed(held):
            return None
        group = podgroup_key(held)
        return (group, self._amounts(held)) if group is not None else None

    def stored_podgroup(self, key: str, pg: PodGroupObj | None) -> None:
        self._stirred.add(key)
        group = self._groups.get(key)
        if group is None:
            if pg is None:
                return
            group = self._groups[key] = _Group()
        self._count_group(key, group, -1.0)
        group.pg = pg
        self._count_group(key, group, 1.0)
        if pg is None and not group.asked:
            del self._groups[key]
        queue = pg.queue if pg is not None else ""
        if self._queue_of.get(key, "") != queue:
            if queue:
                self._queue_of[key] = queue
            else:
                self._queue_of.pop(key, None)
            for uid in list(self._group_uids.get(key, ())):
                state = self.states.get(uid)
                if state is not None:
                    self._restate(uid, PodState(state.node, state.terminal, state.requests, queue))

    def stored_node(self, name: str, node: NodeObj | None) -> None:
        old = self._nodes.pop(name, None)
        foreign = not self._owns_node(name)
        if old is not None and foreign:
            _add(self._foreign_allocatable, _floats(old.allocatable), -1.0)
        if node is not None:
            self._nodes[name] = node
            if foreign:
                _add(self._foreign_allocatable, _floats(node.allocatable), 1.0)

    def queues(self, queues: Iterable[QueueObj]) -> None:
        """The queue tree (the ledger counts a pod under its queue's ancestors)."""
        parents = {q.name: q.parent or ROOT_QUEUE for q in queues if q.name != ROOT_QUEUE}
        if parents == self._parents:
            return
        self._parents, self._chains = parents, {}
        self._by_queue_anew()

    # -- ownership ---------------------------------------------------------------------------------
    def regroup(
        self, owns_group: Callable[[str], bool], owns_node: Callable[[str], bool], shards: frozenset[int]
    ) -> None:
        """Which PodGroups (those of `shards`) and nodes this instance owns changed (the members did):
        count the own shards anew, every record of theirs to be written again (what is stored may be
        another owner's), and recount the totals over the others' nodes (a walk over PodGroups and
        nodes, once per change of members)."""
        self._owns_group, self._owns_node = owns_group, owns_node
        self.held = set()  # (the PodGroups it held may be another's now; the sessions settle them again)
        self.waiting = set()
        self._held_sums = {}
        self._shards = shards
        self.tally = ShardTally()
        self.count_shards(self.tally, shards, owns_node)
        self._by_queue_anew()
        for shard in shards:
            self.tally.rewrite(shard, self.others.stored(shard))
        self.others.own(shards)
        self._foreign_allocatable, self._mine_away, self._theirs_home = {}, {}, {}
        for name, node in self._nodes.items():
            if not owns_node(name):
                _add(self._foreign_allocatable, _floats(node.allocatable), 1.0)
        for key, pod in self._stored.items():
            if pod.node_name and pod.phase in OCCUPYING:
                self._split_use(pod.node_name, self.shard_of(key, pod), self._amounts(pod), 1.0)

    # -- settled PodGroups held out of the sessions ---------------------------------------------------
    def wake(self) -> None:
        """A share snapshot is being taken: every held PodGroup whose figures moved since the last one
        (a pod came, went, moved on, or the PodGroup changed) is in the sessions again."""
        stirred, self._stirred = self._stirred, set()
        for key in stirred & self.held:
            self.held.discard(key)
            self.waiting.discard(key)
            group = self._groups.get(key)
            if group is not None:
                self._to_held(group, -1.0)

    def settle(self, reported: Iterable[str]) -> None:
        """After a session over the PodGroups `reported` (their statuses offered to the writer): hold out
        those of them that are settled and whose figures did not move since its snapshot (`wake`). A
        settled PodGroup is Running with every pod it has stored Running on its node and counted, at
        least its minMember; Completed with every pod succeeded; or Inqueue with no pod yet, waiting for
        its controller to create them. A session has nothing to place for it and would say of it what
        the last one said, so it is held out, its sums (and an Inqueue one's reservation) counted outside
        the share like another instance's, until any of its figures moves."""
        stirred, statuses, groups = self._stirred, self._statuses, self._groups
        for key in reported:
            if key in stirred or key in self.held:
                continue
            group = groups.get(key)
            if group is None or not _settled(group, statuses.get(key)) or not self._owns_group(key):
                continue
            self.held.add(key)
            if group.pg is not None and group.pg.phase == "Inqueue":
                self.waiting.add(key)
            self._to_held(group, 1.0)

    def outside(self) -> Outside:
        """What the PodGroups and nodes other instances own add up to, with the own PodGroups held out
        of the sessions (cluster.Outside)."""
        queues: dict[str, tuple[Amounts, Amounts, Amounts]] = {
            queue: (dict(request), dict(allocated), dict(reserved))
            for queue, (request, allocated, reserved) in self._held_sums.items()
        }
        for queue, totals in self.others.queues.items():
            sums = queues.get(queue)
            if sums is None:
                sums = queues[queue] = ({}, {}, {})
            _add(sums[0], totals.request, 1.0)
            _add(sums[1], totals.allocated, 1.0)
            _add(sums[2], totals.reserved, 1.0)
        used = dict(self.others.used)
        _add(used, self._mine_away, 1.0)
        _add(used, self._theirs_home, -1.0)
        for node, pods in self.others.nodes_away():  # (the others' pods on its nodes it is not sent)
            if self._owns_node(node):
                for key, pod in pods.items():
                    if key not in self._stored:
                        _add(used, pod.used, -1.0)
        return Outside(
            dict(self._foreign_allocatable),
            used,
            {queue: QueueSums(*sums) for queue, sums in queues.items()},
        )

    def concerns(self, kind: str, key: str, old: Any, new: Any) -> bool:
        """Whether a change touches this instance's share: a pod of its PodGroups or on its nodes, one of
        its PodGroups or nodes, or any other kind (queues, priority classes, quotas: every share reads
        them). Other instances' changes only move the sums outside the share, which a cycle needs no
        sooner than for one of its own changes (or the idle gate's periodic cycle)."""
        if kind == "Pod":
            return self._concerns_pod(old) or self._concerns_pod(new)
        if kind == "PodGroup":
            return self._owns_group(key)
        if kind == "Node":
            return self._owns_node(key)
        return True

    def _concerns_pod(self, pod: PodObj | None) -> bool:
        return pod is not None and self.concerns_place(pod.node_name, podgroup_key(pod))

    def concerns_place(self, node: str, group: str | None) -> bool:
        """Whether a pod on `node` ("": none) of PodGroup `group` is in this instance's share."""
        if node and self._owns_node(node):
            return True
        return group is not None and self._owns_group(group)

    def usage(self, node: str) -> tuple[Amounts, int]:
        """A node's usage by stored pods (requests without `pods`), and how many pods occupy it."""
        usage = self._usage.get(node)
        return (dict(usage.used), usage.pods) if usage is not None else ({}, 0)

    def view(self, *, gone: frozenset[str], live: frozenset[str], instance: str, epoch: int) -> View:
        """The ledger's view, live: it follows the cache as changes arrive (read it on the event loop, or
        by key look-ups only)."""
        return View(
            pods=self.states,
            gone=gone,
            live=live,
            instance=instance,
            epoch=epoch,
            by_node=self.by_node,
            by_queue=self.by_queue,
            elsewhere=self.elsewhere,
            landed=self._landed,
        )

    def _landed(self, node: str) -> frozenset[str]:
        return frozenset(pod.uid for pod in self.others.pods_away_on(node).values())

    def away_on(self, node: str, gone: Container[str]) -> dict[str, PodObj]:
        """The other shards' pods on `node` that this instance does not hold, by key, as their owners'
        `away` records list them (gone: uids seen deleted, left out): pods that occupy the node and
        nothing more (no labels, PodGroup or priority). Sent only its own shards' pods, a node's owner
        sees the others' pods there this way."""
        out: dict[str, PodObj] = {}
        for key, away in self.others.pods_away_on(node).items():
            if key in self._stored or away.uid in gone:
                continue
            requests = {n: Fraction(v).limit_denominator(1000) for n, v in away.used.items()}
            out[key] = occupant(key, away.uid, node, requests, "Running")
        return out

    def counts(self, uid: str, shards: frozenset[int]) -> bool:
        """Whether the pod is one the records of `shards` (this instance's) count in its queue: stored
        bound, not finished, of a PodGroup of those shards."""
        state, group = self.states.get(uid), self._uid_group.get(uid)
        return (
            state is not None
            and bool(state.node)
            and not state.terminal
            and bool(state.queue)
            and group is not None
            and self._owns_group(group)
            and shard_of_key(group) in shards
        )

    def elsewhere(self, queue: str) -> Resources:
        """What the other shards' pods occupy in `queue` and its descendants, as their owners last
        published it (the placement ledger's count of a capped queue: their pods bound and not finished).
        Exact to a thousandth: the records carry floats, and a capability's amounts are quantities."""
        total: Amounts = {}
        for name, totals in self.others.queues.items():
            if totals.occupied and queue in self._chain(name):
                _add(total, totals.occupied, 1.0)
        return {name: Fraction(value).limit_denominator(1000) for name, value in total.items() if value > EPSILON}

    # -- inside ------------------------------------------------------------------------------------
    def _use(self, key: str, pod: PodObj | None, amounts: Amounts | None, sign: float) -> None:
        """Count a stored pod into (+1) or out of (-1) its node's usage, if it occupies one."""
        if pod is None or amounts is None or not pod.node_name or pod.phase not in OCCUPYING:
            return
        usage = self._usage.get(pod.node_name)
        if usage is None:
            usage = self._usage[pod.node_name] = _Usage()
        _add(usage.used, amounts, sign)
        usage.pods += int(sign)
        if not usage.pods:
            del self._usage[pod.node_name]
        shard = self.shard_of(key, pod)
        if shard is not None and shard in self._shards:
            self.tally.use(shard, amounts, int(sign))
            if not self._owns_node(pod.node_name):
                self.tally.away(shard, pod.node_name, key, pod.uid, amounts, int(sign))
        self._split_use(pod.node_name, shard, amounts, sign)

    def _split_use(self, node: str, shard: int | None, amounts: Amounts, sign: float) -> None:
        """An occupying pod into (+1) or out of (-1) what the records do not say of the nodes."""
        mine, owned = shard is not None and shard in self._shards, self._owns_node(node)
        if mine and not owned:
            _add(self._mine_away, amounts, sign)
        elif not mine and owned:
            _add(self._theirs_home, amounts, sign)

    def shard_of(self, key: str, pod: PodObj) -> int | None:
        """The shard a stored pod is kept under (None: a pod that names no PodGroup, fed without it)."""
        group = podgroup_key(pod)
        return shard_of_key(group) if group is not None else self._bare_shards.get(key)

    def _ask(
        self, old: PodObj | None, old_amounts: Amounts | None, new: PodObj | None, amounts: Amounts | None
    ) -> None:
        """Take a pod's old stored version out of its PodGroup's sums and put its new one in (a pod that
        stays one pod of one PodGroup with the same requests moves by the difference instead: _moved)."""
        old_key = podgroup_key(old) if old is not None and is_asked(old) else None
        if old_key is not None and old_amounts is not None:
            assert old is not None
            self._shift(old_key, old_amounts, old_amounts if is_placed(old) else None, -1)
        new_key = podgroup_key(new) if new is not None and is_asked(new) else None
        if new_key is not None and amounts is not None:
            assert new is not None
            self._shift(new_key, amounts, amounts if is_placed(new) else None, 1)

    def _shift(self, key: str, request: Amounts | None, allocated: Amounts | None, sign: int) -> None:
        """Add (sign 1) or take (-1) one pod's `request` and `allocated` to or from a PodGroup's sums and,
        for another instance's PodGroup, the totals outside the share; then its reservation anew."""
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group()
        self._stirred.add(key)
        sums = None
        tallied = group.pg is not None and self._owns_group(key)
        if group.pg is not None and key in self.held:
            sums = self._held_sums.get(group.pg.queue)
            if sums is None:
                sums = self._held_sums[group.pg.queue] = ({}, {}, {})
        if request is not None:
            _add(group.request, request, sign)
            group.asked += sign
            if sums is not None:
                _add(sums[0], request, sign)
        if allocated is not None:
            _add(group.allocated, allocated, sign)
            group.placed += sign
            if sums is not None:
                _add(sums[1], allocated, sign)
        if tallied:
            assert group.pg is not None
            shard = shard_of_key(key)
            self.tally.count(
                shard,
                group.pg.queue,
                request or {},
                allocated or {},
                int(request is not None),
                int(allocated is not None),
                sign,
                namespace=key.partition("/")[0],
            )
        reserved = _reservation(group)
        if reserved != group.reserved:
            if sums is not None:
                _add(sums[2], group.reserved, -1.0)
                _add(sums[2], reserved, 1.0)
            if tallied:
                assert group.pg is not None
                self.tally.reserve(shard, group.pg.queue, group.reserved, -1)
                self.tally.reserve(shard, group.pg.queue, reserved, 1)
            group.reserved = reserved
        if group.pg is None and not group.asked:
            del self._groups[key]

    def _count_group(self, key: str, group: _Group, sign: float) -> None:
        """Take a PodGroup's sums out of (-1) or into (+1) its shard's tally and, held out, the totals
        outside the share (its PodGroup object changes: its queue may); the reservation is recomputed on
        the way in."""
        if sign > 0:
            group.reserved = _reservation(group)
        if key in self.held:
            self._to_held(group, sign)
        if self._owns_group(key):
            _tally_group(self.tally, key, group, self._statuses.get(key, _NONE), int(sign))

    def count_shards(self, tally: ShardTally, shards: frozenset[int], owns_node: Callable[[str], bool]) -> None:
        """Count into `tally` the PodGroups and pods of `shards`, whose owner owns the nodes `owns_node`
        says (a walk over the PodGroups and pods)."""

        def owns(key: str) -> bool:
            return shard_of_key(key) in shards

        for key, pod in self._stored.items():
            shard = self.shard_of(key, pod)
            if shard is None or shard not in shards or not pod.node_name or pod.phase not in OCCUPYING:
                continue
            amounts = self._amounts(pod)
            tally.use(shard, amounts, 1)
            if not owns_node(pod.node_name):
                tally.away(shard, pod.node_name, key, pod.uid, amounts, 1)
        for key, group in self._groups.items():
            if owns(key):
                _tally_group(tally, key, group, self._statuses.get(key, _NONE), 1)
        for key, uids in self._group_uids.items():
            if not owns(key):
                continue
            shard = shard_of_key(key)
            for uid in uids:
                state = self.states.get(uid)
                if state is not None and state.node and not state.terminal and state.queue:
                    tally.occupy(shard, state.queue, _all_floats(state.requests), 1)

    def _to_held(self, group: _Group, sign: float) -> None:
        if group.pg is None:
            return  # no queue yet: a pod may arrive before its PodGroup
        sums = self._held_sums.get(group.pg.queue)
        if sums is None:
            sums = self._held_sums[group.pg.queue] = ({}, {}, {})
        _add(sums[0], group.request, sign)
        _add(sums[1], group.allocated, sign)
        _add(sums[2], group.reserved, sign)

    def _state(self, old: PodObj | None, pod: PodObj | None, requests: Resources | None) -> None:
        """The ledger's view of the pod's stored version (`requests`: its requests with `pods`), in place
        of its previous stored version `old`'s."""
        if old is not None and (pod is None or pod.uid != old.uid):
            self._restate(old.uid, None)
        if pod is None:
            return
        group = podgroup_key(pod) or ""
        queue = self._queue_of.get(group, "") if group else ""
        assert requests is not None
        if group and self._uid_group.get(pod.uid) != group:
            if pod.uid in self._uid_group:  # (its PodGroup changed: counted out under the old one first)
                self._restate(pod.uid, None)
            self._group_uids.setdefault(group, {})[pod.uid] = None
            self._uid_group[pod.uid] = group
        self._restate(pod.uid, PodState(pod.node_name, pod.phase in TERMINAL, requests, queue))

    def _restate(self, uid: str, state: PodState | None) -> None:
        old = self.states.get(uid)
        if old == state:
            return
        if old is not None and old.node and not old.terminal:
            _drop(self.by_node, old.node, uid)
            self._occupy(uid, old, -1)
        if state is None:
            self.states.pop(uid, None)
            group = self._uid_group.pop(uid, None)
            if group is not None:
                _drop(self._group_uids, group, uid)
            return
        self.states[uid] = state
        if state.node and not state.terminal:
            self.by_node.setdefault(state.node, {})[uid] = state.requests
            self._occupy(uid, state, 1)

    def _occupy(self, uid: str, state: PodState, sign: int) -> None:
        """An occupying pod into (1) or out of (-1) what its queue and the queue's ancestors hold: by uid
        for a pod of this instance's PodGroups (`by_queue`), and in its shard's tally; another instance's
        pod counts in its owner's records instead (`others`, `elsewhere`)."""
        group = self._uid_group.get(uid)
        if not state.queue or group is None or not self._owns_group(group):
            return
        for queue in self._chain(state.queue):
            if sign > 0:
                self.by_queue.setdefault(queue, {})[uid] = state.requests
            else:
                _drop(self.by_queue, queue, uid)
        self.tally.occupy(shard_of_key(group), state.queue, _all_floats(state.requests), sign)

    def _by_queue_anew(self) -> None:
        """`by_queue` from every occupying pod of this instance's PodGroups (the queue tree or the
        ownership changed)."""
        self.by_queue = {}
        owns, groups = self._owns_group, self._uid_group
        for uid, state in self.states.items():
            group = groups.get(uid)
            if state.node and not state.terminal and state.queue and group is not None and owns(group):
                for queue in self._chain(state.queue):
                    self.by_queue.setdefault(queue, {})[uid] = state.requests

    def _chain(self, queue: str) -> tuple[str, ...]:
        chain = self._chains.get(queue)
        if chain is None:
            chain = self._chains[queue] = queue_chain(queue, self._parents)
        return chain


def occupant(key: str, uid: str, node: str, requests: Resources, phase: str) -> PodObj:
    """A pod of another shard that this instance is not sent, as what occupies `node` and nothing more
    (no labels, PodGroup or priority): what its owner's records or a loan say of it."""
    namespace, _, name = key.partition("/")
    asks = {n: v for n, v in requests.items() if n != PODS}
    return PodObj(name, namespace, uid, {}, {}, "", node, None, "", "", {}, None, (), asks, phase, False)


def _tally_group(tally: ShardTally, key: str, group: _Group, statuses: Mapping[str, int], sign: int) -> None:
    """A PodGroup's sums and its pods by task status into (1) or out of (-1) its shard's, once it has a
    queue."""
    if group.pg is None:
        return
    shard, queue, namespace = shard_of_key(key), group.pg.queue, key.partition("/")[0]
    tally.count(shard, queue, group.request, group.allocated, group.asked, group.placed, sign, namespace=namespace)
    tally.reserve(shard, queue, group.reserved, sign)
    tally.status(shard, queue, statuses, sign)


def _same_pod(old: PodObj, new: PodObj) -> bool:
    """Whether both versions are one pod counted under one PodGroup with the same requests (what may
    differ: where it is, its phase, whether it is leaving)."""
    return old.uid == new.uid and old.group_name == new.group_name and old.requests == new.requests


def _settled(group: _Group, statuses: Mapping[str, int] | None) -> bool:
    """Running, with every stored pod running on its node and counted in the sums (none pending,
    starting, leaving or finished), at least minMember of them; Completed, with every stored pod
    succeeded, at least minMember of them (none counted in the sums); or Inqueue with a gang to wait for
    and no pod stored. A session's word on such a job is its own state's alone (ready, or too few pods
    to be valid), and it has nothing to place."""
    pg = group.pg
    if pg is None:
        return False
    if pg.phase == "Inqueue":  # (while the controller creates the pods, which at scale takes minutes)
        return pg.min_member >= 1 and not statuses and group.asked == group.placed == 0
    if statuses is None or len(statuses) != 1:
        return False
    least = max(pg.min_member, 1)
    if pg.phase == "Running":
        running = statuses.get("running", 0)
        return running == group.placed == group.asked and running >= least
    if pg.phase == "Completed":
        return statuses.get("succeeded", 0) >= least and group.placed == group.asked == 0
    return False


def _reservation(group: _Group) -> Amounts:
    """The queue plugins' reservation of a job: its unplaced minResources, while it is Inqueue, or
    Running with at least minMember pods placed."""
    pg = group.pg
    if pg is None or pg.min_resources is None:
        return {}
    if not (pg.phase == "Inqueue" or (pg.phase == "Running" and group.placed >= pg.min_member)):
        return {}
    out: Amounts = {}
    for name, value in pg.min_resources.items():
        if name == PODS:
            continue
        unplaced = value.numerator / value.denominator - group.allocated.get(name, 0.0)
        if unplaced > 0:
            out[name] = unplaced
    return out


def _drop(index: dict[str, dict[str, V]], name: str, key: str) -> None:
    entry = index.get(name)
    if entry is not None:
        entry.pop(key, None)
        if not entry:
            del index[name]
