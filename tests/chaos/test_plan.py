"""Chaos schedules are a pure function of the seed: reproducible, and covering every fault by rotation."""

from __future__ import annotations

import itertools
from collections import Counter

from tests.chaos.plan import SERVICE_KINDS, TOPOLOGIES, Options, make_schedule


def test_the_same_seed_gives_the_same_schedule() -> None:
    assert make_schedule(7, 3) == make_schedule(7, 3)
    assert make_schedule(7, 3) != make_schedule(8, 3)
    assert make_schedule(7, 3).jobs != make_schedule(7, 4).jobs


def test_seven_schedules_kill_and_pause_every_service_kind_and_cycle_topologies() -> None:
    schedules = [make_schedule(1, i) for i in range(7)]
    killed = {f.target.rsplit("-", 1)[0] for s in schedules for f in s.faults if f.kind == "kill"}
    paused = {f.target.rsplit("-", 1)[0] for s in schedules for f in s.faults if f.kind == "stop"}
    assert killed == paused == set(SERVICE_KINDS)
    assert {s.topology for s in schedules} == set(TOPOLOGIES)
    kinds = Counter(f.kind for s in schedules for f in s.faults)
    for kind in (
        "nats-kill",
        "unsynced-loss",
        "server-kill",
        "leader-kill",
        "disk-stall",
        "node-flap",
        "proxy-delay",
        "proxy-drop",
        "proxy-partition",
    ):
        assert kinds[kind] > 0, kind


def test_topology_faults_match_the_topology() -> None:
    for i in range(9):
        schedule = make_schedule(2, i)
        kinds = {f.kind for f in schedule.faults}
        if schedule.topology == "cluster-r3":
            assert {"server-kill", "leader-kill"} <= kinds and not kinds & {"nats-kill", "unsynced-loss", "disk-stall"}
        else:
            assert "nats-kill" in kinds and not kinds & {"server-kill", "leader-kill"}
        assert ("unsynced-loss" in kinds) == (schedule.topology == "single-default")


def test_global_faults_never_overlap_and_targets_exist() -> None:
    for i in range(12):
        schedule = make_schedule(3, i)
        names = set(schedule.instance_names())
        assert all(f.target in names for f in schedule.faults if f.kind in ("kill", "stop"))
        assert all(f.target in schedule.proxied for f in schedule.faults if f.kind.startswith("proxy-"))
        assert set(schedule.proxied) <= names
        spans = sorted((f.at_s, f.at_s + f.duration_s) for f in schedule.faults if f.global_)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))


def test_every_job_fits_its_queue_so_it_can_finish() -> None:
    schedule = make_schedule(4, 0, Options(load_s=60))
    capability = {q.name: float(q.cpu) for q in schedule.queues}
    for job in schedule.jobs:
        cpu = 0.5 if job.cpu == "500m" else 1.0
        assert job.replicas * cpu <= capability[job.queue]
        assert 1 <= job.min_available <= job.replicas
        assert 0 <= job.submit_at_s < 60
