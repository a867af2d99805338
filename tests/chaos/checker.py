"""PURE: every invariant Tephra promises, checked over a whole recorded history (not an end state).

The history is replayed change by change, in the order the store acknowledged them, and after each
change the invariants it could break are checked:

- bound-twice: a pod (one uid) is bound to one node, once: never moved, never unbound and bound again.
- node-allocatable: at no point do the pods occupying a node (bound, not Succeeded/Failed; a pod
  being deleted still occupies) ask for more than its allocatable, pod slots included.
- queue-capability: at no point do the pods occupying a queue (and its descendants) ask for more
  than its capability, in each resource the capability names.
- gang-partial: a gang is never *left* placed below minMember. Placed members are the group's pods
  that occupy a node and are not being deleted. Binding a gang and tearing one down both pass
  through 0 < placed < minMember, so that state is allowed for `gang_grace_s` (stated per run: the
  base grace plus the longest fault window), and never at the end of a run. A group with a
  Succeeded member is finishing: its members end at different moments, and that is not a violation.
- job-lost: a job creation admission acknowledged is in the store's history, and no job is deleted
  before it reached a terminal phase. Acknowledged writes lost with a default-fsync crash are allowed
  only when the store kept everything acknowledged before its last sync (see Rollback).
- write-lost: after a server restart every key still holds (at least) the newest revision recorded
  before it; after a rollback, the revision the rollback kept.
- job-dropped: every job the system accepted reaches a terminal phase, or is still progressing at
  the end (it or one of its pods changed within `progress_window_s`); a refused valid job counts too.
- history-gap: the recorder missed a revision, so the checks above would be incomplete.

A violation carries the recorded changes that led to it (oldest first).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from tests.chaos import facts
from tests.chaos.facts import PodFacts
from tests.chaos.history import Change, History, Rollback, Survey
from vc_core.resources import PODS
from vc_proto.subjects import object_key

TRAIL_MAX = 40  # changes printed per violation (the newest ones)


@dataclass(frozen=True, slots=True)
class Rules:
    gang_grace_s: float = 30.0
    progress_window_s: float = 60.0


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    message: str
    trail: tuple[str, ...] = ()

    def render(self) -> str:
        lines = [f"VIOLATION {self.invariant}: {self.message}"]
        lines += [f"    {step}" for step in self.trail[-TRAIL_MAX:]]
        return "\n".join(lines)


@dataclass
class Verdict:
    violations: list[Violation] = field(default_factory=list)
    jobs: int = 0  # jobs the system accepted (seen in the store)
    finished: int = 0  # of them, reached a terminal phase
    progressing: int = 0  # not terminal at the end, but changing
    lost_unsynced: int = 0  # acknowledged, then lost with a default-fsync crash (allowed)
    binds: int = 0
    changes: int = 0
    # How full capped queues got (the load must exceed them): moments a queue was at its capability.
    queue_full_moments: int = 0


def check(history: History, rules: Rules = Rules()) -> Verdict:
    replay = _Replay(rules)
    for record in history.records:
        if isinstance(record, Change):
            replay.apply(record)
        elif isinstance(record, Rollback):
            replay.roll_back(record)
        else:
            replay.survey(record)
    replay.finish(history)
    return replay.verdict


class _Replay:
    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.verdict = Verdict()
        self.applied: dict[str, list[Change]] = defaultdict(list)  # per kind, in order (for rollbacks)
        self.latest: dict[str, dict[str, Change]] = defaultdict(dict)  # per kind and key, deletes included
        self.lost: dict[str, list[Change]] = defaultdict(list)  # changes a rollback took away
        self.trails: dict[tuple[str, str], list[Change]] = defaultdict(list)  # per (kind, key)
        self._reset_pods()
        self.finished_jobs: set[tuple[str, str]] = set()  # (key, uid)
        self.last_job_change: dict[str, float] = {}  # job key -> time it or a pod of it last changed

    def _reset_pods(self) -> None:
        self.pods: dict[str, PodFacts] = {}
        self.bound: dict[str, tuple[str, Change]] = {}  # uid -> (node, the change that bound it)
        self.unbound: set[str] = set()  # uids bound once, then seen unbound
        self.node_use: dict[str, dict[str, PodFacts]] = defaultdict(dict)  # node -> pod key -> facts
        self.queue_use: dict[str, dict[str, PodFacts]] = defaultdict(dict)
        self.members: dict[str, set[str]] = defaultdict(set)  # group key -> pod keys
        self.over: set[str] = set()  # "node:<n>" / "queue:<q>" currently over (reported once per episode)
        self.partial_since: dict[str, Change] = {}

    # -- replay ------------------------------------------------------------------------------------
    def apply(self, change: Change, *, silent: bool = False) -> None:
        previous = self.latest[change.kind].get(change.key)
        if not silent:
            self.verdict.changes += 1
            self.applied[change.kind].append(change)
            self.latest[change.kind][change.key] = change
            trail = self.trails[(change.kind, change.key)]
            trail.append(change)
            del trail[:-TRAIL_MAX]
        if change.kind == "Pod":
            self._pod(change, silent=silent)
        elif change.kind == "Job" and not silent:
            self._job(change, previous)
        elif change.kind == "PodGroup":
            self._check_gang(change.key, change, silent=silent)

    def _live(self, kind: str, key: str) -> Change | None:
        change = self.latest[kind].get(key)
        return change if change is not None and change.op == "put" and change.obj is not None else None

    def _pod(self, change: Change, *, silent: bool) -> None:
        old = self.pods.pop(change.key, None)
        if old is not None:
            self._leave(change.key, old)
        new = facts.pod_facts(change.obj) if change.op == "put" and change.obj is not None else None
        if new is not None:
            self.pods[change.key] = new
            self._enter(change.key, new)
            if not silent:
                self._check_bind(change, new)
        if silent:
            return
        for fact in (old, new):
            if fact is not None and fact.node:
                self._check_room("node", fact.node, self.node_use[fact.node], self._node_capacity(fact.node), change)
            for queue in self._queue_chain(fact.queue) if fact is not None else ():
                self._check_room("queue", queue, self.queue_use[queue], self._queue_capability(queue), change)
        groups = {f.group for f in (old, new) if f is not None and f.group}
        for group in groups:
            self._check_gang(group, change, silent=False)
            job = self._job_of_group(group)
            if job:
                self.last_job_change[job] = change.at

    def _enter(self, key: str, pod: PodFacts) -> None:
        if pod.occupying:
            self.node_use[pod.node][key] = pod
            for queue in self._queue_chain(pod.queue):
                self.queue_use[queue][key] = pod
        if pod.group:
            self.members[pod.group].add(key)

    def _leave(self, key: str, pod: PodFacts) -> None:
        self.node_use[pod.node].pop(key, None)
        for queue in self._queue_chain(pod.queue):
            self.queue_use[queue].pop(key, None)
        if pod.group:
            self.members[pod.group].discard(key)

    # -- bound-twice -------------------------------------------------------------------------------
    def _check_bind(self, change: Change, pod: PodFacts) -> None:
        if not pod.uid:
            return
        first = self.bound.get(pod.uid)
        if not pod.node:
            if first is not None:
                self.unbound.add(pod.uid)
            return
        if first is None:
            self.bound[pod.uid] = (pod.node, change)
            self.verdict.binds += 1
            return
        node, _ = first
        if node != pod.node or pod.uid in self.unbound:
            again = "re-bound to" if node == pod.node else f"bound to {node}, then to"
            self._violate(
                "bound-twice", f"pod {change.key} (uid {pod.uid}) {again} {pod.node}", self.trails[("Pod", change.key)]
            )
            self.bound[pod.uid] = (pod.node, change)
            self.unbound.discard(pod.uid)

    # -- node-allocatable, queue-capability --------------------------------------------------------
    def _node_capacity(self, node: str) -> Mapping[str, Fraction] | None:
        live = self._live("Node", object_key(None, node))
        return facts.node_allocatable(live.obj) if live is not None and live.obj is not None else None

    def _queue_capability(self, queue: str) -> Mapping[str, Fraction] | None:
        live = self._live("Queue", object_key(None, queue))
        return facts.queue_capability(live.obj) if live is not None and live.obj is not None else None

    def _queue_chain(self, queue: str) -> list[str]:
        chain: list[str] = []
        while queue and queue not in chain:
            chain.append(queue)
            live = self._live("Queue", object_key(None, queue))
            queue = facts.queue_parent(live.obj) if live is not None and live.obj is not None else ""
        return chain

    def _check_room(
        self,
        what: str,
        name: str,
        pods: Mapping[str, PodFacts],
        capacity: Mapping[str, Fraction] | None,
        change: Change,
    ) -> None:
        tag = f"{what}:{name}"
        if capacity is None:  # not recorded (yet): nothing to hold it to
            return
        used: dict[str, Fraction] = {}
        for pod in pods.values():
            for resource, amount in pod.requests.items():
                used[resource] = used.get(resource, Fraction(0)) + amount
        # A node has only the resources it lists (a pod-slot count it does not list is not checked); a
        # queue caps only the ones its capability names.
        if what == "node":
            names = [n for n in used if n in capacity or n != PODS]
        else:
            names = [n for n in used if n in capacity]
        over = sorted(n for n in names if used[n] > 0 and used[n] > capacity.get(n, Fraction(0)))
        if what == "queue" and any(used[n] >= capacity[n] for n in names if n != PODS):
            self.verdict.queue_full_moments += 1
        if not over:
            self.over.discard(tag)
            return
        if tag in self.over:
            return
        self.over.add(tag)
        detail = ", ".join(f"{n}: {_fmt(used[n])} > {_fmt(capacity.get(n, Fraction(0)))}" for n in over)
        binds = sorted((self.bound[p.uid][1] for p in pods.values() if p.uid in self.bound), key=lambda c: c.seq)
        trail = binds if any(b is change for b in binds) else [*binds, change]
        invariant = "node-allocatable" if what == "node" else "queue-capability"
        self._violate(
            invariant,
            f"{what} {name} over its {'allocatable' if what == 'node' else 'capability'} "
            f"after {change.key} rev {change.seq} ({detail}; {len(pods)} pods)",
            trail,
        )

    # -- gang-partial ------------------------------------------------------------------------------
    def _check_gang(self, group: str, change: Change, *, silent: bool) -> None:
        live = self._live("PodGroup", group)
        minimum = facts.min_member(live.obj) if live is not None and live.obj is not None else 0
        pods = [self.pods[k] for k in self.members.get(group, ()) if k in self.pods]
        placed = sum(1 for p in pods if p.active_member)
        finishing = any(p.phase == "Succeeded" for p in pods)
        partial = 0 < placed < minimum and not finishing
        since = self.partial_since.get(group)
        if partial and since is None:
            self.partial_since[group] = change
        elif not partial and since is not None:
            del self.partial_since[group]
            if not silent:
                self._check_partial_for(group, since, change.at, ended=True)

    def _check_partial_for(self, group: str, since: Change, until: float, *, ended: bool) -> None:
        lasted = until - since.at
        if lasted <= self.rules.gang_grace_s:
            return
        state = "was placed" if ended else "is still placed"
        members = [c for k in sorted(self.members.get(group, ())) for c in self.trails[("Pod", k)][-3:]]
        unique = {(c.kind, c.seq): c for c in (*self.trails[("PodGroup", group)][-3:], *members)}
        trail = sorted(unique.values(), key=lambda c: c.at)
        self._violate(
            "gang-partial",
            f"gang {group} {state} below minMember for {lasted:.1f} s "
            f"(grace {self.rules.gang_grace_s:.0f} s) from {since.key} rev {since.seq}",
            trail,
        )

    def _job_of_group(self, group: str) -> str:
        live = self._live("PodGroup", group)
        if live is None or live.obj is None:
            return ""
        owners = (live.obj.get("metadata") or {}).get("ownerReferences") or []
        namespace = group.partition(".")[0]
        for owner in owners if isinstance(owners, list) else ():
            if isinstance(owner, Mapping) and owner.get("kind") == "Job":
                return object_key(namespace, str(owner.get("name", "")))
        return ""

    # -- jobs --------------------------------------------------------------------------------------
    def _job(self, change: Change, previous: Change | None) -> None:
        self.last_job_change[change.key] = change.at
        if change.op == "put" and change.obj is not None:
            if facts.job_phase(change.obj) in facts.TERMINAL_JOB_PHASES:
                self.finished_jobs.add((change.key, facts.uid_of(change.obj)))
            return
        was = facts.job_phase(previous.obj) if previous is not None and previous.obj is not None else ""
        if previous is not None and previous.op == "put" and was not in facts.TERMINAL_JOB_PHASES:
            self._violate(
                "job-lost",
                f"job {change.key} deleted in phase {was or 'none'} (before it finished)",
                self.trails[("Job", change.key)],
            )

    # -- rollbacks and surveys ---------------------------------------------------------------------
    def roll_back(self, rollback: Rollback) -> None:
        if rollback.kept < rollback.synced:
            self._violate(
                "write-lost",
                f"{rollback.describe()}: revisions {rollback.kept + 1}..{rollback.synced} were "
                "acknowledged before the last sync and are gone",
                [],
            )
        kept = [c for c in self.applied[rollback.kind] if c.seq <= rollback.kept]
        self.lost[rollback.kind].extend(c for c in self.applied[rollback.kind] if c.seq > rollback.kept)
        self.applied[rollback.kind] = kept
        self.latest[rollback.kind] = {c.key: c for c in kept}
        if rollback.kind == "Job":  # a job that finished only in the lost interval has not finished
            self.finished_jobs = {
                (c.key, facts.uid_of(c.obj))
                for c in kept
                if c.op == "put" and c.obj is not None and facts.job_phase(c.obj) in facts.TERMINAL_JOB_PHASES
            }
        # Everything derived from pods is rebuilt from what the store kept (no violations re-reported).
        self._reset_pods()
        for change in self.applied["Pod"]:
            self.apply(change, silent=True)
            pod = self.pods.get(change.key)
            if pod is not None and pod.node and pod.uid and pod.uid not in self.bound:
                self.bound[pod.uid] = (pod.node, change)
        for group in list(self.members):
            self._check_gang(group, Change("Rollback", 0, group, "put", None, rollback.at), silent=True)

    def survey(self, survey: Survey) -> None:
        for key, change in sorted(self.latest[survey.kind].items()):
            found = survey.newest.get(key, 0)
            if found < change.seq:
                self._violate(
                    "write-lost",
                    f"after {survey.why or 'a restart'} {survey.kind} {key} is at rev {found or 'none'}, "
                    f"but rev {change.seq} was acknowledged",
                    self.trails[(survey.kind, key)],
                )

    # -- the end of the run ------------------------------------------------------------------------
    def finish(self, history: History) -> None:
        for gap in history.gaps:
            where = f" {gap.key}" if gap.key else ""
            self._violate("history-gap", f"the record misses {gap.kind}{where} rev {gap.seq}: {gap.why}", [])
        for group, since in sorted(self.partial_since.items()):
            self._check_partial_for(group, since, history.end_at, ended=False)
        self._check_submissions(history)
        self._check_jobs(history)

    def _check_submissions(self, history: History) -> None:
        def creations(changes: Iterable[Change]) -> set[tuple[str, int]]:
            return {(c.key, c.seq) for c in changes if c.previous == 0 and c.op == "put"}

        kept, lost = creations(self.applied["Job"]), creations(self.lost["Job"])
        for sub in history.submissions:
            if sub.outcome == "refused":
                self._violate("job-refused", f"valid job {sub.key} refused: {sub.detail}", [])
                continue
            if sub.outcome != "acked":
                continue
            if _created(sub.key, sub.revision, kept):
                continue
            if _created(sub.key, sub.revision, lost):
                self.verdict.lost_unsynced += 1
                continue
            self._violate(
                "job-lost",
                f"admission acknowledged job {sub.key} at rev {sub.revision}, "
                "but the store's history never held that revision",
                self.trails[("Job", sub.key)],
            )

    def _every_job_change(self) -> Iterable[Change]:
        yield from self.applied["Job"]
        yield from self.lost["Job"]

    def _check_jobs(self, history: History) -> None:
        for key, change in sorted(self.latest["Job"].items()):
            uid = facts.uid_of(change.obj) if change.op == "put" else facts.uid_of(self._last_put("Job", key))
            self.verdict.jobs += 1
            if (key, uid) in self.finished_jobs:
                self.verdict.finished += 1
                continue
            if change.op == "delete":
                continue  # reported as job-lost when it happened
            phase = facts.job_phase(change.obj or {})
            last = self.last_job_change.get(key, change.at)
            if history.end_at - last <= self.rules.progress_window_s:
                self.verdict.progressing += 1
                continue
            self._violate(
                "job-dropped",
                f"job {key} stuck in phase {phase or 'none'}: nothing of it changed in the "
                f"last {history.end_at - last:.0f} s of the run",
                self.trails[("Job", key)],
            )

    def _last_put(self, kind: str, key: str) -> dict[str, object] | None:
        for change in reversed(self.trails[(kind, key)]):
            if change.op == "put" and change.obj is not None:
                return dict(change.obj)
        return None

    def _violate(self, invariant: str, message: str, trail: Iterable[Change]) -> None:
        steps = tuple(c.describe() for c in trail)
        self.verdict.violations.append(Violation(invariant, message, steps))


def _created(key: str, revision: int, creations: set[tuple[str, int]]) -> bool:
    """Whether `key` was created at `revision`; revision 0 (a retry found the job there, the first
    attempt's answer was lost) matches any creation of the key."""
    return any(k == key for k, _ in creations) if revision == 0 else (key, revision) in creations


def _fmt(value: Fraction) -> str:
    return str(int(value)) if value.denominator == 1 else f"{float(value):g}"
