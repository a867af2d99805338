"""PURE: one writer per node. The room an instance lends on the nodes it owns, and the fit its own
commits there must pass.

Every node has one owner among the scheduler instances (share.Partition). The owner plans on its nodes
and commits there without asking anyone: its cycles see every pod on them, and the binds it hands to
its binder are assumed in its cache at once, so its next cycle and every check below count them.
Another instance places a pod on such a node only with a **loan**: it asks the owner (loans.py) for
the pods it would bind there, and the owner grants them only if they fit now, all or nothing over the
nodes of one ask. Fit counts the node's allocatable against every pod the owner's cache sees occupying
the node, its own binds in flight included, assumed or written and not yet seen stored (stored binds
alone would let it lend the room its own binds are about to take, or have just taken), plus the loans
it granted before. A granted loan counts as occupying the node until the borrower's bind shows in the
owner's cache or in the `away` record the borrower writes of its shard (either then counts the pod
itself, by the same uid), the borrower gives it back, or it lapses by the placement ledger's rules
(ledger.keep: the borrower gone for RECLAIM_DEAD_AFTER_S, or the pod still unbound after
ABANDONED_AFTER_S). A commit of the owner's own is checked against the loans too: one granted after the
cycle that planned the commit read its snapshot may have taken the room.

Both checks are ledger.try_reserve, the placement ledger's fit rule, over an in-memory record per node:
the owner is the only one who decides on its nodes, so nothing is written for them anywhere.

A borrower plans on other instances' nodes at what each has left, as their owners say (`FreeAsk`):
what the owner sees occupying each node, its own binds in flight and the loans it granted included
(`LoanBook.left`), so the borrower asks for room that is there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Final, NamedTuple

import msgspec

from vc_core.resources import Resources
from vc_scheduler import ledger
from vc_scheduler.ledger import Outcome, Record, Reservation, View

MAX_LOAN_PODS: Final = 4096  # pods in one ask (a gang larger than this borrows in no single ask)
MAX_NAME: Final = 512  # a pod key ("<namespace>/<name>") or node name in an ask
MAX_FREE_NODES: Final = 8192  # nodes in one answer of what is left (well inside the bus's 1 MB payload)


class Lent(NamedTuple):
    """A loan whose pod the owner does not see bound yet: the pod's key, its node, and what it reserved
    there (`pods` included): the owner may hold no copy of the pod, which is another shard's."""

    pod: str
    node: str
    requests: Resources


class LoanPod(msgspec.Struct, frozen=True, array_like=True):
    uid: str
    pod: str  # "<namespace>/<name>"
    node: str
    requests: dict[str, str]  # exact amounts as text (ledger.reservation's form), `pods` included


class LoanAsk(msgspec.Struct, frozen=True, tag="ask"):
    """A borrower asks the owner for room for these pods, all or nothing."""

    borrower: str
    epoch: int
    pods: list[LoanPod]


class LoanReturn(msgspec.Struct, frozen=True, tag="return"):
    """A borrower gives back what it will not bind (its gang failed elsewhere, a bind failed)."""

    borrower: str
    uids: list[str]


class FreeAsk(msgspec.Struct, frozen=True, tag="free"):
    """A borrower asks an owner what each of its nodes has left, for a borrowing session."""

    borrower: str


LoanMessage = LoanAsk | LoanReturn | FreeAsk


class NodeLeft(msgspec.Struct, frozen=True, array_like=True):
    node: str
    left: dict[str, str]  # exact amounts as text (ledger.reservation's form), `pods` slots included


class FreeAnswer(msgspec.Struct, frozen=True):
    """The owner's nodes with room left (a node with none is not listed)."""

    nodes: list[NodeLeft]


def free_answer(left: Mapping[str, Resources]) -> FreeAnswer:
    """What is left per node, as an owner answers it: nodes with room in something, at most MAX_FREE_NODES."""
    nodes = [
        NodeLeft(node, {name: str(value) for name, value in sorted(amounts.items())})
        for node, amounts in left.items()
        if any(value > 0 for value in amounts.values())
    ]
    return FreeAnswer(nodes[:MAX_FREE_NODES])


def read_free(answer: FreeAnswer) -> dict[str, Resources] | None:
    """What is left per node from an owner's answer; None for one that breaks a bound or a form."""
    if len(answer.nodes) > MAX_FREE_NODES:
        return None
    out: dict[str, Resources] = {}
    for entry in answer.nodes:
        if not 0 < len(entry.node) <= MAX_NAME or not ledger.valid_requests(entry.left):
            return None
        out[entry.node] = {name: Fraction(value) for name, value in entry.left.items()}
    return out


class LoanAnswer(msgspec.Struct, frozen=True):
    granted: bool
    reason: str = ""  # why not, for the borrower's log


def loan_pods(binds: Iterable[tuple[str, str, str]], requests: Mapping[str, Mapping[str, Fraction]]) -> list[LoanPod]:
    """The ask's pods from (uid, pod key, node) and the pods' requests by uid (each takes a `pods` slot)."""
    out = []
    for uid, pod, node in binds:
        made = ledger.reservation(pod, requests.get(uid, {}), instance="", epoch=0, at=0.0)
        out.append(LoanPod(uid, pod, node, made.requests))
    return out


