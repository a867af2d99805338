"""The placement ledger's pure logic: fit checks, union accounting, pruning and reclaiming."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from vc_scheduler import ledger
from vc_scheduler.ledger import (
    ABANDONED_AFTER_S,
    RECLAIM_DEAD_AFTER_S,
    SETTLED_AFTER_S,
    UNSEEN_AFTER_S,
    PodState,
    Record,
    View,
    try_reserve,
)

NOW = 1_000_000.0
CAP = {"cpu": Fraction(4), "memory": Fraction(8), "pods": Fraction(110)}


def res(pod: str, cpu: int = 1, *, instance: str = "a", epoch: int = 1, at: float = NOW) -> ledger.Reservation:
    return ledger.reservation(
        pod, {"cpu": Fraction(cpu), "memory": Fraction(cpu)}, instance=instance, epoch=epoch, at=at
    )


def pending(queue: str = "") -> PodState:
    return PodState(
        node="", terminal=False, requests={"cpu": Fraction(1), "memory": Fraction(1), "pods": Fraction(1)}, queue=queue
    )


def view(pods: dict[str, PodState] | None = None, **kw: object) -> View:
    kw.setdefault("live", frozenset({"a", "b"}))
    kw.setdefault("instance", "a")
    kw.setdefault("epoch", 1)
    return View.of(pods or {}, **kw)  # type: ignore[arg-type]


def reserve(
    record: Record, new: dict[str, ledger.Reservation], v: View, *, cap: dict[str, Fraction] = CAP
) -> ledger.Outcome:
    return try_reserve(record, new, cap, v.occupying_node("n1"), v, NOW, node="n1")


def test_roundtrip_is_exact() -> None:
    record = Record({"u1": ledger.reservation("ns/p", {"cpu": Fraction(1, 3)}, instance="a", epoch=7, at=NOW)})
    back = ledger.decode(ledger.encode(record))
    assert back == record
    assert back.reservations["u1"].resources() == {"cpu": Fraction(1, 3), "pods": Fraction(1)}
    assert ledger.decode(b"") == Record()


def test_fits_until_capacity_then_refuses() -> None:
    v = view({f"u{i}": pending() for i in range(6)})
    out = reserve(Record(), {"u0": res("ns/p0", 2), "u1": res("ns/p1", 2)}, v)
    assert out.record is not None and set(out.record.reservations) == {"u0", "u1"}
    refused = reserve(out.record, {"u2": res("ns/p2", 1)}, v)
    assert refused.record is None and refused.over == ("cpu",)


def test_counts_bound_pods_the_cache_sees_without_reservations() -> None:
    bound = PodState(node="n1", terminal=False, requests={"cpu": Fraction(3), "pods": Fraction(1)})
    v = view({"x": bound, "u1": pending()})
    assert reserve(Record(), {"u1": res("ns/p1", 2)}, v).record is None
    assert reserve(Record(), {"u1": res("ns/p1", 1)}, v).record is not None


def test_union_does_not_count_a_bound_reserved_pod_twice() -> None:
    bound = PodState(
        node="n1", terminal=False, requests={"cpu": Fraction(2), "memory": Fraction(2), "pods": Fraction(1)}
    )
    v = view({"u0": bound, "u1": pending()})
    record = Record({"u0": res("ns/p0", 2)})
    assert reserve(record, {"u1": res("ns/p1", 2)}, v).record is not None


def test_a_retry_of_the_same_reservation_is_idempotent() -> None:
    v = view({"u0": pending()})
    first = reserve(Record(), {"u0": res("ns/p0", 4)}, v).record
    assert first is not None
    again = reserve(first, {"u0": res("ns/p0", 4)}, v)
    assert again.record == first


def test_pods_slots_are_a_resource() -> None:
    v = view({"u0": pending(), "u1": pending()})
    cap = {"cpu": Fraction(100), "memory": Fraction(100), "pods": Fraction(1)}
    assert try_reserve(Record(), {"u0": res("ns/p0"), "u1": res("ns/p1")}, cap, {}, v, NOW, node="n1").over == ("pods",)


def test_queue_capability_caps_only_named_resources() -> None:
    v = view({"u0": pending("q"), "u1": pending("q")})
    cap = {"cpu": Fraction(1)}
    one = try_reserve(Record(), {"u0": res("ns/p0")}, cap, {}, v, NOW, node=None, unlimited_missing=True)
    assert one.record is not None  # memory and pods are not capped
    two = try_reserve(one.record, {"u1": res("ns/p1")}, cap, {}, v, NOW, node=None, unlimited_missing=True)
    assert two.record is None


def test_prunes_terminal_gone_and_moved_pods() -> None:
    record = Record({"t": res("ns/t"), "g": res("ns/g"), "m": res("ns/m"), "k": res("ns/k")})
    v = view(
        {
            "t": PodState(node="n1", terminal=True, requests={}),
            "m": PodState(node="n2", terminal=False, requests={}),
            "k": PodState(node="n1", terminal=False, requests={}),
        },
        gone=frozenset({"g"}),
    )
    assert set(ledger.prune(record, v, NOW, node="n1").reservations) == {"k"}
    # A queue record keeps a pod bound anywhere.
    assert set(ledger.prune(record, v, NOW, node=None).reservations) == {"m", "k"}


def test_reclaims_dead_instances_unbound_reservations_after_grace() -> None:
    record = Record(
        {
            "u": res("ns/p", instance="dead", at=NOW - RECLAIM_DEAD_AFTER_S - 0.1),
            "v": res("ns/q", instance="dead", at=NOW - 0.5),
            "w": res("ns/r", instance="b", at=NOW - RECLAIM_DEAD_AFTER_S - 0.1),
        }
    )
    v = view({"u": pending(), "v": pending(), "w": pending()})
    assert set(ledger.prune(record, v, NOW, node="n1").reservations) == {"v", "w"}


def test_reclaims_an_earlier_life_of_this_instance() -> None:
    record = Record({"u": res("ns/p", instance="a", epoch=1, at=NOW - RECLAIM_DEAD_AFTER_S - 1)})
    v = view({"u": pending()}, epoch=5)
    assert ledger.prune(record, v, NOW, node="n1").reservations == {}


def test_abandons_old_unbound_and_unseen_reservations() -> None:
    record = Record(
        {
            "old": res("ns/o", instance="b", at=NOW - ABANDONED_AFTER_S - 1),
            "unseen": res("ns/u", instance="b", at=NOW - UNSEEN_AFTER_S - 1),
            "young": res("ns/y", instance="b", at=NOW - 1),
        }
    )
    v = view({"old": pending()})
    assert set(ledger.prune(record, v, NOW, node="n1").reservations) == {"young"}


def test_a_bound_pod_keeps_its_reservation_until_every_cache_has_seen_the_bind() -> None:
    young = Record({"u": res("ns/p", instance="dead", at=NOW - SETTLED_AFTER_S + 1)})
    settled = Record({"u": res("ns/p", instance="dead", at=NOW - SETTLED_AFTER_S - 1)})
    v = view({"u": PodState(node="n1", terminal=False, requests={})})
    assert ledger.prune(young, v, NOW, node="n1") is young
    assert ledger.prune(young, v, NOW, node=None) is young  # a queue record too
    # Settled: the caches count it (see test_counts_bound_pods_the_cache_sees_without_reservations),
    # so the records stay as small as the binds in flight.
    assert ledger.prune(settled, v, NOW, node="n1").reservations == {}
    assert ledger.prune(settled, v, NOW, node=None).reservations == {}


def test_release_drops_only_named() -> None:
    record = Record({"u": res("ns/p"), "v": res("ns/q")})
    assert set(ledger.release(record, ["u", "zz"]).reservations) == {"v"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3)), max_size=30))
def test_property_concurrent_writers_never_exceed_capacity(attempts: list[tuple[int, int]]) -> None:
    """Writers racing on one record with compare-and-set (each starts from the last value it read)
    never push the committed record past capacity."""
    pods = {f"u{i}": pending() for i in range(len(attempts))}
    v = view(pods)
    committed, revision = Record(), 0
    seen = {w: (Record(), 0) for w in range(3)}
    for i, (writer, cpu) in enumerate(attempts):
        base, base_rev = seen[writer]
        out = reserve(base, {f"u{i}": res(f"ns/p{i}", cpu)}, v)
        if base_rev != revision:  # lost the race: re-read, re-check
            seen[writer] = (committed, revision)
            out = reserve(committed, {f"u{i}": res(f"ns/p{i}", cpu)}, v)
        if out.record is not None:
            committed, revision = out.record, revision + 1
            seen[writer] = (committed, revision)
        total = sum((r.resources()["cpu"] for r in committed.reservations.values()), Fraction(0))
        assert total <= CAP["cpu"]
