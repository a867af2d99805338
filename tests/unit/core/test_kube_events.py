"""Which domain events become Kubernetes Events, and client-go's aggregation and spam filter, with an
injected clock (vc_core.kube_events)."""

from __future__ import annotations

from vc_core.kube_events import (
    COMBINED_PREFIX,
    MAX_MESSAGE,
    MAX_NAME,
    EventCorrelator,
    EventIntent,
    Involved,
    event_name,
    intents_for,
    verdicts_ended_by,
)
from vc_proto.events import DomainEvent


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fact(kind: str, reason: str, message: str | None = "m", *, source: str = "s", **fields: object) -> DomainEvent:
    return DomainEvent(
        id="i",
        occurred_at="2026-11-24T00:00:00Z",
        source=source,
        kind=kind,
        namespace="ns",
        name="n",
        reason=reason,
        message=message,
        **fields,  # type: ignore[arg-type]
    )


def intent(message: str = "3/4 tasks in gang unschedulable: 4 Insufficient cpu", name: str = "pg") -> EventIntent:
    return EventIntent(Involved("PodGroup", "ns", name, "uid-1"), "Warning", "FailedCreate", message)


def verdict(message: str) -> EventIntent:
    return EventIntent(Involved("PodGroup", "ns", "pg", "uid-1"), "Warning", "Unschedulable", message, verdict=True)


# -- the table ------------------------------------------------------------------------------------
def test_an_unschedulable_podgroup_is_said_on_it_and_on_its_job_with_the_why_message() -> None:
    pg, job = intents_for(fact("PodGroup", "Unschedulable", "1/1 tasks in gang unschedulable: why", job="j", uid="u"))
    assert pg == EventIntent(
        Involved("PodGroup", "ns", "n", "u"),
        "Warning",
        "Unschedulable",
        "1/1 tasks in gang unschedulable: why",
        verdict=True,
    )
    assert job == EventIntent(
        Involved("Job", "ns", "j"),
        "Warning",
        "PodGroupPending",
        "PodGroup ns:j unschedulable, reason: 1/1 tasks in gang unschedulable: why",
        verdict=True,
    )


def test_volcanos_reasons_map_and_history_only_facts_do_not() -> None:
    assert [(i.type, i.reason) for i in intents_for(fact("Job", "ExecuteAction"))] == [("Normal", "ExecuteAction")]
    assert [(i.type, i.reason) for i in intents_for(fact("Job", "FailedCreate"))] == [("Warning", "FailedCreate")]
    evicted = fact("Pod", "PodEvicted", source="scheduler/a")
    assert [(i.type, i.reason) for i in intents_for(evicted)] == [("Warning", "Evict")]
    assert intents_for(fact("Pod", "PodEvicted", source="job-controller/a")) == ()  # it only saw it
    assert [i.reason for i in intents_for(fact("Queue", "PhaseChanged", phase="Closed"))] == ["CloseQueue"]
    assert [i.reason for i in intents_for(fact("Queue", "PhaseChanged", phase="Open"))] == ["OpenQueue"]
    for kind, reason in (("Pod", "PodBound"), ("Pod", "PodStarted"), ("Job", "PhaseChanged"), ("Task", "X")):
        assert intents_for(fact(kind, reason)) == ()


def test_messages_are_bounded() -> None:
    (said,) = intents_for(fact("Job", "ExecuteAction", "x" * 5000))
    assert len(said.message) == MAX_MESSAGE and said.message.endswith("...")


# -- names ----------------------------------------------------------------------------------------
def test_names_come_from_what_is_said_so_another_life_finds_the_same_event() -> None:
    assert event_name("vc-scheduler", intent()) == event_name("vc-scheduler", intent())
    assert event_name("vc-scheduler", intent()).startswith("pg.")
    assert event_name("vc-scheduler", intent()) != event_name("vc-scheduler", intent("another reason"))
    assert event_name("vc-scheduler", intent()) != event_name("vc-job-controller", intent())
    long = event_name("c", intent(name="x" * 253))
    assert len(long) == MAX_NAME


