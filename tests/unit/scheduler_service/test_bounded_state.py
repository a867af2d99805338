"""What the scheduler remembers about deleted objects stays bounded by the live cluster (the soak:
thousands of jobs come and go on a cluster of a few dozen, and memory must not grow with them)."""

from __future__ import annotations

from unittest import mock

from tests.unit.scheduler_service.service_builders import group
from vc_sched_core.framework.decisions import PodGroupStatusUpdate
from vc_scheduler import cache as cache_module
from vc_scheduler.cache import TOMBSTONE_TTL_S, SchedulerCache
from vc_scheduler.share import Partition
from vc_scheduler.status_policy import SentStatuses
from vc_scheduler.status_writer import SENT_MIN


def test_tombstones_expire_once_no_reservation_could_need_them() -> None:
    cache = SchedulerCache()
    with mock.patch.object(cache_module.time, "monotonic", return_value=1000.0):
        for i in range(100):
            cache._tombstone(f"uid-{i}")
    with mock.patch.object(cache_module.time, "monotonic", return_value=1000.0 + TOMBSTONE_TTL_S / 2):
        cache._tombstone("late")
        assert len(cache.gone()) == 101
    with mock.patch.object(cache_module.time, "monotonic", return_value=1000.0 + TOMBSTONE_TTL_S + 1):
        assert cache.gone() == frozenset({"late"})


def test_owner_answers_are_forgotten_beyond_four_times_the_live_keys() -> None:
    partition = Partition("s0", ("s0", "s1"))
    for i in range(4 * 256 + 1):  # PodGroups that came and went
        partition.owns(f"ns/job-{i}")
    assert len(partition._memo) == 4 * 256 + 1
    partition.bound(live=10)
    assert partition._memo == {}


def test_sent_statuses_of_deleted_podgroups_are_pruned_past_the_floor() -> None:
    sent, live = SentStatuses(), {"ns/live"}
    for i in range(4 * SENT_MIN + 1):
        sent.due(PodGroupStatusUpdate(f"ns/gone-{i}", "Running", (), 1, 0, 0), 0.0, group(f"gone-{i}"))
    sent.forget_all_but(live, above=4 * max(SENT_MIN, len(live)))
    assert sent._sent == {} and sent._first_offered == {}
