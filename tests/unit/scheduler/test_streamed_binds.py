"""A session streams each job's binds (run_cycle's `stream`) as soon as it will bind no more of that job:
all of the job's binds in one hand-over, never a job that still has pods to place (the binder commits a
gang all or nothing), and the decisions the same as without streaming."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.unit.scheduler.scheduler_builders import NOW, node, pod, podgroup, snapshot
from tests.unit.scheduler.scheduler_scenarios import load_scenario, scenario_files
from vc_sched_core.cycle import load_scheduler_conf, run_cycle
from vc_sched_core.framework.decisions import Bind


def _gang(name: str, min_member: int, *cpus: str) -> list[dict[str, Any]]:
    return [podgroup(name, min_member=min_member), *(pod(f"{name}-{i}", name, cpu=cpu) for i, cpu in enumerate(cpus))]


def _jobs() -> list[dict[str, Any]]:
    """On 6 CPUs: a and c are placed whole; b is ready with one pod that fits nowhere (10 CPUs), so it
    still has a pod to place when allocate moves on; d is not ready (its second pod fits nowhere)."""
    return [
        node("n1", cpu="6"),
        *_gang("a", 2, "1", "1"),
        *_gang("b", 1, "1", "10"),
        *_gang("c", 2, "1", "1"),
        *_gang("d", 2, "1", "10"),
    ]


def test_a_job_placed_whole_is_streamed_at_once_and_one_with_pods_left_only_at_the_end() -> None:
    handed: list[tuple[Bind, ...]] = []
    snap = snapshot(*_jobs())
    result = run_cycle(snap, load_scheduler_conf(), now=NOW, stream=handed.append)

    by_call = [sorted(b.pod for b in binds) for binds in handed]
    assert sorted(by_call) == [["default/a-0", "default/a-1"], ["default/c-0", "default/c-1"]]
    # b's placed pod is decided all the same, and handed over with the session's result only.
    assert result.binds == {"default/a-0": "n1", "default/a-1": "n1", "default/b-0": "n1", **_c_on_n1()}
    plain = run_cycle(snap, load_scheduler_conf(), now=NOW)
    assert result.decisions == plain.decisions


def _c_on_n1() -> dict[str, str]:
    return {"default/c-0": "n1", "default/c-1": "n1"}


def test_without_a_stream_nothing_is_held_back() -> None:
    """The default (`vcctl sim cycle`, the scenario tables): every bind only in the result."""
    result = run_cycle(snapshot(*_jobs()), load_scheduler_conf(), now=NOW)
    assert len(result.binds) == 5


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: p.stem)
def test_streaming_changes_no_decision_and_hands_each_job_over_once(path: Path) -> None:
    scenario = load_scenario(path)
    conf = load_scheduler_conf(scenario.conf_text)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    handed: list[tuple[Bind, ...]] = []
    streamed = run_cycle(scenario.snapshot, conf, now=when, stream=handed.append)
    plain = run_cycle(scenario.snapshot, conf, now=when)
    assert streamed.decisions == plain.decisions
    assert streamed.podgroups == plain.podgroups
    pods = [b.pod for binds in handed for b in binds]
    assert len(pods) == len(set(pods))  # no bind handed over twice
    binds = {d.pod: d for d in streamed.decisions if isinstance(d, Bind)}
    assert all(binds.get(b.pod) == b for part in handed for b in part)
    # Each hand-over is all of one PodGroup's binds of the session.
    group = {p.key: f"{p.namespace}/{p.group_name}" if p.group_name else p.key for p in scenario.snapshot.pods}
    per_group = Counter(group[b.pod] for b in binds.values())
    for part in handed:
        (owner,) = {group[b.pod] for b in part}
        assert len(part) == per_group[owner]
