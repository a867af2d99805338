"""PURE: the ledger's view of the cluster (ledger.View), kept between cycles and patched to each snapshot.

The view holds every pod's state by uid (its node, whether it is terminal, its requests, its queue) and
the occupying pods indexed by node and by queue. Building it touches every pod; the scheduler's cache
replaces a pod object only when the pod changes, so each cycle only the pods whose object changed,
whose assumed bind came or went, or whose PodGroup moved to another queue are looked at again.

Each cycle publishes a new View: its top-level dicts are copies, and an index entry (a node's or a
queue's pods) that changes is replaced, never changed in place, so a View handed to the binder stays
as it was while the next cycle builds the next one (in another thread).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from vc_core.resources import PODS, Resources
from vc_scheduler.ledger import PodState, View, queue_chain
from vc_scheduling.snapshot.cluster import ROOT_QUEUE, ClusterSnapshot, PodObj

TERMINAL = frozenset({"Succeeded", "Failed"})


def podgroup_key(pod: PodObj) -> str | None:
    group = pod.group_name
    return f"{pod.namespace}/{group}" if group else None


@dataclass(slots=True, eq=False)
class _Pod:
    pod: PodObj
    key: str  # "<namespace>/<name>"
    group: str  # its PodGroup's key, "" when none
    state: PodState
    seen: int


class LedgerViews:
    """Builds each cycle's View from the snapshot, redoing only the pods that changed since the last."""

    def __init__(self) -> None:
        self._stamp = 0
        self._reset()

    def _reset(self) -> None:
        self._pods: dict[str, _Pod] = {}  # by uid
        self._states: dict[str, PodState] = {}  # by uid
        self._uids: dict[str, str] = {}  # pod key -> uid
        self._groups: dict[str, set[str]] = {}  # PodGroup key -> uids of its pods
        self._queue_of: dict[str, str] = {}  # PodGroup key -> queue
        self._parents: dict[str, str] | None = None
        self._chains: dict[str, tuple[str, ...]] = {}
        self._assumed: frozenset[str] = frozenset()
        self._by_node: dict[str, dict[str, Resources]] = {}
        self._by_queue: dict[str, dict[str, Resources]] = {}

    def view(
        self,
        snapshot: ClusterSnapshot,
        *,
        gone: frozenset[str],
        live: frozenset[str],
        instance: str,
        epoch: int,
        assumed: frozenset[str] = frozenset(),
    ) -> View:
        """A node this instance only assumed counts as no node: the ledger judges other instances'
        reservations by the stored binds (an assumed pod is counted through its own reservation)."""
        self._stamp += 1
        parents = {q.name: q.parent or ROOT_QUEUE for q in snapshot.queues if q.name != ROOT_QUEUE}
        if parents != self._parents:
            self._reset()  # every queue chain may differ: start over
            self._parents = parents
        redo: dict[str, PodObj] = {}  # uid -> the pod to look at again
        gone_uids = self._walk(snapshot.pods, redo)
        queue_of = {pg.key: pg.queue for pg in snapshot.podgroups}
        if queue_of != self._queue_of:
            for group, _ in set(queue_of.items()) ^ set(self._queue_of.items()):
                for uid in self._groups.get(group, ()):
                    self._again(uid, redo)
            self._queue_of = queue_of
        for key in assumed ^ self._assumed:
            assumed_uid = self._uids.get(key)
            if assumed_uid is not None:
                self._again(assumed_uid, redo)
        self._assumed = assumed
        nodes: dict[str, dict[str, Resources]] = {}  # the index entries this cycle replaces
        queues: dict[str, dict[str, Resources]] = {}
        for uid in gone_uids:
            self._withdraw(uid, nodes, queues)
            entry = self._pods.pop(uid)
            self._states.pop(uid, None)
            if self._uids.get(entry.key) == uid:
                del self._uids[entry.key]
            if entry.group:
                self._leave(entry.group, uid)
        for uid, pod in redo.items():
            self._withdraw(uid, nodes, queues)
            self._place(uid, pod, nodes, queues)
        self._by_node.update(nodes)
        self._by_queue.update(queues)
        return View(
            pods=dict(self._states),
            gone=gone,
            live=live,
            instance=instance,
            epoch=epoch,
            by_node={node: pods for node, pods in self._by_node.items() if pods},
            by_queue={queue: pods for queue, pods in self._by_queue.items() if pods},
        )

    def _walk(self, pods: Iterable[PodObj], redo: dict[str, PodObj]) -> list[str]:
        """Adds the pods whose object changed (or that are new) to `redo`; the uids of pods gone."""
        stamp, entries = self._stamp, self._pods
        seen = 0
        for pod in pods:
            entry = entries.get(pod.uid)
            if entry is None or entry.pod is not pod:
                redo[pod.uid] = pod
            if entry is not None and entry.seen != stamp:
                entry.seen = stamp
                seen += 1
        if seen == len(entries):
            return []
        return [uid for uid, entry in entries.items() if entry.seen != stamp]

    def _again(self, uid: str, redo: dict[str, PodObj]) -> None:
        """Look at a pod still in the snapshot again (its queue or its assumed bind changed)."""
        entry = self._pods.get(uid)
        if entry is not None and entry.seen == self._stamp and uid not in redo:
            redo[uid] = entry.pod

    def _withdraw(
        self, uid: str, nodes: dict[str, dict[str, Resources]], queues: dict[str, dict[str, Resources]]
    ) -> None:
        """Take the pod's current state out of the node and queue indexes."""
        state = self._states.get(uid)
        if state is None or not state.node or state.terminal:
            return
        _edit(self._by_node, nodes, state.node).pop(uid, None)
        if state.queue:
            for queue in self._chain(state.queue):
                _edit(self._by_queue, queues, queue).pop(uid, None)

    def _place(
        self, uid: str, pod: PodObj, nodes: dict[str, dict[str, Resources]], queues: dict[str, dict[str, Resources]]
    ) -> None:
        entry = self._pods.get(uid)
        key, group = pod.key, podgroup_key(pod) or ""
        if entry is not None and entry.group != group and entry.group:
            self._leave(entry.group, uid)
        if group:
            self._groups.setdefault(group, set()).add(uid)
        assumed = key in self._assumed
        queue = self._queue_of.get(group, "")
        old = entry.state if entry is not None else None
        if (
            old is not None
            and entry is not None
            and entry.pod is pod
            and old.queue == queue
            and (old.node == ("" if assumed else pod.node_name))
        ):
            state = old
        else:
            state = PodState(
                node="" if assumed else pod.node_name,
                terminal=pod.phase in TERMINAL,
                requests={**pod.requests, PODS: Fraction(1)},
                queue=queue,
            )
        self._pods[uid] = _Pod(pod, key, group, state, self._stamp)
        self._states[uid] = state
        self._uids[key] = uid
        if state.node and not state.terminal:
            _edit(self._by_node, nodes, state.node)[uid] = state.requests
            if state.queue:
                for queue_name in self._chain(state.queue):
                    _edit(self._by_queue, queues, queue_name)[uid] = state.requests

    def _leave(self, group: str, uid: str) -> None:
        members = self._groups.get(group)
        if members is not None:
            members.discard(uid)
            if not members:
                del self._groups[group]

    def _chain(self, queue: str) -> tuple[str, ...]:
        chain = self._chains.get(queue)
        if chain is None:
            chain = self._chains[queue] = queue_chain(queue, self._parents or {})
        return chain


def _edit(
    index: dict[str, dict[str, Resources]], edits: dict[str, dict[str, Resources]], name: str
) -> dict[str, Resources]:
    """The index entry to change this cycle: a copy made on first change (published Views keep theirs)."""
    entry = edits.get(name)
    if entry is None:
        entry = edits[name] = dict(index.get(name, {}))
    return entry
