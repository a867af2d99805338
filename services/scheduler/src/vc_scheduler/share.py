"""PURE (read on the event loop): one scheduler instance's share of the cluster, and the snapshots it plans on.

Several instances run active-active. Every PodGroup and every node has one owner among the live members
(`owner_of`: nodes by rendezvous hashing, as Volcano's multi-scheduler hash mode puts node names on its
ring; PodGroups with the shard their pods are stored under, the shards dealt out evenly), so an instance
plans over its share, and a cycle costs what the share costs:

- the share snapshot: its own nodes with every pod on them (pods of other instances' PodGroups there
  count as occupying, nothing more), its own PodGroups with all their pods, the pods it lent room to
  on its nodes (other instances' binds in flight, lending.py) as if bound there, every queue and the other
  small kinds, and `outside` (cluster.Outside): what the others' nodes and PodGroups add up to, so fair
  share and quotas are the whole cluster's;
- the borrowing snapshot, only for what did not fit: the share snapshot plus the other instances'
  nodes, each shrunk to the capacity its owner says it has left (every pod it sees there, its own binds
  in flight and its loans taken off: loans.LoanDesk.free), so
  a gang larger than the instance's nodes, or a pod whose selector matches only others' nodes, is
  placed (soft partitions, as in Godel). Pods on others' nodes are not seen there: inter-pod affinity
  and topology spread judge other instances' nodes by the pods of this instance's share only.

Each node has one writer: its owner commits there on its own word, and another instance only with a
loan the owner grants after checking actual fit (lending.py).

A share's settled PodGroups (Running with every pod running, Completed with every pod succeeded, or
Inqueue waiting for their controller to create the pods; unchanged since a session reported them) are
held out of its sessions like other instances' (cluster_index.ClusterIndex.settle): their pods stay on
the nodes, their sums count outside. At the seeds' scale nearly every PodGroup is settled (and while
gangs are submitted faster than their pods are created, most are waiting), and a session's work per
job (its plugins' opening and closing walks, the statuses it reports) was most of a cycle's opening;
with them held out it follows the PodGroups that can still change. Only under a conf whose sessions
ask nothing more of a settled job (`holds_settled_out`).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import replace
from fractions import Fraction

import msgspec

from vc_core.ownership import balanced_owners, rendezvous_owner
from vc_core.resources import PODS, Resources
from vc_proto.pod_shards import SHARDS, shard_of_group
from vc_sched_core.framework.conf import SchedulerConf
from vc_sched_core.snapshot.cluster import ClusterSnapshot, NodeObj, PodObj
from vc_scheduler.cluster_index import OCCUPYING, TERMINAL, ClusterIndex, occupant
from vc_scheduler.lending import Lent

# What a session may run while settled PodGroups are held out of it: actions that enqueue and place (an
# evicting one picks its victims among running tasks, which must then be jobs of the session), and
# plugins that ask of other jobs only the queue sums outside the share answer (drf orders the jobs that
# wait by their own shares; proportion and overcommit count the queues' sums; the rest judge nodes).
SETTLED_SAFE_ACTIONS = frozenset({"enqueue", "allocate", "backfill"})
SETTLED_SAFE_PLUGINS = frozenset(
    {"priority", "gang", "conformance", "overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"}
)


def holds_settled_out(conf: SchedulerConf) -> bool:
    """Whether sessions under `conf` decide the same with settled PodGroups held out (hierarchical drf
    ranks queues over every job, so it keeps them all)."""
    options = [option for tier in conf.tiers for option in tier.plugins]
    return (
        set(conf.actions) <= SETTLED_SAFE_ACTIONS
        and all(option.name in SETTLED_SAFE_PLUGINS for option in options)
        and not any(
            option.name == "drf" and {**option.arguments, **option.flags}.get("enableHierarchy") for option in options
        )
    )


def node_owner_key(node: str) -> str:
    """The rendezvous key of a node (apart from PodGroup keys, which are "<namespace>/<name>")."""
    return f"node:{node}"


def owner_of(key: str, members: tuple[str, ...]) -> str | None:
    """Who among `members` owns a key the scheduler's instances share: the one answer the planning
    (Partition) and the writers (the membership's `owns`) both use.

    A PodGroup ("<namespace>/<name>": a colon is in neither) belongs to the owner of the shard its pods
    are stored under (vc_proto.pod_shards), so a PodGroup and its pods go to the same instance. The 64
    shards are dealt out evenly (vc_core.ownership.balanced_owners), as the share with the most shards
    sets the pace. Every other key ("node:", "queue:", "ledger:", "metrics:") by rendezvous hashing."""
    if ":" in key:
        return rendezvous_owner(key, members)
    owners = balanced_owners(SHARDS, members)
    namespace, _, name = key.partition("/")
    return owners[shard_of_group(namespace, name)] if owners else None


class Partition:
    """Which PodGroups and nodes this instance owns (`owner_of` over `members`, the member set it
    announced it plans under), memoised per key while they hold.

    Nodes change owner only between the old owner's cycles. Each instance announces the member set it
    plans under before its first cycle under it, and reads the others' announcements only once its own
    is back on the (totally ordered) stream that carries them (ledger_kv.Ledger.announce). It plans on a
    node it owns under its own set only while no other instance's announced set gives that node to that
    instance (`claims`: every other announcement it has read, whether or not it has seen that instance
    join yet). Of two instances that both take a node, the one that announced later has read the earlier
    one's claim: no node is planned by two owners at once, whatever the order in which joins and leaves
    reach them. An instance that announced nothing yet plans nothing, so it claims nothing; an instance
    that left has its announcement removed (its claim holds its nodes until then)."""

    def __init__(
        self, instance: str, members: tuple[str, ...], claims: Mapping[str, tuple[str, ...]] | None = None
    ) -> None:
        self.instance = instance
        self.members = members
        self.claims = dict(claims or {})
        # The pod shards whose PodGroups it owns (and whose sums it publishes: shard_records.py).
        self.shards = frozenset(
            shard for shard, owner in enumerate(balanced_owners(SHARDS, members)) if owner == instance
        )
        self._memo: dict[str, bool] = {}  # PodGroup key -> owns
        self._nodes: dict[str, bool] = {}  # node name -> owns_node (asked for every pod change the cache follows)
        self._lenders: dict[str, str | None] = {}  # node key -> owner_of_node's answer

    def bound(self, live: int) -> None:
        """Forget the answers when they number more than 4x the `live` keys (at least 1,024): the rest are
        deleted PodGroups' and nodes'."""
        if len(self._memo) > 4 * max(live, 256):
            self._memo = {}
        if len(self._nodes) > 4 * max(live, 256):
            self._nodes = {}
        if len(self._lenders) > 4 * max(live, 256):
            self._lenders = {}

    def owns(self, key: str) -> bool:
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = owner_of(key, self.members) == self.instance
        return hit

    def owns_node(self, name: str) -> bool:
        hit = self._nodes.get(name)
        if hit is None:
            key = node_owner_key(name)
            hit = rendezvous_owner(key, self.members) == self.instance and not any(
                rendezvous_owner(key, theirs) == member for member, theirs in self.claims.items()
            )
            self._nodes[name] = hit
        return hit

    def owner_of_node(self, name: str) -> str | None:
        """The other instance whose announced set gives it `name` (None: none does, or several do while
        their announcements disagree: nobody lends it then)."""
        key = node_owner_key(name)
        hit = self._lenders.get(key, "")
        if hit == "":
            owners = [member for member, theirs in self.claims.items() if rendezvous_owner(key, theirs) == member]
            hit = self._lenders[key] = owners[0] if len(owners) == 1 else None
        return hit

    def alone(self) -> bool:
        """Planning over the whole cluster: alone in its set, and no other member claims a node."""
        return self.members == (self.instance,) and not any(member in theirs for member, theirs in self.claims.items())


class Share:
    """Builds the snapshots of one instance's share from the cache's tables and index."""

    def __init__(
        self,
        tables: Callable[[], ClusterSnapshot],
        pod: Callable[[str], PodObj | None],
        index: ClusterIndex,
        *,
        hold_settled: bool = False,
        gone: Callable[[], Container[str]] = frozenset,
    ) -> None:
        self._tables = tables  # the cache's snapshot of every kind (tuples of its current objects)
        self._gone = gone  # the uids of pods seen deleted
        self._pod = pod  # a pod's whole view by key (the cache holds pods outside the share brief)
        self._index = index
        self._copies: dict[str, tuple[PodObj, str, PodObj]] = {}  # uid -> (pod as stored, node, copy)
        self.hold_settled = hold_settled  # settled PodGroups are held out (holds_settled_out)

    @property
    def held(self) -> int:
        """How many of the share's PodGroups are held out of its sessions while settled."""
        return len(self._index.held)

    def settle(self, reported: ClusterSnapshot) -> None:
        """A session over `reported` offered its statuses: hold out the PodGroups of it that are settled."""
        if self.hold_settled:
            self._index.settle(pg.key for pg in reported.podgroups)

    def snapshot(self, owner: Partition, reserved: Mapping[str, Lent]) -> tuple[ClusterSnapshot, int]:
        """The share snapshot, and how many pods it placed only by another instance's reservation."""
        full = self._tables()
        index = self._index
        index.wake()  # (a held PodGroup that changed is in this session)
        held = index.held
        if owner.alone():
            if held:
                podgroups = tuple(pg for pg in full.podgroups if pg.key not in held)
                full = replace(full, podgroups=podgroups, outside=index.outside())
            return self._alone(full, reserved)
        pod_of = self._pod
        nodes = tuple(n for n in full.nodes if owner.owns_node(n.name))
        groups = tuple(pg for pg in full.podgroups if owner.owns(pg.key) and pg.key not in held)
        keys: dict[str, None] = {}
        for node in nodes:
            keys.update(index.pods_on.get(node.name, {}))
        for pg in groups:
            keys.update(index.pods_of.get(pg.key, {}))
        chosen = [pod for k in keys if (pod := pod_of(k)) is not None]
        # The other shards' pods on its nodes that it is not sent, as their owners list them (a walk over
        # the nodes with such pods only).
        away = [node for node, _ in index.others.nodes_away() if owner.owns_node(node)]
        if away:
            gone = self._gone()
            for node_name in away:
                chosen.extend(index.away_on(node_name, gone).values())
        by_reservation = 0
        copies: dict[str, tuple[PodObj, str, PodObj]] = {}
        for uid, (key, at, requests) in reserved.items():
            if key in keys or not owner.owns_node(at):
                continue
            pod = pod_of(key)
            if pod is None:  # (another shard's pod, not sent to it: what the loan reserved)
                chosen.append(self._lent(uid, key, at, requests, copies))
            elif pod.uid == uid and not pod.node_name:
                chosen.append(self._placed(pod, at, copies))
            else:
                continue
            by_reservation += 1
        self._copies = copies
        chosen.sort(key=_order)
        snapshot = replace(full, nodes=nodes, pods=tuple(chosen), podgroups=groups, outside=index.outside())
        return snapshot, by_reservation

    def _alone(self, full: ClusterSnapshot, reserved: Mapping[str, Lent]) -> tuple[ClusterSnapshot, int]:
        """The whole cluster, with pods a departed instance reserved (a bind maybe still in flight) as if
        bound where it reserved them until the reservation lapses."""
        if not reserved:
            self._copies = {}
            return full, 0
        copies: dict[str, tuple[PodObj, str, PodObj]] = {}
        pods = tuple(
            self._placed(pod, reserved[pod.uid].node, copies) if pod.uid in reserved and not pod.node_name else pod
            for pod in full.pods
        )
        self._copies = copies
        return replace(full, pods=pods), len(copies)

    def borrowing(
        self, share: ClusterSnapshot, owner: Partition, free: Mapping[str, Mapping[str, Resources]]
    ) -> ClusterSnapshot:
        """`share` with the other instances' nodes added at what each has left, as their owners answered
        (`free`: by owner, by node, what each has left; an owner that did not answer lends nothing)."""
        # The share's own pods placed on those nodes are in the session, and their owners counted them
        # in what they see there: their part is given back, or the session would count them twice.
        back: dict[str, dict[str, Fraction]] = {}
        for pod in share.pods:
            if pod.node_name and pod.phase in OCCUPYING and not owner.owns_node(pod.node_name):
                slot = back.setdefault(pod.node_name, {})
                for name, value in pod.requests.items():
                    slot[name] = slot.get(name, Fraction(0)) + value
                slot[PODS] = slot.get(PODS, Fraction(0)) + 1
        others = []
        taken: dict[str, float] = {}  # what the shrinking took off those nodes, in all
        for node in self._tables().nodes:
            lender = owner.owner_of_node(node.name)
            if owner.owns_node(node.name) or lender is None:
                continue  # (a node no single other instance claims has nobody to lend it)
            left = free.get(lender, {}).get(node.name)
            if left is None:
                continue  # (its owner did not answer, or it has no room left)
            shrunk = _shrunk(node, left, back.get(node.name, {}))
            others.append(shrunk)
            for name, value in node.allocatable.items():
                gone = value - shrunk.allocatable.get(name, Fraction(0))
                taken[name] = taken.get(name, 0.0) + gone.numerator / gone.denominator
        outside = share.outside
        if outside is not None:
            # Those nodes are inside now, at what they have left; what was taken off them stays outside,
            # as allocatable and as used, so the cluster's total (fair share, quotas' "the cluster
            # total") and its usage (overcommit) are still the whole cluster's.
            outside = replace(outside, allocatable=taken, used=taken)
        return replace(share, nodes=share.nodes + tuple(others), outside=outside)

    def _lent(
        self, uid: str, key: str, node: str, requests: Resources, copies: dict[str, tuple[PodObj, str, PodObj]]
    ) -> PodObj:
        """A loan's pod that the cache does not hold, as bound where it was lent: the same copy as last
        cycle while the loan is (the carried session state tells a changed pod by identity)."""
        hit = self._copies.get(uid)
        stand_in = occupant(key, uid, node, requests, "Pending")
        if hit is None or hit[1] != node or hit[2] != stand_in:
            hit = (stand_in, node, stand_in)
        copies[uid] = hit
        return hit[2]

    def _placed(self, pod: PodObj, node: str, copies: dict[str, tuple[PodObj, str, PodObj]]) -> PodObj:
        """`pod` as if bound to `node`: the same copy as last cycle while neither changed (the carried
        session state tells a changed pod by identity)."""
        hit = self._copies.get(pod.uid)
        if hit is None or hit[0] is not pod or hit[1] != node:
            hit = (pod, node, msgspec.structs.replace(pod, node_name=node))
        copies[pod.uid] = hit
        return hit[2]


def _shrunk(node: NodeObj, left: Mapping[str, Fraction], back: Mapping[str, Fraction]) -> NodeObj:
    """The node at what its owner says it has left, with `back` (the share's own pods there) added."""
    allocatable = {
        name: min(value, left.get(name, Fraction(0)) + back.get(name, Fraction(0)))
        for name, value in node.allocatable.items()
    }
    max_pods = node.max_pods
    if max_pods is not None:
        max_pods = min(max_pods, int(left.get(PODS, Fraction(0)) + back.get(PODS, Fraction(0))))
    return replace(node, allocatable=allocatable, max_pods=max_pods)


def _order(pod: PodObj) -> int:
    return pod.order


def left_over(snapshot: ClusterSnapshot, binds: Mapping[str, str]) -> frozenset[str]:
    """Admitted PodGroups (Inqueue or Running) of the snapshot with pods still waiting for a node after
    `binds`, and enough pods for their gang: what the share could not place for want of room. A gang
    with fewer live pods than its minMember (its controller is still creating them) fits nowhere yet,
    and borrowing other instances' nodes for it would be a session over every node for nothing: gang
    validity (Volcano's JobValid) counts every pod not failed, gone or leaving, placed or not."""
    admitted = {pg.key: pg.min_member for pg in snapshot.podgroups if pg.phase in ("Inqueue", "Running")}
    waiting: set[str] = set()
    valid: dict[str, int] = {}  # PodGroup key -> its pods that count toward its gang
    for pod in snapshot.pods:
        group = pod.group_name
        if not group or pod.deleting or pod.phase in ("Failed", "Unknown"):
            continue
        key = f"{pod.namespace}/{group}"
        valid[key] = valid.get(key, 0) + 1
        if key in admitted and not pod.node_name and pod.phase not in TERMINAL and pod.key not in binds:
            waiting.add(key)
    return frozenset(key for key in waiting if valid.get(key, 0) >= admitted[key])
