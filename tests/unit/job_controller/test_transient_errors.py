"""A transport error while a job is reconciled keeps its request for the retry: a job submitted while a
cluster server is down still starts.

The dispatcher retries the job's key with backoff after any error. A request kept only for Conflict and
TemporaryError would leave the retry after a NATS timeout nothing to do, and a new job, which nothing
else wakes, would wait forever with no status.
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

import pytest
from nats.js.errors import NoStreamResponseError

from tests.unit.job_controller.jc_builders import job, task
from vc_bus.testing import MemoryStore
from vc_core.errors import TemporaryError
from vc_job_controller.controller import JobController
from vc_proto.events import DomainEvent
from vc_proto.kinds import KubeObject
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, Queue
from vc_runtime.sharding import SoleOwner

ObjT = TypeVar("ObjT", bound=KubeObject)


class FlakyStore(MemoryStore):
    """The first `failures` creates fail as a JetStream request does while its stream has no leader."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def create(self, obj: ObjT) -> ObjT:
        if self.failures and isinstance(obj, PodGroup):
            self.failures -= 1
            raise NoStreamResponseError
        return await super().create(obj)


async def _no_history(event: DomainEvent) -> int:
    return 0


def test_a_new_job_is_reconciled_once_the_store_answers_again() -> None:
    async def scenario() -> None:
        store = FlakyStore(failures=1)
        controller = JobController(store, _no_history, SoleOwner(), source="test")  # type: ignore[arg-type]
        default = Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="default"))
        controller.queues.remember(await store.create(default))
        new = await store.create(job([task("worker", 2)], name="train"))
        controller.jobs.remember(new)
        controller._job_changed(None, new)
        key = ("ns", "train")

        with pytest.raises(NoStreamResponseError):
            await controller._handle(key)
        assert key in controller.pending  # kept for the dispatcher's retry
        await controller._handle(key)
        groups, _ = await store.list(PodGroup, "ns")
        assert len(groups) == 1  # the job got going

    asyncio.run(scenario())


def test_a_failed_pass_leaves_the_retry_to_the_dispatchers_backoff() -> None:
    """A failed pass waits for the dispatcher's retry: submitting its key again on the way out would run
    it at once, and again, for as long as the store is down (over a thousand attempts through an
    apiserver restart)."""

    class DownStore(MemoryStore):
        tried = asyncio.Event()

        async def create(self, obj: ObjT) -> ObjT:
            if isinstance(obj, PodGroup):
                self.tried.set()
                raise TemporaryError("the apiserver is restarting", delay=30.0)
            return await super().create(obj)

    async def scenario() -> None:
        store = DownStore()
        controller = JobController(store, _no_history, SoleOwner(), source="test")  # type: ignore[arg-type]
        default = Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="default"))
        controller.queues.remember(await store.create(default))
        new = await store.create(job([task("worker", 2)], name="train"))
        controller.jobs.remember(new)
        shutdown = asyncio.Event()
        running = asyncio.create_task(controller.dispatcher.run(shutdown))
        controller._job_changed(None, new)
        await store.tried.wait()
        await asyncio.sleep(0.05)  # time for a pass run again at once (it would fail again)
        stats = controller.dispatcher.statistics()
        shutdown.set()
        await running
        assert (stats.failed, stats.waiting, stats.active, stats.delayed) == (1, 0, 0, 1)
        assert ("ns", "train") in controller.pending  # the request waits for that retry

    asyncio.run(scenario())