# -- aggregation ----------------------------------------------------------------------------------
def test_a_repeat_counts_and_keeps_the_first_timestamp() -> None:
    clock = Clock()
    correlator = EventCorrelator("c", clock=clock)
    first = correlator.correlate(intent())
    clock.now += 60
    again = correlator.correlate(intent())
    assert first is not None and first.count == 1 and first.first_in_this_process
    assert again is not None and again.count == 2 and not again.first_in_this_process
    assert (again.first_seen, again.last_seen) == (1000.0, 1060.0)
    other = correlator.correlate(intent("other"))
    assert other is not None and other.count == 1  # another message is another Event


def test_the_spam_filter_allows_a_burst_then_one_per_refill_period_per_object() -> None:
    clock = Clock()
    correlator = EventCorrelator("c", clock=clock, burst=3, refill_s=300)
    kept = [correlator.correlate(intent(f"m{i % 2}")) for i in range(5)]
    assert [o is not None for o in kept] == [True, True, True, False, False]
    assert correlator.correlate(intent("on another object", name="pg2")) is not None  # per object
    clock.now += 299
    assert correlator.correlate(intent()) is None
    clock.now += 1  # one token back
    assert correlator.correlate(intent()) is not None
    assert correlator.correlate(intent()) is None


def test_many_similar_messages_are_combined_into_one_event() -> None:
    clock = Clock()
    correlator = EventCorrelator("c", clock=clock, similar_max=3, burst=100)
    said = [correlator.correlate(intent(f"{n}/4 tasks pending")) for n in range(6)]
    assert all(o is not None for o in said)
    plain, combined = said[:3], said[3:]
    assert all(not o.intent.combined and o.count == 1 for o in plain if o)
    assert [o.intent.message for o in combined if o] == [COMBINED_PREFIX + f"{n}/4 tasks pending" for n in (3, 4, 5)]
    assert [o.count for o in combined if o] == [1, 2, 3]  # one Event, counted
    names = {event_name("c", o.intent) for o in combined if o}
    assert len(names) == 1


def test_similar_messages_are_counted_within_a_window() -> None:
    clock = Clock()
    correlator = EventCorrelator("c", clock=clock, similar_max=2, similar_window_s=600, burst=100)
    for n in range(2):
        correlator.correlate(intent(f"m{n}"))
    clock.now += 601  # the window passed: counting starts again
    later = correlator.correlate(intent("m2"))
    assert later is not None and not later.intent.combined


def test_caches_are_bounded() -> None:
    clock = Clock()
    correlator = EventCorrelator("c", clock=clock, cache_size=8)
    for n in range(100):
        correlator.correlate(intent(name=f"pg{n}"))
    assert len(correlator._seen) == len(correlator._spam) == len(correlator._similar) == 8
    again = correlator.correlate(intent(name="pg0"))  # forgotten: counted from one again
    assert again is not None and again.count == 1


def test_a_verdict_is_one_event_per_object_whose_message_is_the_latest_why() -> None:
    clock = Clock()
    correlator = EventCorrelator("c", clock=clock, similar_max=2)
    said = [correlator.correlate(verdict(f"overused cpu (cluster idle {n}m)")) for n in (153600, 152600, 151600)]
    assert [(o.count, o.intent.message) for o in said if o] == [
        (1, "overused cpu (cluster idle 153600m)"),
        (2, "overused cpu (cluster idle 152600m)"),
        (3, "overused cpu (cluster idle 151600m)"),  # never "(combined from similar events)"
    ]
    assert len({event_name("c", o.intent) for o in said if o}) == 1


def test_a_scheduled_podgroup_ends_its_own_and_its_jobs_waiting_verdicts() -> None:
    scheduled = fact("PodGroup", "Scheduled", "pod group is ready", job="j")
    assert intents_for(scheduled) == ()  # not an Event itself: one per job is a write per job
    assert verdicts_ended_by(scheduled) == (("PodGroup", "ns", "n"), ("Job", "ns", "j"))
    assert verdicts_ended_by(fact("PodGroup", "Unschedulable")) == ()


def test_a_forgotten_occurrence_counts_from_one_again() -> None:
    correlator = EventCorrelator("c", clock=Clock())
    correlator.correlate(verdict("why"))
    correlator.forget(verdict("why"))
    again = correlator.correlate(verdict("why"))
    assert again is not None and again.count == 1
