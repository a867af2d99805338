"""A bind budget bounds what one session decides: allocate starts no job once it is spent, the jobs it
did not get to are deferred (no status: nothing was tried for them), the actions that evict do not run,
and the next session takes the rest."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.unit.scheduler.scheduler_builders import NOW, node, pod, podgroup, snapshot
from vc_sched_core.cycle import apply_result, load_scheduler_conf, run_cycle
from vc_sched_core.framework.decisions import Evict

GANGS = ("a", "b", "c", "d")


def _gangs_of_two() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [node("n1", cpu="16")]
    for name in GANGS:
        objects.append(podgroup(name, min_member=2))
        objects += [pod(f"{name}-0", name), pod(f"{name}-1", name)]
    return objects


def test_a_spent_budget_defers_the_jobs_allocate_did_not_get_to_and_the_next_session_places_them() -> None:
    conf = load_scheduler_conf()
    snap = snapshot(*_gangs_of_two())
    first = run_cycle(snap, conf, now=NOW, bind_budget=3)
    # Checked before each job: the second gang takes the binds past the budget, whole; no third starts.
    assert len(first.binds) == 4
    placed = {key.split("/")[1].split("-")[0] for key in first.binds}
    assert len(placed) == 2 and all(f"default/{g}-0" in first.binds and f"default/{g}-1" in first.binds for g in placed)
    deferred = set(GANGS) - placed
    assert {uid.split("/")[1] for uid in first.deferred} == deferred
    # No status for a deferred job (an "unschedulable" would be untrue): only the tried ones report.
    assert {uid.split("/")[1] for uid in first.podgroups} == placed
    assert not set(first.stats.retried_jobs) & first.deferred  # not a session that left them unready

    second = run_cycle(apply_result(snap, first), conf, now=NOW, bind_budget=3)
    assert not second.deferred
    assert {key.split("/")[1].split("-")[0] for key in second.binds} == deferred
    assert len(first.binds) + len(second.binds) == 8


def test_without_a_budget_one_session_places_everything() -> None:
    result = run_cycle(snapshot(*_gangs_of_two()), load_scheduler_conf(), now=NOW)
    assert len(result.binds) == 8 and not result.deferred


PREEMPTING = replace(load_scheduler_conf(), actions=("enqueue", "allocate", "preempt"))


def _full_node_and_a_gang_that_needs_room() -> list[dict[str, Any]]:
    """n1 full of a low-priority job; a high-priority gang of two that fits nowhere; a small job that fits
    n2 (one CPU free)."""
    objects: list[dict[str, Any]] = [
        node("n1", cpu="4"),
        node("n2", cpu="1"),
        {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
        {"kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10},
    ]
    for name, priority_class, members in (("low", "low", 1), ("high", "high", 2), ("small", "low", 1)):
        group = podgroup(name, min_member=members, phase="Running" if name == "low" else "Inqueue")
        group["spec"]["priorityClassName"] = priority_class
        objects.append(group)
    for i in range(4):
        objects.append(pod(f"low-{i}", "low", node_name="n1", phase="Running"))
    objects += [pod("high-0", "high"), pod("high-1", "high"), pod("small-0", "small")]
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["spec"]["priority"] = 1000 if obj["metadata"]["name"].startswith("high") else 10
    return objects


def test_a_spent_budget_skips_the_actions_that_evict() -> None:
    conf = PREEMPTING
    snap = snapshot(*_full_node_and_a_gang_that_needs_room())
    unbounded = run_cycle(snap, conf, now=NOW)
    assert unbounded.binds == {"default/small-0": "n2"}
    assert [d.pod for d in unbounded.decisions if isinstance(d, Evict)]  # preempt made room for the gang

    bounded = run_cycle(snap, conf, now=NOW, bind_budget=1)
    assert bounded.binds == {"default/small-0": "n2"}
    # The session could still place pods: it is not one that needs room made. A later session, with
    # its budget unspent, preempts.
    assert not [d for d in bounded.decisions if isinstance(d, Evict)]
    later = run_cycle(apply_result(snap, bounded), conf, now=NOW, bind_budget=1)
    assert [d.pod for d in later.decisions if isinstance(d, Evict)]
