"""Which events node-sim publishes again at its first sync: the transitions the stored pods show as made
within REPUBLISH_WITHIN_S, each with the id it was first published under (the stream drops a copy)."""

from __future__ import annotations

import time

import msgspec

from tests.support.waiting import eventually
from tests.unit.node_sim.running import running
from vc_bus.events import EventBatcher
from vc_bus.testing import MemoryStore
from vc_core.times import rfc3339_from_epoch
from vc_node_sim.history import REPUBLISH_WITHIN_S, Transition, pod_event, recent_transitions, retried
from vc_node_sim.kubelet import Kubelet, NodeState
from vc_node_sim.logic import SimConfig
from vc_node_sim.statuses import finished_status, rejected_status, running_status
from vc_proto import events as ev
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, PodStatus
from vc_proto.events import DomainEvent
from vc_proto.meta import ObjectMeta

NOW = 1_800_000_000.0


def _pod(labels: dict[str, str] | None = None) -> Pod:
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name="p", namespace="ns", uid="u1", labels=labels),
        spec=PodSpec(containers=[Container(name="main", image="busybox")], node_name="node-0"),
    )


def _with(pod: Pod, status: PodStatus) -> Pod:
    return msgspec.structs.replace(pod, status=status)


def _at(seconds_ago: float) -> str:
    return rfc3339_from_epoch(NOW - seconds_ago)


def test_a_recent_start_and_exit_are_published_again_in_order_with_their_first_ids() -> None:
    running = _with(_pod(), running_status(_pod(), now=_at(30), host_ip="10.0.0.1"))
    exited = _with(running, finished_status(running, now=_at(5), exit_code=3, message="boom"))
    transitions = recent_transitions(exited, now=NOW)
    assert [(t.reason, t.phase, t.exit_code, t.message) for t in transitions] == [
        (ev.POD_STARTED, "Running", None, None),
        (ev.POD_EXITED, "Failed", 3, "boom"),
    ]
    events = [pod_event(exited, t, now=NOW) for t in transitions]
    # The ids the kubelet published them under when it made them (kubelet._event).
    assert [e.id for e in events if e] == [
        ev.event_id("u1", ev.POD_STARTED, "Running"),
        ev.event_id("u1", ev.POD_EXITED, "Failed"),
    ]
    assert [e.occurred_at for e in events if e] == [_at(30), _at(5)]


def test_transitions_older_than_the_window_are_not() -> None:
    running = _with(_pod(), running_status(_pod(), now=_at(REPUBLISH_WITHIN_S + 60), host_ip="h"))
    exited = _with(running, finished_status(running, now=_at(REPUBLISH_WITHIN_S - 1), exit_code=0))
    assert [t.reason for t in recent_transitions(exited, now=NOW)] == [ev.POD_EXITED]
    older = _with(running, finished_status(running, now=_at(REPUBLISH_WITHIN_S + 1), exit_code=0))
    assert recent_transitions(older, now=NOW) == []
    assert recent_transitions(_pod(), now=NOW) == []  # pending: nothing made yet


def test_a_refusal_at_admission_is_published_again_under_its_reason() -> None:
    refused = _with(_pod(), rejected_status(_pod(), now=_at(2), reason="OutOfcpu", message="no room"))
    assert recent_transitions(refused, now=NOW) == [Transition("OutOfcpu", "no room", "Failed", at=NOW - 2)]


def test_a_jobs_pods_transitions_are_the_job_controllers_to_tell() -> None:
    pod = _pod(labels={"volcano.sh/job-name": "j"})
    assert pod_event(pod, Transition(ev.POD_EXITED, None, "Succeeded", 0), now=NOW) is None
    evicted = pod_event(pod, Transition(ev.POD_EVICTED, "node gone", None), now=NOW)
    assert evicted is not None and evicted.job == "j"


async def test_a_batch_that_fails_to_publish_is_published_again_as_the_same_batch() -> None:
    """The statuses are stored by then, and nothing would publish the events later. The same batch: its
    messages keep their ids, so what a failed-seeming attempt did store is dropped, not stored twice."""
    attempts: list[list[DomainEvent]] = []

    async def publish_batch(events: list[DomainEvent]) -> None:
        attempts.append(events)
        if len(attempts) == 1:
            raise TimeoutError("nats: timeout")

    events = [pod_event(_pod(), Transition(ev.POD_EXITED, None, "Succeeded", 0), now=NOW)]
    await retried(publish_batch)(events)  # type: ignore[arg-type]
    assert attempts == [events, events]


async def test_a_restart_publishes_recent_starts_then_ends_each_on_its_own_before_any_timer() -> None:
    """At the first sync: the starts, then the ends, each pod's event in a batch of its own (one pod's
    start and end in one message would get an id of their own, and be stored again); nothing older than
    REPUBLISH_WITHIN_S; and a pod's due step (the running pod below is past its duration) only after."""
    now = time.time()
    store = MemoryStore()
    batches: list[list[str]] = []

    async def publish_batch(events: list[DomainEvent]) -> None:
        batches.append([f"{e.name}:{e.reason}" for e in events])

    kubelet = Kubelet(store, SimConfig(), EventBatcher(publish_batch).publish)
    kubelet.nodes["node-0"] = NodeState("node-0", "10.0.0.1", {"cpu": "8", "pods": "110"})
    ended = _bound("ended")
    ended = _with(ended, running_status(ended, now=rfc3339_from_epoch(now - 30), host_ip="10.0.0.1"))
    ended = _with(ended, finished_status(ended, now=rfc3339_from_epoch(now - 5), exit_code=0))
    due = _bound("due", duration="1s")
    due = _with(due, running_status(due, now=rfc3339_from_epoch(now - 20), host_ip="10.0.0.1"))
    old = _bound("old")
    old = _with(old, running_status(old, now=rfc3339_from_epoch(now - REPUBLISH_WITHIN_S - 60), host_ip="10.0.0.1"))
    for pod in (ended, due, old):
        await store.create(pod)
    async with running(kubelet):
        await eventually(lambda: _ended(store, "due"), what="the due pod ended")
        await eventually(lambda: len(batches) >= 3, what="the republished batches and the due pod's end")
    assert [sorted(b) for b in batches[:2]] == [["due:PodStarted", "ended:PodStarted"], ["ended:PodExited"]]
    assert batches[2:] == [["due:PodExited"]]


def _bound(name: str, duration: str = "1h") -> Pod:
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=name, namespace="ns", annotations={"sim.tephra.dev/duration": duration}),
        spec=PodSpec(containers=[Container(name="main", image="busybox")], node_name="node-0"),
    )


async def _ended(store: MemoryStore, name: str) -> bool:
    pod = await store.get(Pod, "ns", name)
    return bool(pod.status and pod.status.phase in ("Succeeded", "Failed"))
