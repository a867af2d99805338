"""PURE: the optimistic placement ledger shared by scheduler instances (Omega-style).

Kubernetes' bind fence only stops a pod being bound twice; nothing stops two schedulers binding
*different* pods onto the same full node. So before binding, an instance reserves each pod in a
ledger record per node (and per capped queue) with compare-and-set; the record lists every live
reservation and the reservation fits only if the node's (queue's) usage plus it stays within capacity.

Usage is the union, by pod uid, of the record's reservations and the pods the instance's cache sees
occupying the node (queue). The union matters: a reservation covers a bind the cache has not seen
yet, the cache covers pods bound without a reservation (or whose reservation was pruned). Both only
err on the conservative side, so a lagging cache costs a conflict, never an overcommit. Of a queue,
the cache counts by uid only the pods of the instance's own PodGroups; the other instances' pods are
one entry (OTHER_SHARDS), what their owners' shard records say they occupy, and an owner takes a
reservation back only once its records count the pod (peers.Several.publish).

A reservation lives until its pod is terminal or gone, or has been bound for longer than any cache
lags (SETTLED_AFTER_S). It carries the reserving instance and epoch, so reservations of an instance
that died before binding (or of an earlier life of it) are reclaimed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

import msgspec

from vc_core.resources import PODS, Resources, add, less_equal

# A reservation of a dead instance whose pod is still unbound is reclaimed after this long: by then
# the dead instance was fenced (its lease expired before peers saw it go) and any bind it sent landed.
RECLAIM_DEAD_AFTER_S: Final = 3.0
# Any reservation whose pod is still unbound after this long is abandoned (a bind never takes that
# long); covers a restarted instance of the same name whose old-epoch reservations nobody else knows.
ABANDONED_AFTER_S: Final = 30.0
# A reservation whose pod this instance has never seen is kept this long (its cache may lag).
UNSEEN_AFTER_S: Final = 60.0
# A bound pod is counted through the caches (every instance sees it occupying its node and queue);
# its reservation only covers caches that have not seen the bind yet, so it goes after the same
# bound on cache lag. Without this a capped queue's record would list every pod it ever ran.
SETTLED_AFTER_S: Final = UNSEEN_AFTER_S


# The entry of occupying_queue that stands for the other instances' pods: no uid (a reservation's key)
# is ever this.
OTHER_SHARDS: Final = "<other shards>"


class Reservation(msgspec.Struct, frozen=True, array_like=True):
    pod: str  # "<namespace>/<name>"
    instance: str
    epoch: int
    at: float  # wall-clock seconds; only compared against thresholds of many seconds
    requests: dict[str, str]  # exact Fractions as text, e.g. "1/2"

    def resources(self) -> Resources:
        key = tuple(self.requests.items())
        parsed = _PARSED.get(key)
        if parsed is None:
            parsed = {name: Fraction(value) for name, value in key}
            if len(_PARSED) < _PARSED_MAX:
                _PARSED[key] = parsed
        return dict(parsed)


# Every reserve re-counts the record's reservations, and pods of one template ask for the same
# resources: parse each distinct request once (Fraction parsing dominates a ledger write otherwise).
_PARSED: dict[tuple[tuple[str, str], ...], Resources] = {}
_PARSED_MAX = 16_384


class Record(msgspec.Struct, frozen=True):
    """One ledger key's value: the reservations by pod uid."""

    reservations: dict[str, Reservation] = msgspec.field(default_factory=dict, name="r")


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Record)


def encode(record: Record) -> bytes:
    return _encoder.encode(record)


# What encode writes for a request: str(Fraction), non-negative. Any other text is refused at decode, so
# that reading a hostile value fails there (guarded) and never later, in arithmetic; bounded digits keep
# Fraction() from building huge numbers ("1e999999").
_REQUEST_TEXT: Final = re.compile(r"\d{1,40}(/[1-9]\d{0,39})?")


