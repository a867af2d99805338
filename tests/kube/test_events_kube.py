"""Kubernetes Events on the real apiserver: with `--backend kube`, a job that does
not fit gets one core/v1 Event `Unschedulable` with the why-message on its PodGroup (and `PodGroupPending`
on the Job), which `kubectl get events` shows once, not once per scheduling cycle."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integration.test_kube_events_system import JOB, about, after_more_cycles, too_big
from tests.kube.install import kubectl
from tests.kube.test_system import KubeSystem
from tests.support.services import eventually
from vc_kube.client import KubeClient
from vc_proto.kube_event import Event

pytestmark = [pytest.mark.kube, pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
async def kube_system(kube: KubeClient, tmp_path: Path) -> AsyncIterator[KubeSystem]:
    system = KubeSystem(tmp_path, nodes=4)
    try:
        await system.start()
        yield system
    finally:
        system.stop()


async def events(system: KubeSystem) -> list[Event]:
    items, _ = await system.store_call(lambda s: s.list(Event, "default"))
    return list(items)


@pytest.mark.timeout(300)
async def test_kubectl_get_events_shows_one_unschedulable_event_with_the_why(kube_system: KubeSystem) -> None:
    kube_system.submit(too_big())

    async def why_said() -> bool:
        found = about(await events(kube_system), "PodGroup", "Unschedulable")
        return bool(found) and "cpu" in (found[0].message or "")

    await eventually(why_said, timeout=90)
    await after_more_cycles(kube_system, "a")
    (unschedulable,) = about(await events(kube_system), "PodGroup", "Unschedulable")
    await after_more_cycles(kube_system, "b")  # the verdict stands, cycle after cycle
    found = await events(kube_system)
    (still,) = about(found, "PodGroup", "Unschedulable")
    assert (still.metadata.name, still.count, still.message) == (
        unschedulable.metadata.name,
        unschedulable.count,
        unschedulable.message,
    )
    assert still.message is not None and "overused cpu" in still.message
    (pending,) = about(found, "Job", "PodGroupPending")
    job = await kube_system.job(JOB)
    assert pending.involved_object is not None and pending.involved_object.uid == job.metadata.uid

    shown = kubectl("get", "events", "-n", "default").stdout.splitlines()
    lines = [line for line in shown if "Unschedulable" in line and "gang unschedulable" in line]
    assert len(lines) == 1, "\n".join(shown)
    assert "podgroup/" in lines[0] and "overused cpu" in lines[0]
    assert sum("PodGroupPending" in line for line in shown) == 1, "\n".join(shown)
