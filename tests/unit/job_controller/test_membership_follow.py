"""A change of members told in the moment the job controller's wait for one times out is still acted on.

Found by tests/integration/test_job_lifecycle.py::test_two_controllers_survivor_takes_over, once in a
full `make test`: the survivor saw its peer's lease lapse just as its one-second wait for a change
timed out; the event was set, the wait it was meant for was cancelled, and the next `wait_changed`
cleared it. The jobs the peer had held (their requests dropped while it owned them) were never looked
at again: their phase stayed '' for a minute.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from tests.support.waiting import eventually
from tests.unit.job_controller.jc_builders import job, task
from vc_bus.testing import MemoryStore
from vc_core.ownership import rendezvous_owner
from vc_job_controller import controller as jc
from vc_job_controller.controller import JobController
from vc_runtime.membership import Membership


class TimingOutMembership(Membership):
    """A member "b" of ("a", "b") with no NATS, whose next change (`change_as_wait_times_out`) lands when
    a wait for one is cancelled by its timeout: as when the lease thread's news reaches the service's
    loop in the same turn as the timeout."""

    def __init__(self) -> None:
        super().__init__(None, group="job-controller", instance="b", ttl_s=2.0)  # type: ignore[arg-type]
        now = time.monotonic()
        self.epoch, self._deadline, self._settled_at = 7, now + 3600.0, 0.0
        self._seen = {"a": now, "b": now}
        self.members = ("a", "b")
        self._ready.set()
        self.change_as_wait_times_out: Callable[[], None] | None = None

    async def wait_changed(self) -> None:
        try:
            await super().wait_changed()
        except asyncio.CancelledError:
            change, self.change_as_wait_times_out = self.change_as_wait_times_out, None
            if change is not None:
                change()
            raise


async def _no_history(events: object) -> int:
    return 0


def test_a_peer_leaving_as_the_wait_times_out_hands_its_jobs_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jc, "MEMBERSHIP_LOOK_S", 0.05)

    async def scenario() -> None:
        membership = TimingOutMembership()
        controller = JobController(MemoryStore(), _no_history, membership, source="test")
        name = next(f"held-{i}" for i in range(100) if rendezvous_owner(f"ns/held-{i}", ("a", "b")) == "a")
        controller.jobs.remember(job([task("worker", 1)], name=name))  # its arrival: a request
        key = ("ns", name)
        assert key in controller.pending
        await controller._handle(key)
        assert key not in controller.pending  # its peer's: the request is dropped

        def peer_leaves() -> None:
            del membership._seen["a"]  # its lease lapsed
            membership._recompute()

        membership.change_as_wait_times_out = peer_leaves
        shutdown = asyncio.Event()
        follow = asyncio.create_task(controller.follow_membership(shutdown))
        try:
            await eventually(lambda: key in controller.pending, timeout=2.0, interval=0.01, what="the job taken up")
        finally:
            shutdown.set()
            await follow
        assert membership.members == ("b",) and controller.owns(key)

    asyncio.run(scenario())