def decode(data: bytes | None) -> Record:
    """A ledger value; ValueError (msgspec's errors are ValueErrors) when it is not one that encode wrote:
    not a record, or a request that is not an exact non-negative amount."""
    if not data:
        return Record()
    record = _decoder.decode(data)
    for reservation in record.reservations.values():
        if not valid_requests(reservation.requests):
            raise ValueError(f"reservation of {reservation.pod!r}: a request is not an amount")
    return record


def valid_requests(requests: Mapping[str, str]) -> bool:
    """Whether every amount is in the form `reservation` writes (exact, non-negative, bounded digits)."""
    return all(_REQUEST_TEXT.fullmatch(value) for value in requests.values())


def reservation(pod: str, requests: Mapping[str, Fraction], *, instance: str, epoch: int, at: float) -> Reservation:
    """A pod's reservation; every pod also takes one of the node's `pods` slots."""
    reqs = {**requests, PODS: Fraction(1)}
    return Reservation(pod, instance, epoch, at, {name: str(value) for name, value in sorted(reqs.items())})


class PodState(msgspec.Struct, frozen=True, gc=False):
    """What the cache knows of a pod, by uid (a Struct: the index makes one per change of a pod)."""

    node: str  # "" while unbound
    terminal: bool  # Succeeded, Failed
    requests: Resources  # including pods: 1
    queue: str = ""


@dataclass(frozen=True, slots=True)
class View:
    """The instance's view of the cluster used to prune and count (built once per cycle)."""

    pods: Mapping[str, PodState] = field(default_factory=dict)  # by uid
    gone: frozenset[str] = frozenset()  # uids seen deleted
    live: frozenset[str] = frozenset()  # live scheduler instances
    instance: str = ""
    epoch: int = 0
    # Occupying (bound, not terminal) pods' requests by node and by queue, indexed once per cycle; by
    # queue (and its ancestors) this instance's own PodGroups' pods only, with `elsewhere` what the other
    # instances' occupy there (the sums their owners publish: shard_records.py).
    by_node: Mapping[str, Mapping[str, Resources]] = field(default_factory=dict)
    by_queue: Mapping[str, Mapping[str, Resources]] = field(default_factory=dict)
    elsewhere: Callable[[str], Resources] = field(default=lambda _queue: {})
    # By node, the uids of the other instances' pods there as their owners' `away` records list them (a
    # borrower's bind a lender is not sent shows here).
    landed: Callable[[str], Container[str]] = field(default=lambda _node: ())

    @staticmethod
    def of(pods: Mapping[str, PodState], *, parents: Mapping[str, str] | None = None, **kwargs: object) -> View:
        """`parents` maps a queue to its parent: a pod then counts against its queue and every ancestor
        (a hierarchical queue's capability holds for the sum of its subtree)."""
        by_node: dict[str, dict[str, Resources]] = {}
        by_queue: dict[str, dict[str, Resources]] = {}
        chains: dict[str, tuple[str, ...]] = {}
        for uid, p in pods.items():
            if p.node and not p.terminal:
                by_node.setdefault(p.node, {})[uid] = p.requests
                if p.queue:
                    chain = chains.get(p.queue)
                    if chain is None:
                        chain = chains[p.queue] = queue_chain(p.queue, parents or {})
                    for queue in chain:
                        by_queue.setdefault(queue, {})[uid] = p.requests
        return View(pods=pods, by_node=by_node, by_queue=by_queue, **kwargs)  # type: ignore[arg-type]

    def occupying_node(self, node: str) -> Mapping[str, Resources]:
        return self.by_node.get(node, {})

    def occupying_queue(self, queue: str) -> Mapping[str, Resources]:
        """By pod uid what occupies `queue`, the other instances' pods as one entry (OTHER_SHARDS)."""
        own, other = self.by_queue.get(queue, {}), self.elsewhere(queue)
        return {**own, OTHER_SHARDS: other} if other else own


