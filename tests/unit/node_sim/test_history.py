"""Which events node-sim publishes again at its first sync: the transitions the stored pods show as made
within REPUBLISH_WITHIN_S, each with the id it was first published under (the stream drops a copy)."""

from __future__ import annotations

import msgspec

from vc_bus.testing import MemoryStore
from vc_core.times import rfc3339_from_epoch
from vc_node_sim.history import REPUBLISH_WITHIN_S, Transition, pod_event, recent_transitions
from vc_node_sim.kubelet import Kubelet
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


async def test_a_transitions_event_that_fails_to_publish_is_published_again() -> None:
    """Its status is stored by then, and nothing would publish the event later: the kubelet retries it
    (the same id: a copy the first attempt did store is dropped by the stream)."""
    published: list[DomainEvent] = []
    failures = [RuntimeError("nats: timeout")]

    async def publish(event: DomainEvent) -> None:
        if failures:
            raise failures.pop()
        published.append(event)

    kubelet = Kubelet(MemoryStore(), SimConfig(), publish)  # type: ignore[arg-type]
    await kubelet._event(_pod(), ev.POD_EXITED, None, phase="Succeeded", exit_code=0)
    assert [e.id for e in published] == [ev.event_id("u1", ev.POD_EXITED, "Succeeded")]
