"""decide(): parent defaulting, status counts, parent rules and refusals, no-op passes."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tests.unit.queue_controller.queue_builders import podgroup, queue
from vc_proto.vocabulary import CLOSED_BY_PARENT_KEY, Action
from vc_queue_controller.logic.decide import QueueView, decide
from vc_queue_controller.logic.status import count_phases, inqueue_resources

ROOT = queue("root", parent=None)


def test_sync_defaults_parent_to_root() -> None:
    plan = decide(QueueView(queue("q", parent=None), ROOT, []))
    assert plan.changed
    assert plan.queue.spec is not None and plan.queue.spec.parent == "root"


def test_root_gets_no_parent() -> None:
    plan = decide(QueueView(ROOT, None, []))
    assert plan.queue.spec is not None and plan.queue.spec.parent is None


def test_sync_counts_podgroups_per_phase() -> None:
    pgs = [
        podgroup("a", "Pending"),
        podgroup("b", "Running"),
        podgroup("c", "Running"),
        podgroup("d", "Inqueue"),
        podgroup("e", "Unknown"),
        podgroup("f", "Completed"),
        podgroup("g", None),
    ]
    status = decide(QueueView(queue("q"), ROOT, pgs)).queue.status
    assert status is not None
    assert (status.pending, status.running, status.inqueue, status.unknown, status.completed) == (1, 2, 1, 1, 1)


def test_second_pass_changes_nothing() -> None:
    first = decide(QueueView(queue("q", parent=None), ROOT, [podgroup("a", "Running")]))
    again = decide(QueueView(first.queue, ROOT, [podgroup("a", "Running")]))
    assert not again.changed


def test_status_keeps_the_schedulers_fields() -> None:
    from msgspec.structs import replace

    base = queue("q")
    assert base.status is not None
    owned = replace(base, status=replace(base.status, allocated={"cpu": "2"}))
    plan = decide(QueueView(owned, ROOT, []))
    assert plan.queue.status is not None and plan.queue.status.allocated == {"cpu": "2"}


@pytest.mark.parametrize(
    ("state", "action", "pgs", "expected"),
    [
        pytest.param("Open", Action.CLOSE_QUEUE, 1, "Closing", id="close-with-podgroups"),
        pytest.param("Open", Action.CLOSE_QUEUE, 0, "Closed", id="close-empty"),
        pytest.param("Closing", Action.SYNC_QUEUE, 0, "Closed", id="drained"),
        pytest.param("Closed", Action.OPEN_QUEUE, 1, "Open", id="reopen"),
    ],
)
def test_actions_change_state(state: str, action: Action, pgs: int, expected: str) -> None:
    podgroups = [podgroup(f"pg{i}", "Running") for i in range(pgs)]
    plan = decide(QueueView(queue("q", state), ROOT, podgroups), action)
    assert plan.state == expected and plan.state_changed and plan.changed


def test_root_cannot_be_closed() -> None:
    plan = decide(QueueView(ROOT, None, []), Action.CLOSE_QUEUE)
    assert plan.refused == "root queue can not be closed"
    assert plan.state == "Open"


def test_open_refused_under_closed_parent() -> None:
    parent = queue("p", "Closed")
    plan = decide(QueueView(queue("c", "Closed", parent="p"), parent, []), Action.OPEN_QUEUE)
    assert plan.refused is not None and "Open the parent queue first" in plan.refused
    assert plan.state == "Closed"


@pytest.mark.parametrize("parent_state", ["Closed", "Closing"])
def test_closed_parent_closes_open_child_and_marks_it(parent_state: str) -> None:
    parent = queue("p", parent_state)
    plan = decide(QueueView(queue("c", "Open", parent="p"), parent, [podgroup("a", "Running")]))
    assert plan.state == "Closing"
    assert (plan.queue.metadata.annotations or {})[CLOSED_BY_PARENT_KEY] == "true"


def test_open_parent_reopens_child_it_closed() -> None:
    child = queue("c", "Closed", parent="p", annotations={CLOSED_BY_PARENT_KEY: "true"})
    plan = decide(QueueView(child, queue("p", "Open"), []))
    assert plan.state == "Open"
    assert (plan.queue.metadata.annotations or {})[CLOSED_BY_PARENT_KEY] == "false"


def test_open_parent_leaves_child_closed_by_user() -> None:
    child = queue("c", "Closed", parent="p")
    plan = decide(QueueView(child, queue("p", "Open"), []))
    assert plan.state == "Closed" and not plan.state_changed
    assert CLOSED_BY_PARENT_KEY not in (plan.queue.metadata.annotations or {})


def test_explicit_close_does_not_mark_closed_by_parent() -> None:
    plan = decide(QueueView(queue("c", "Open"), ROOT, []), Action.CLOSE_QUEUE)
    assert CLOSED_BY_PARENT_KEY not in (plan.queue.metadata.annotations or {})


def test_inqueue_resources_sum_min_resources_of_inqueue_podgroups() -> None:
    pgs = [
        podgroup("a", "Inqueue", min_resources={"cpu": "2", "memory": "1Gi"}),
        podgroup("b", "Inqueue", min_resources={"cpu": "500m", "nvidia.com/gpu": "1"}),
        podgroup("c", "Running", min_resources={"cpu": "8"}),
    ]
    assert inqueue_resources(pgs) == {"cpu": Fraction(5, 2), "memory": Fraction(2**30), "nvidia.com/gpu": Fraction(1)}
    assert count_phases(pgs).inqueue == 2


def test_status_shows_the_inqueue_resources_admission_compares_against() -> None:
    pgs = [
        podgroup("a", "Inqueue", min_resources={"cpu": "2", "memory": "1Gi"}),
        podgroup("b", "Inqueue", min_resources={"cpu": "500m", "nvidia.com/gpu": "1"}),
        podgroup("c", "Running", min_resources={"cpu": "8"}),
    ]
    plan = decide(QueueView(queue("q"), queue("root", parent=None), pgs), Action.SYNC_QUEUE)
    assert plan.queue is not None and plan.queue.status is not None
    assert plan.queue.status.inqueue_resources == {"cpu": "2500m", "memory": "1Gi", "nvidia.com/gpu": "1"}


@pytest.mark.parametrize("stored", [None, "", "Open"], ids=["no-status", "empty", "open"])
def test_a_queue_that_was_open_and_stays_open_has_not_changed_state(stored: str | None) -> None:
    """Its first status (Open) is no event: `queue is Open (was Open)` said nothing new."""
    plan = decide(QueueView(queue("q", stored), ROOT, []))
    assert plan.state == "Open" and not plan.state_changed
    closed = decide(QueueView(queue("q", stored), ROOT, []), Action.CLOSE_QUEUE)
    assert closed.state == "Closed" and closed.state_changed
