"""What changed between two snapshots' pods, found by their orders (framework/pod_order.py)."""

from __future__ import annotations

from fractions import Fraction

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from vc_sched_core.framework.pod_order import PodOrder, changes
from vc_sched_core.snapshot.cluster import PodObj


def _pod(order: int, uid: str | None = None, node: str = "") -> PodObj:
    return PodObj(
        name=f"p{order}", namespace="ns", uid=uid or f"u{order}", labels={}, annotations={}, scheduler_name="volcano",
        node_name=node, priority=None, priority_class_name="", preemption_policy="", node_selector={}, affinity=None,
        tolerations=(), requests={"cpu": Fraction(1)}, phase="Pending", deleting=False, order=order,
    )  # fmt: skip


def _by_order(pods: list[PodObj]) -> PodOrder:
    found = PodOrder.of(pods)
    assert found is not None
    return found


def test_a_bind_a_new_pod_a_deleted_one_and_a_name_created_again_are_what_changed() -> None:
    before = [_pod(1), _pod(2), _pod(3), _pod(4)]
    bound = msgspec.structs.replace(before[1], node_name="n1")
    again = _pod(4, uid="u4-again")
    after = [before[0], bound, again, _pod(9)]  # 3 deleted; 4 deleted and created under its name; 9 new
    found = changes(_by_order(before), _by_order(after))
    assert found.changed == [(before[1], bound)]
    assert found.added == [again, after[3]]
    assert sorted(p.uid for p in found.removed) == ["u3", "u4"]


def test_pods_not_listed_by_a_strictly_increasing_order_have_none() -> None:
    assert PodOrder.of([_pod(2), _pod(1)]) is None
    assert PodOrder.of([_pod(1), _pod(1, uid="other")]) is None
    assert PodOrder.of([]) is not None and PodOrder.of([_pod(0)]) is not None


@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["keep", "bind", "drop", "recreate"])), max_size=40))
def test_the_changes_are_those_a_walk_over_every_pod_finds(plan: list[tuple[int, str]]) -> None:
    orders = sorted({order for order, _ in plan})
    before = [_pod(order) for order in orders]
    fate = dict(plan)
    after: list[PodObj] = []
    for pod in before:
        what = fate[pod.order]
        if what == "keep":
            after.append(pod)
        elif what == "bind":
            after.append(msgspec.structs.replace(pod, node_name="n"))
        elif what == "recreate":
            after.append(_pod(pod.order, uid=f"{pod.uid}-again"))
    after.extend(_pod(order) for order in range(41, 41 + len(plan) % 3))  # new pods come last
    found = changes(_by_order(before), _by_order(after))
    # The walk the carried state does without orders: by uid, comparing objects.
    old = {p.uid: p for p in before}
    new = {p.uid: p for p in after}
    assert found.changed == [(old[u], p) for u, p in new.items() if u in old and old[u] is not p]
    assert found.added == [p for u, p in new.items() if u not in old]
    assert sorted(p.uid for p in found.removed) == sorted(u for u in old if u not in new)
