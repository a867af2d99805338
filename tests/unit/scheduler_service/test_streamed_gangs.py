"""A cycle hands a PodGroup's gang to the binder while its session still plans, as soon as the session will
bind no more of it; what it holds to the end goes when the session returns, and no bind goes twice."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from tests.unit.scheduler_service.service_builders import group, node, offline_loop, pod
from vc_sched_core.framework.decisions import Bind
from vc_sched_core.snapshot.cluster import QueueObj
from vc_scheduler import loop as loop_module
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.gangs import Gang
from vc_scheduler.inflight import InFlight
from vc_scheduler.streamed import StreamedBinds


def _cache() -> SchedulerCache:
    """On 4 CPUs: gang a (two pods) fits whole; b is ready with one pod and has a second that fits
    nowhere, so the session still has a pod of it to place when it moves on."""
    cache = SchedulerCache()
    cache.nodes["n1"] = node("n1")
    cache.queues["default"] = QueueObj(name="default")
    cache.podgroups["ns/a"] = group("a", min_member=2)
    cache.podgroups["ns/b"] = group("b", min_member=1)
    for name, podgroup in (("a0", "a"), ("a1", "a"), ("b0", "b")):
        cache.pods[f"ns/{name}"] = pod(name, podgroup)
    huge = pod("b1", "b")
    cache.pods["ns/b1"] = msgspec.structs.replace(huge, requests={"cpu": huge.requests["cpu"] * 100})
    return cache


def test_a_whole_gang_reaches_the_binder_while_the_session_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    submitted: list[tuple[str | None, frozenset[str]]] = []
    while_planning: list[frozenset[str]] = []
    taken = threading.Event()
    real_plan = loop_module.plan_cycle

    def plan(*args: Any) -> Any:
        *rest, stream = args

        def stream_and_look(binds: tuple[Bind, ...]) -> None:
            stream(binds)
            # The session goes on only once the loop has taken the gang (or 5 s have passed).
            taken.wait(5.0)
            while_planning.append(frozenset(pod for _, pods in submitted for pod in pods))

        return real_plan(*rest, stream_and_look)

    async def scenario() -> None:
        cache = _cache()
        work = InFlight("s0")
        loop = offline_loop(cache, work=work)
        submit = loop.binder.submit

        def spy(gang: Gang) -> None:
            submitted.append((gang.podgroup, frozenset(b.pod for b in gang.binds)))
            taken.set()
            submit(gang)

        monkeypatch.setattr(loop.binder, "submit", spy)
        monkeypatch.setattr(loop_module, "plan_cycle", plan)
        result = await loop.run_once()
        assert set(result.binds) == {"ns/a0", "ns/a1", "ns/b0"}
        assert while_planning == [frozenset({"ns/a0", "ns/a1"})]
        # b's bind went when the session returned; each pod once, each PodGroup in one gang.
        assert sorted(submitted, key=str) == [("ns/a", frozenset({"ns/a0", "ns/a1"})), ("ns/b", frozenset({"ns/b0"}))]
        assert cache.assumed() == {"ns/a0", "ns/a1", "ns/b0"}
        assert work.unfinished("Gang") == 2

    asyncio.run(scenario())


def test_a_lapsed_lease_hands_nothing_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """Binds streamed after the lease lapsed are not assumed: whoever owns the PodGroup plans it again."""

    async def scenario() -> None:
        cache = _cache()
        loop = offline_loop(cache)
        monkeypatch.setattr(loop.members, "can_write", lambda: False)
        await loop.run_once()
        assert cache.assumed() == frozenset()

    asyncio.run(scenario())


def test_binds_put_from_another_thread_are_taken_on_the_loop_in_order() -> None:
    async def scenario() -> None:
        taken: list[tuple[tuple[str, ...], bool]] = []
        loop_thread = threading.get_ident()

        def take(binds: tuple[Bind, ...]) -> None:
            taken.append((tuple(b.pod for b in binds), threading.get_ident() == loop_thread))

        streamed = StreamedBinds(asyncio.get_running_loop(), take)
        parts = [(Bind(f"ns/p{i}", f"u{i}", "n1"),) for i in range(5)]
        put: Callable[[tuple[Bind, ...]], None] = streamed.put
        await asyncio.to_thread(lambda: [put(part) for part in parts])
        streamed.drain()  # what the thread put last may not have been taken yet
        assert taken == [((f"ns/p{i}",), True) for i in range(5)]
        rest = streamed.rest((Bind("ns/p0", "u0", "n1"), Bind("ns/q", "uq", "n1")))
        assert rest == (Bind("ns/q", "uq", "n1"),)

    asyncio.run(scenario())
