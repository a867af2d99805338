"""The tier walker: Volcano's combination rule per extension point, and the enable flags."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.unit.scheduler.scheduler_builders import fake_session, node, pod, podgroup, snapshot
from vc_sched_core.framework.interfaces import (
    ALLOWED,
    Check,
    ExtensionPoint,
    NodeFailure,
    ValidateResult,
    Verdict,
    Vote,
)
from vc_sched_core.framework.model import JobInfo, TaskInfo

P = ExtensionPoint
Fn = Callable[..., Any]
Fns = dict[str, dict[ExtensionPoint, Fn]]
TWO_TIERS = """
actions: "allocate"
tiers:
- plugins:
  - name: a
  - name: b
- plugins:
  - name: c
"""
SNAP = snapshot(node("n1"), podgroup("j1"), podgroup("j2"), pod("j1-0", "j1"), pod("j2-0", "j2"), pod("j2-1", "j2"))


def vote(v: Vote) -> Fn:
    return lambda _job: Verdict(v, f"voted {v.name}")


@pytest.mark.parametrize(
    ("a", "b", "c", "expected"),
    [
        pytest.param(
            Vote.ABSTAIN, Vote.PERMIT, Vote.REJECT, Vote.PERMIT, id="permit-ends-its-tier-later-tiers-unasked"
        ),
        pytest.param(Vote.PERMIT, Vote.REJECT, Vote.PERMIT, Vote.REJECT, id="reject-in-the-same-tier-wins"),
        pytest.param(Vote.ABSTAIN, Vote.ABSTAIN, Vote.REJECT, Vote.REJECT, id="all-abstain-falls-through-to-a-reject"),
        pytest.param(Vote.ABSTAIN, Vote.ABSTAIN, Vote.ABSTAIN, Vote.PERMIT, id="nobody-votes-means-permit"),
    ],
)
def test_job_enqueueable_votes_combine_like_volcano(a: Vote, b: Vote, c: Vote, expected: Vote) -> None:
    fns: Fns = {"a": {P.JOB_ENQUEUEABLE: vote(a)}, "b": {P.JOB_ENQUEUEABLE: vote(b)}, "c": {P.JOB_ENQUEUEABLE: vote(c)}}
    ssn = fake_session(TWO_TIERS, fns, SNAP)
    assert ssn.job_enqueueable(ssn.jobs["default/j1"]).vote == expected


def test_reject_carries_the_plugin_reason() -> None:
    fns: Fns = {"a": {P.JOB_PIPELINED: vote(Vote.REJECT)}, "b": {}, "c": {}}
    ssn = fake_session(TWO_TIERS, fns, SNAP)
    assert ssn.job_enqueueable(ssn.jobs["default/j1"]).vote == Vote.PERMIT  # a registered no enqueueable fn
    assert ssn.job_pipelined(ssn.jobs["default/j1"]) is False


def test_disabled_point_is_skipped_for_that_plugin_only() -> None:
    conf = TWO_TIERS.replace("  - name: b\n", "  - name: b\n    enableJobEnqueued: false\n")
    fns: Fns = {"a": {}, "b": {P.JOB_ENQUEUEABLE: vote(Vote.REJECT)}, "c": {P.JOB_ENQUEUEABLE: vote(Vote.REJECT)}}
    ssn = fake_session(conf, fns, SNAP)
    assert ssn.job_enqueueable(ssn.jobs["default/j1"]).vote == Vote.REJECT  # c still rejects
    conf_all = conf.replace("  - name: c\n", "  - name: c\n    enableJobEnqueued: false\n")
    ssn = fake_session(conf_all, fns, SNAP)
    assert ssn.job_enqueueable(ssn.jobs["default/j1"]).vote == Vote.PERMIT


def test_job_order_first_non_zero_comparator_wins_then_uid() -> None:
    by_tasks = lambda left, right: len(right.tasks) - len(left.tasks)  # noqa: E731  more tasks first
    fns: Fns = {
        "a": {P.JOB_ORDER: lambda _l, _r: 0},
        "b": {P.JOB_ORDER: by_tasks},
        "c": {P.JOB_ORDER: lambda _l, _r: -1},
    }
    ssn = fake_session(TWO_TIERS, fns, SNAP)
    j1, j2 = ssn.jobs["default/j1"], ssn.jobs["default/j2"]
    assert ssn.job_order(j2, j1) and not ssn.job_order(j1, j2)
    ssn = fake_session(TWO_TIERS, {"a": {}, "b": {}, "c": {}}, SNAP)
    assert ssn.job_order(ssn.jobs["default/j1"], ssn.jobs["default/j2"])  # fallback: uid


def test_victims_intersect_within_a_tier_and_the_first_deciding_tier_wins() -> None:
    ssn0 = fake_session(TWO_TIERS, {"a": {}, "b": {}, "c": {}}, SNAP)
    t1, t2, t3 = (*ssn0.jobs["default/j2"].tasks.values(), *ssn0.jobs["default/j1"].tasks.values())

    def pick(*chosen: TaskInfo) -> Fn:
        return lambda _actor, candidates: [t for t in candidates if t in chosen]

    cands = [t1, t2, t3]
    fns: Fns = {"a": {P.PREEMPTABLE: pick(t1, t2)}, "b": {P.PREEMPTABLE: pick(t2, t3)}, "c": {P.PREEMPTABLE: pick(t1)}}
    ssn = fake_session(TWO_TIERS, fns, SNAP)
    assert ssn.preemptable(t1, cands) == [t2]
    fns["b"] = {P.PREEMPTABLE: pick()}  # an empty answer voids tier 1: tier 2 decides
    ssn = fake_session(TWO_TIERS, fns, SNAP)
    assert ssn.preemptable(t1, cands) == [t1]
    fns["b"] = {P.PREEMPTABLE: lambda _a, _c: None}  # abstain: a alone decides tier 1
    ssn = fake_session(TWO_TIERS, fns, SNAP)
    assert ssn.preemptable(t1, cands) == [t1, t2]


def test_job_starving_first_tier_with_registrations_decides() -> None:
    yes, no = (lambda _j: True), (lambda _j: False)
    ssn = fake_session(TWO_TIERS, {"a": {P.JOB_STARVING: yes}, "b": {}, "c": {P.JOB_STARVING: no}}, SNAP)
    assert ssn.job_starving(ssn.jobs["default/j1"]) is True
    ssn = fake_session(TWO_TIERS, {"a": {P.JOB_STARVING: yes}, "b": {P.JOB_STARVING: no}, "c": {}}, SNAP)
    assert ssn.job_starving(ssn.jobs["default/j1"]) is False
    ssn = fake_session(TWO_TIERS, {"a": {}, "b": {}, "c": {}}, SNAP)
    assert ssn.job_starving(ssn.jobs["default/j1"]) is False


def test_ready_is_an_and_overused_is_an_or_allocatable_gives_the_first_reason() -> None:
    fns: Fns = {
        "a": {P.JOB_READY: lambda _j: True, P.OVERUSED: lambda _q: False, P.ALLOCATABLE: lambda _q, _t: ALLOWED},
        "b": {
            P.JOB_READY: lambda _j: True,
            P.OVERUSED: lambda _q: True,
            P.ALLOCATABLE: lambda _q, _t: Check(False, "b says no"),
        },
        "c": {P.JOB_READY: lambda _j: False, P.ALLOCATABLE: lambda _q, _t: Check(False, "c says no")},
    }
    ssn = fake_session(TWO_TIERS, fns, SNAP)
    job = ssn.jobs["default/j1"]
    task = next(iter(job.tasks.values()))
    assert ssn.job_ready(job) is False
    assert ssn.overused(ssn.queues["default"]) is True
    assert ssn.allocatable(ssn.queues["default"], task) == Check(False, "b says no")


def test_predicate_counts_each_failed_node_once_with_its_first_reason() -> None:
    def first(_task: TaskInfo, rows: NDArray[np.intp]) -> list[NodeFailure]:
        return [NodeFailure(np.asarray(rows) == 0, "row zero"), NodeFailure(np.ones(len(rows), bool), "everything")]

    snap = snapshot(node("n0"), node("n1"), node("n2"), podgroup("j1"), pod("j1-0", "j1"))
    ssn = fake_session(TWO_TIERS, {"a": {P.PREDICATE: first}, "b": {}, "c": {}}, snap)
    task = next(iter(ssn.jobs["default/j1"].tasks.values()))
    outcome = ssn.predicate(task, np.arange(3))
    assert list(outcome.rows) == []
    assert outcome.failed == 3
    assert dict(outcome.reasons) == {"row zero": 1, "everything": 2}


def test_invalid_jobs_leave_the_session_with_their_reason() -> None:
    invalid = lambda job: ValidateResult(False, "NotEnoughTasks", "too few") if job.name == "j1" else None  # noqa: E731
    ssn = fake_session(TWO_TIERS, {"a": {P.JOB_VALID: invalid}, "b": {}, "c": {}}, SNAP)
    assert "default/j1" not in ssn.jobs
    job: JobInfo = ssn.invalid_jobs["default/j1"]
    assert job.conditions["Unschedulable"].reason == "NotEnoughTasks"
