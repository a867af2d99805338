"""network-topology-aware: a gang inside one network domain (Volcano's network-topology-aware plugin
and allocate's hypernode handling).

A PodGroup's `spec.networkTopology` bounds where its gang may go in the HyperNode tree:
- `hard` (the CRD default): the whole gang inside one hypernode of tier <= `highestTierAllowed`, or it
  waits. The job's hypernode is chosen the lowest tier first (by name within a tier), as the first whose
  nodes' idle resources hold the gang's pending tasks (first fit, vectorised over the nodes); a job with
  tasks already placed stays in the highest allowed hypernode holding them. Its tasks then pass the
  predicate only on that hypernode's nodes. When the gang cannot be placed whole there (taints,
  affinity, resources...), allocate discards the try and asks `next_hypernode`, which sets that
  hypernode aside for the session so the next choice is the next candidate in the same order, up to
  MAX_HYPERNODE_TRIES tries per job and session. When no hypernode of an allowed tier holds the gang,
  every task fails PrePredicate with a sentence naming the tier, and the gang stays whole and pending.
- `soft`: nodes are scored by the tier of their lowest common hypernode with the job's placed tasks,
  Volcano's `100 * (maxTier - tier) / (maxTier - minTier)` (100 inside that hypernode), with ties among
  the best broken by the share of the job's tasks already in the node's hypernode. Hard-mode jobs get the
  same score (Volcano scores both), so their tasks also pack low within the chosen hypernode.

`highestTierAllowed` unset means any tier. With no HyperNodes in the cluster there is no tree to honour
and the plugin leaves every job alone. Argument: `weight` (default 1) multiplies the score.

Where Tephra differs: Volcano's allocate tries the gang in every hypernode of the lowest tier that
holds it and keeps the best-scored try (HyperNodeOrder); here the first candidate (by name) where the
gang is placed whole is kept, candidates the resource first fit rules out are not tried, and at most
MAX_HYPERNODE_TRIES are tried per job and session.
"""

from __future__ import annotations

from typing import ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.interfaces import EventHandler, ExtensionPoint, NodeFailure, PluginArgs
from vc_sched_core.framework.model import READY_STATUSES, JobInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.nodes import NodeTable
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.session_cluster import snapshot_of
from vc_sched_core.plugins.hypernode_tree import HyperNodeTree, build_tree
from vc_sched_core.snapshot.cluster import NetworkTopologyObj

NAME: Final = "network-topology-aware"
HARD: Final = "hard"
SOFT: Final = "soft"
BASE_SCORE: Final = 100.0
_EPSILON: Final = 1e-9
Rows = NDArray[np.intp]
# Hypernodes a hard-mode gang is tried in (placed, then rolled back) per session before it waits: each
# try runs the predicates for the gang's tasks, so a job that fits nowhere costs at most this many tries.
MAX_HYPERNODE_TRIES: Final = 8
# Statuses whose node counts as the job's (placed in an earlier cycle or in this session).
_PLACED: Final = READY_STATUSES | {TaskStatus.PIPELINED, TaskStatus.BINDING}


class NetworkTopologyPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        args = dict(args or {})
        try:
            self.weight = int(args.get("weight", 1))  # type: ignore[call-overload]
        except (TypeError, ValueError):
            self.weight = 1
        self.tree: HyperNodeTree | None = None
        self._nodes: NodeTable | None = None
        self._jobs: dict[str, JobInfo] = {}
        self.chosen: dict[str, int | None] = {}  # job uid -> its hypernode this session (hard mode)
        self.refusals: dict[str, str] = {}  # job uid -> why no hypernode holds it
        self.fresh: dict[str, int] = {}  # job uid -> hypernode chosen by first fit (no task placed yet)
        self.tried: dict[str, list[int]] = {}  # job uid -> hypernodes where a try failed this session

    def on_session_open(self, ssn: Session) -> None:
        self.chosen, self.refusals, self.fresh, self.tried = {}, {}, {}, {}
        self._nodes, self._jobs = ssn.nodes, ssn.jobs
        snapshot = snapshot_of(ssn)
        nodes = ssn.nodes.nodes
        self.tree = build_tree(snapshot.hypernodes, [n.name for n in nodes], [n.obj.labels for n in nodes])
        if self.tree.empty:
            return
        ssn.add_fn(ExtensionPoint.PRE_PREDICATE, NAME, self.pre_predicate)
        ssn.add_fn(ExtensionPoint.PREDICATE, NAME, self.predicate)
        ssn.add_fn(ExtensionPoint.HYPERNODE_RETRY, NAME, self.next_hypernode)
        ssn.add_fn(ExtensionPoint.BATCH_NODE_ORDER, NAME, self.score)
        # A discarded gang gives its hypernode back: the next try in this session chooses afresh.
        ssn.add_event_handler(EventHandler(deallocate=self._released))

    def on_session_close(self, ssn: Session) -> None:
        self.tree, self._nodes, self._jobs = None, None, {}
        self.chosen, self.refusals, self.fresh, self.tried = {}, {}, {}, {}

    # -- hard mode ---------------------------------------------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> str | None:
        job, topology = self._job(task)
        if job is None or topology is None or topology.mode != HARD:
            return None
        if job.uid not in self.chosen:
            self.chosen[job.uid] = self._choose(job, topology)
        return self.refusals.get(job.uid) if self.chosen[job.uid] is None else None

    def next_hypernode(self, job: JobInfo) -> bool:
        """After a failed try of the job's gang (its statement discarded): set the hypernode it was tried in
        aside for this session. True when the job may be tried again (in the next candidate, or to be
        refused with the tier's sentence); False when its hypernode was not a free choice (tasks placed
        earlier hold it) or MAX_HYPERNODE_TRIES tries are spent. Registered at ExtensionPoint.HYPERNODE_RETRY."""
        topology = job.podgroup.network_topology
        if topology is None or topology.mode != HARD:
            return False  # only a hard topology confines a gang to one hypernode
        failed = self.fresh.pop(job.uid, None)
        if failed is None or len(self._placed_rows(job)):
            return False
        tried = self.tried.setdefault(job.uid, [])
        tried.append(failed)
        self.chosen.pop(job.uid, None)
        self.refusals.pop(job.uid, None)
        return len(tried) < MAX_HYPERNODE_TRIES

    def predicate(self, task: TaskInfo, rows: Rows) -> list[NodeFailure]:
        job, topology = self._job(task)
        if job is None or topology is None or topology.mode != HARD or self.tree is None:
            return []
        chosen = self.chosen.get(job.uid)
        if chosen is None:
            return []
        outside = ~self.tree.masks[chosen][rows]
        if not outside.any():
            return []
        name = self.tree.names[chosen]
        return [NodeFailure(outside, f"node is outside hypernode {name}, the job's network topology domain")]

    def _choose(self, job: JobInfo, topology: NetworkTopologyObj) -> int | None:
        tree = self.tree
        assert tree is not None
        highest = topology.highest_tier_allowed
        placed = self._placed_rows(job)
        if len(placed):
            # Volcano: further tasks may go wherever their lowest common hypernode with the placed ones
            # is of an allowed tier, i.e. anywhere in the highest allowed hypernode holding those.
            held = tree.highest_holding(placed, highest)
            if held is None:
                self.refusals[job.uid] = (
                    f"network topology (hard): the job's placed tasks are in no single hypernode of tier <= {highest}"
                )
            return held
        pending = sorted(
            (t for t in job.tasks_in(TaskStatus.PENDING) if not t.best_effort), key=lambda t: (t.index or 0, t.uid)
        )
        needed = max(len(pending) if job.min_available <= 0 else job.min_available - job.ready_task_num(), 1)
        gang = pending[:needed]
        failed = self.tried.get(job.uid, [])
        tried: list[int] = []
        for tier in tree.tier_levels:
            if highest is not None and tier > highest:
                break
            tried.append(tier)
            for index in np.flatnonzero(tree.tiers == tier):
                if int(index) not in failed and self._fits(gang, np.flatnonzero(tree.masks[index])):
                    self.fresh[job.uid] = int(index)
                    return int(index)
        if not tried:
            self.refusals[job.uid] = (
                f"network topology (hard): no hypernode of tier <= {highest} exists (lowest tier {tree.tier_levels[0]})"
            )
        else:
            self.refusals[job.uid] = (
                f"network topology (hard): no hypernode of tier {_tiers_text(tried)} can hold the gang's "
                f"{len(gang)} tasks (highestTierAllowed {highest if highest is not None else 'unset'})"
                + (f"; tried and failed: {', '.join(tree.names[i] for i in failed)}" if failed else "")
            )
        return None

    def _fits(self, gang: list[TaskInfo], rows: Rows) -> bool:
        """First fit of the gang's requests onto the rows' idle resources and pod room."""
        if len(rows) == 0:
            return False
        assert self._nodes is not None
        free = self._nodes.idle[rows].copy()
        room = self._nodes.max_pods[rows] - self._nodes.pod_count[rows]
        for task in gang:
            fits = np.all(free + _EPSILON >= task.resreq, axis=1) & (room >= 1)
            hit = np.flatnonzero(fits)
            if len(hit) == 0:
                return False
            free[hit[0]] -= task.resreq
            room[hit[0]] -= 1
        return True

    def _released(self, task: TaskInfo) -> None:
        self.chosen.pop(task.job, None)
        self.refusals.pop(task.job, None)

    # -- scoring (both modes) ----------------------------------------------------------------------

    def score(self, task: TaskInfo, rows: Rows) -> NDArray[np.float64]:
        scores = np.zeros(len(rows), dtype=np.float64)
        job, topology = self._job(task)
        tree = self.tree
        if job is None or topology is None or tree is None:
            return scores
        placed = self._placed_rows(job)
        if len(placed) == 0:
            return scores
        held = tree.lowest_holding(placed)
        if held is None:
            return scores
        lca = tree.lca_tiers(held, rows)
        low, high = tree.tier_levels[0], tree.tier_levels[-1]
        tier_score = np.zeros(len(rows), dtype=np.float64)
        if high > low:  # Volcano: one tier only scores 0 (except inside the job's own hypernode)
            shared = ~np.isnan(lca)
            tier_score[shared] = BASE_SCORE * (high - lca[shared]) / (high - low)
        tier_score[lca == tree.tiers[held]] = BASE_SCORE
        scores = np.asarray(tier_score * self.weight, dtype=np.float64)
        best = np.flatnonzero(scores == scores.max()) if len(scores) else np.array([], dtype=np.intp)
        if len(best) > 1 and job.tasks:
            scores[best] += self._task_share(job, rows[best], placed) * self.weight
        return scores

    def _task_share(self, job: JobInfo, rows: Rows, placed: Rows) -> NDArray[np.float64]:
        """BASE_SCORE * (the job's placed tasks in each row's lowest hypernode) / the job's tasks."""
        tree = self.tree
        assert tree is not None
        lowest = tree.at_tier[tree.tier_levels[0]]
        owners = lowest[rows]
        counts = np.bincount(lowest[placed][lowest[placed] >= 0], minlength=len(tree.names))
        share = np.where(owners >= 0, counts[np.maximum(owners, 0)], 0)
        return np.asarray(BASE_SCORE * share / len(job.tasks), dtype=np.float64)

    # -- helpers -----------------------------------------------------------------------------------

    def _job(self, task: TaskInfo) -> tuple[JobInfo | None, NetworkTopologyObj | None]:
        job = self._jobs.get(task.job)
        return job, (job.podgroup.network_topology if job is not None else None)

    def _placed_rows(self, job: JobInfo) -> Rows:
        assert self._nodes is not None
        by_name = self._nodes.by_name
        rows = [
            by_name[t.node_name].row
            for status in _PLACED
            for t in job.by_status.get(status, {}).values()
            if t.node_name in by_name
        ]
        return np.array(sorted(set(rows)), dtype=np.intp)


def _tiers_text(tiers: list[int]) -> str:
    return str(tiers[0]) if len(tiers) == 1 else ", ".join(str(t) for t in tiers[:-1]) + f" or {tiers[-1]}"
