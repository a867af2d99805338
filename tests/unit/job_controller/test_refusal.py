"""A job admission would refuse is not acted on: its status and history say why, once."""

from __future__ import annotations

import asyncio

from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import NOW, job, run, task, view
from vc_job_controller.admissibility import Admissibility
from vc_job_controller.logic.plan import Plan
from vc_job_controller.logic.refusal import INVALID, plan_refusal
from vc_proto.batch import Job, JobSpec

MESSAGE = "spec.tasks[0].replicas: 'replicas' must be >= 0 in task: work"


def test_a_refused_job_gets_its_reason_in_status_condition_and_history_and_nothing_else() -> None:
    fresh = job([task("work", -5)])
    plan = plan_refusal(fresh, MESSAGE, NOW)
    assert plan.status is not None and plan.status.state is not None
    assert (plan.status.state.phase, plan.status.state.reason, plan.status.state.message) == (None, INVALID, MESSAGE)
    assert [(c.status, c.reason, c.message) for c in plan.status.conditions or []] == [("Pending", INVALID, MESSAGE)]
    assert [(e.reason, e.message) for e in plan.events] == [(INVALID, f"not acted on: {MESSAGE}")]
    assert plan == Plan(status=plan.status, events=plan.events)  # no PodGroup, no pods, no plugin objects


def test_a_refusal_is_stated_once_and_again_only_when_the_reasons_change() -> None:
    fresh = job([task("work", -5)])
    refused = replace(fresh, status=plan_refusal(fresh, MESSAGE, NOW).status)
    assert plan_refusal(refused, MESSAGE, NOW).is_empty
    again = plan_refusal(refused, "spec.queue: unable to find job queue", NOW)
    assert again.status is not None and len(again.status.conditions or []) == 1 and again.events


def test_a_refused_job_once_fixed_is_initiated_as_any_new_job() -> None:
    fresh = job([task("work", 2)])
    refused = replace(fresh, status=plan_refusal(fresh, MESSAGE, NOW).status)
    plan = run(view(refused, pg=None))
    assert plan.podgroup_to_create is not None
    assert plan.status is not None and plan.status.state is not None
    assert (plan.status.state.phase, plan.status.state.reason) == ("Pending", "JobInitialized")


def test_admissibility_remembers_a_verdict_until_the_spec_changes_and_checks_the_queue() -> None:
    asked: list[str] = []

    async def queue_exists(name: str) -> bool:
        asked.append(name)
        return name == "default"

    async def scenario() -> None:
        admissibility = Admissibility(queue_exists=queue_exists)
        good = job([task("work", 2)])
        key = ("ns", "job")
        assert await admissibility.violations(key, good) == ()
        bad = replace(good, spec=replace(good.spec or JobSpec(), tasks=[task("work", -5)]))
        assert "replicas-non-negative" in {v.rule for v in await admissibility.violations(key, bad)}
        assert asked == ["default"]  # a job refused on its spec needs no queue lookup
        elsewhere: Job = replace(good, spec=replace(good.spec or JobSpec(), queue="nowhere"))
        assert [v.rule for v in await admissibility.violations(key, elsewhere)] == ["queue-exists"]

    asyncio.run(scenario())