def invalid(ask: LoanAsk) -> str | None:
    """Why an ask cannot be weighed (bounded sizes, amounts in the ledger's exact form); None if it can."""
    if not 0 < len(ask.pods) <= MAX_LOAN_PODS:
        return f"pods: between 1 and {MAX_LOAN_PODS} per ask"
    if len({p.uid for p in ask.pods}) != len(ask.pods):
        return "pods: a uid is asked for twice"
    for p in ask.pods:
        if not (0 < len(p.uid) <= MAX_NAME and 0 < len(p.pod) <= MAX_NAME and 0 < len(p.node) <= MAX_NAME):
            return "pods: uid, pod and node must be non-empty and at most 512 characters"
        if not ledger.valid_requests(p.requests):
            return f"pods[{p.pod}].requests: exact non-negative amounts"
    return None


class LoanBook:
    """The loans an owner granted on its nodes, one ledger record per node (kept in memory)."""

    def __init__(self) -> None:
        self._records: dict[str, Record] = {}

    def grant(
        self,
        ask: LoanAsk,
        capacities: Mapping[str, Mapping[str, Fraction]],
        occupying: Callable[[str], Mapping[str, Resources]],
        view: View,
        now: float,
    ) -> LoanAnswer:
        """Grant the ask if every node takes its pods (`capacities`: the asked nodes this owner may lend
        on, by name; `occupying`: by node, what the owner sees there, its own binds in flight included);
        nothing is granted otherwise."""
        by_node: dict[str, dict[str, Reservation]] = {}
        for p in ask.pods:
            made = Reservation(p.pod, ask.borrower, ask.epoch, now, p.requests)
            by_node.setdefault(p.node, {})[p.uid] = made
        records: dict[str, Record] = {}
        for node, new in by_node.items():
            capacity = capacities.get(node)
            if capacity is None:
                return LoanAnswer(False, f"node {node!r} is not the owner's to lend")
            outcome = self._weigh(node, new, capacity, occupying(node), view, now)
            if outcome.record is None:
                return LoanAnswer(False, f"node {node!r} has no room for them: {', '.join(outcome.over)}")
            records[node] = outcome.record
        self._records.update(records)
        return LoanAnswer(True)

    def fits(
        self,
        node: str,
        new: Mapping[str, Reservation],
        capacity: Mapping[str, Fraction],
        occupying: Mapping[str, Resources],
        view: View,
        now: float,
    ) -> tuple[str, ...]:
        """The resources `node` would run out of if the owner's own reservations `new` went beside what
        it sees there (`occupying`: its own binds in flight included, as assumed in its cache, so they
        are not kept here) and what it lent; empty when they fit."""
        return self._weigh(node, new, capacity, occupying, view, now).over

    def left(
        self,
        node: str,
        capacity: Mapping[str, Fraction],
        occupying: Mapping[str, Resources],
        view: View,
        now: float,
    ) -> Resources:
        """What `node` has left of `capacity` beside what the owner sees there (`occupying`, its own binds
        in flight included) and the loans it granted."""
        used = ledger.usage(self._current(node, view, now), occupying)
        return {name: max(value - used.get(name, Fraction(0)), Fraction(0)) for name, value in capacity.items()}

    def give_back(self, borrower: str, uids: Iterable[str]) -> None:
        """Drop `borrower`'s loans of these pods (another borrower's stay)."""
        drop = frozenset(uids)
        for node, record in list(self._records.items()):
            mine = [uid for uid in drop & record.reservations.keys() if record.reservations[uid].instance == borrower]
            if mine:
                self._keep(node, ledger.release(record, mine))

    def lends_on(self, node: str) -> bool:
        """Whether any loan is recorded on `node` (only then can one have taken the owner's room)."""
        return node in self._records

    def lent(self, view: View, now: float) -> dict[str, Lent]:
        """By pod uid, the loans whose pods the owner does not see bound yet (in its cache, or in the
        borrower's `away` record: View.landed): its cycles count them as placed there. Lapsed loans are
        dropped on the way."""
        out: dict[str, Lent] = {}
        for node in list(self._records):
            for uid, res in self._current(node, view, now).reservations.items():
                state = view.pods.get(uid)
                if state is None or not (state.node or state.terminal):
                    out[uid] = Lent(res.pod, node, res.resources())
        return out

    def outstanding(self, view: View, now: float) -> int:
        """Loans whose binds the owner has not seen yet: a node may change owner only once there are none."""
        return len(self.lent(view, now))

    def _weigh(
        self,
        node: str,
        new: Mapping[str, Reservation],
        capacity: Mapping[str, Fraction],
        occupying: Mapping[str, Resources],
        view: View,
        now: float,
    ) -> Outcome:
        return ledger.try_reserve(self._current(node, view, now), new, capacity, occupying, view, now, node=node)

    def _current(self, node: str, view: View, now: float) -> Record:
        """The loans on `node` that still hold room, the rest dropped: those the placement ledger's rules
        let lapse (ledger.keep), and those whose pods the borrower's `away` record lists (View.landed):
        the record counts them from then on, and stops when they finish, which this owner, not sent
        another shard's pods, would not otherwise see."""
        record = self._records.get(node)
        if record is None:
            return Record()
        kept = ledger.prune(record, view, now, node=node)
        if any(uid not in view.pods for uid in kept.reservations):
            landed = view.landed(node)
            if any(uid in landed for uid in kept.reservations):
                kept = Record({uid: r for uid, r in kept.reservations.items() if uid not in landed})
        return self._keep(node, kept)

    def _keep(self, node: str, record: Record) -> Record:
        if record.reservations:
            self._records[node] = record
        else:
            self._records.pop(node, None)
        return record
