"""Kube-mode chaos schedules: a pure function of the seed, every kube fault in every schedule, and
every process kind (the relay included) killed and paused within eight schedules."""

from __future__ import annotations

import itertools

from tests.chaos.kube_plan import KUBE_FAULTS, KUBE_KINDS, KUBE_OPTIONS, RELAY, make_kube_schedule
from tests.chaos.plan import Options


def test_the_same_seed_gives_the_same_kube_schedule() -> None:
    assert make_kube_schedule(7, 3) == make_kube_schedule(7, 3)
    assert make_kube_schedule(7, 3) != make_kube_schedule(8, 3)
    assert make_kube_schedule(7, 3).jobs != make_kube_schedule(7, 4).jobs


def test_every_schedule_restarts_apiserver_etcd_and_relay_and_forces_a_relist() -> None:
    for index in range(12):
        schedule = make_kube_schedule(1, index)
        kinds = [f.kind for f in schedule.faults]
        for kind in KUBE_FAULTS:
            assert kinds.count(kind) == 1, (index, kind)
        assert any(f.kind == "kill" and f.target == f"{RELAY}-0" for f in schedule.faults), index
        assert schedule.topology == "kube" and schedule.servers == 1 and schedule.sync == "always"
        assert f"{RELAY}-0" in schedule.instance_names() and not schedule.proxied


def test_eight_schedules_kill_and_pause_every_kind_the_relay_included() -> None:
    schedules = [make_kube_schedule(1, i) for i in range(len(KUBE_KINDS))]
    killed = {f.target.rsplit("-", 1)[0] for s in schedules for f in s.faults if f.kind == "kill"}
    paused = {f.target.rsplit("-", 1)[0] for s in schedules for f in s.faults if f.kind == "stop"}
    assert killed == paused == set(KUBE_KINDS)


def test_whole_system_faults_fit_the_load_window_and_do_not_overlap_as_planned() -> None:
    options = Options(load_s=12.0, nodes=KUBE_OPTIONS.nodes)
    for index in range(20):
        schedule = make_kube_schedule(3, index, options)
        spans = sorted((f.at_s, f.at_s + f.duration_s) for f in schedule.faults if f.global_)
        assert all(f.at_s >= 3.0 and f.at_s + f.duration_s <= 12.0 for f in schedule.faults if f.global_)
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), spans


def test_without_faults_the_load_is_the_same() -> None:
    assert make_kube_schedule(1, 2, faults=False).faults == ()
    assert make_kube_schedule(1, 2, faults=False).jobs == make_kube_schedule(1, 2).jobs