def queue_chain(queue: str, parents: Mapping[str, str]) -> tuple[str, ...]:
    """The queue and its ancestors, nearest first (a parent cycle, which admission rejects, is cut)."""
    chain = [queue]
    while (parent := parents.get(chain[-1], "")) and parent not in chain:
        chain.append(parent)
    return tuple(chain)


def keep(uid: str, res: Reservation, view: View, now: float, *, node: str | None) -> bool:
    """Whether a reservation still holds resources (`node` is None for a queue record)."""
    if uid in view.gone:
        return False
    state = view.pods.get(uid)
    age = now - res.at
    if state is None:
        return age < UNSEEN_AFTER_S
    if state.terminal:
        return False
    if state.node:
        # Bound: it occupies its node, and only that one, and every cache knows it once settled.
        return (node is None or state.node == node) and age < SETTLED_AFTER_S
    # Unbound: a bind may still be in flight, unless its reserver is gone or it is far too old.
    if res.instance == view.instance and res.epoch != view.epoch and age >= RECLAIM_DEAD_AFTER_S:
        return False  # an earlier life of this very instance
    if res.instance not in view.live and age >= RECLAIM_DEAD_AFTER_S:
        return False
    return age < ABANDONED_AFTER_S


def prune(record: Record, view: View, now: float, *, node: str | None) -> Record:
    kept = {uid: r for uid, r in record.reservations.items() if keep(uid, r, view, now, node=node)}
    return record if len(kept) == len(record.reservations) else Record(kept)


def usage(record: Record, occupying: Mapping[str, Resources]) -> Resources:
    """Union by pod uid of the record's reservations and the pods the view sees occupying."""
    parts: list[Mapping[str, Fraction]] = [r.resources() for r in record.reservations.values()]
    parts.extend(req for uid, req in occupying.items() if uid not in record.reservations)
    return add(*parts)


@dataclass(frozen=True, slots=True)
class Outcome:
    record: Record | None  # the record to write, None when the reservations do not fit
    pruned: int
    over: tuple[str, ...] = ()  # the resources that would be exceeded


def try_reserve(
    record: Record,
    new: Mapping[str, Reservation],
    capacity: Mapping[str, Fraction],
    occupying: Mapping[str, Resources],
    view: View,
    now: float,
    *,
    node: str | None,
    unlimited_missing: bool = False,
) -> Outcome:
    """Add `new` (by uid) to the record if usage plus them fits `capacity`; prune dead entries on the way.

    Reservations already in the record under the same uid are not counted twice (an idempotent
    retry). A node's capacity lists every resource it has (a missing one is zero); a queue's
    capability only the capped ones (`unlimited_missing`).
    """
    pruned = prune(record, view, now, node=node)
    dropped = len(record.reservations) - len(pruned.reservations)
    fresh = {uid: r for uid, r in new.items() if uid not in pruned.reservations}
    if not fresh:
        return Outcome(pruned, dropped)
    total = usage(pruned, {uid: req for uid, req in occupying.items() if uid not in fresh})
    wanted = add(total, *(r.resources() for r in fresh.values()))
    # Only the resources the reservations ask for matter: a node already past capacity in something
    # they do not request (e.g. a pod bound outside the ledger) must not block them.
    asked = {name for r in fresh.values() for name, v in r.resources().items() if v > 0}
    check = {name: wanted[name] for name in asked if name in wanted}
    if not less_equal(check, capacity, missing_is_infinite=unlimited_missing):
        over = tuple(
            sorted(
                n for n in check if (n in capacity or not unlimited_missing) and check[n] > capacity.get(n, Fraction(0))
            )
        )
        return Outcome(None, dropped, over)
    return Outcome(Record({**pruned.reservations, **fresh}), dropped)


def release(record: Record, uids: Iterable[str]) -> Record:
    """The record without these reservations (a gang's rollback, a failed bind)."""
    drop = set(uids)
    return Record({uid: r for uid, r in record.reservations.items() if uid not in drop})
