"""The pure core of the vcjob controller: no I/O, no asyncio, time passed in.

How the shell drives it, per job key (serially):

    view = JobView(job, pods_by_name, podgroup_or_None,
                   delayed=pending_delays_of_this_job, priority_classes={name: value})
    plan = decide(view, request, now)        # request: a Request built as Volcano's handlers do
    execute plan in the order documented in `logic/plan.py`

- Requests: pod add/update/delete, PodGroup phase change, Command (`action` set, event CommandIssued),
  job add/update (OutOfSync). Fill `job_version` from the pod's `volcano.sh/job-version` annotation,
  `previous_phase` (and `pod` for deletions) so the pod's transition lands in the job's history.
- Delayed actions: keep `plan.delays_to_schedule` per job (key = pod name), drop `delays_to_cancel`,
  and when one is due call `decide(view, request_for_fired(delayed), now)`.
- Errors: `decide` does not raise for bad user input (the job ends Failed with a condition);
  when executing a plan keeps failing, Volcano gives up with `Request(action="TerminateJob")`.
- Job status writes must not themselves trigger requests (Volcano ignores status-only updates).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vc_job_controller.logic.history import HistoryEvent
from vc_job_controller.logic.plan import ObjectRef, ObjectWrite, Plan, PodDeletion, WriteMode
from vc_job_controller.logic.view import DelayedAction, JobView, Request, request_for_fired

if TYPE_CHECKING:
    from vc_job_controller.logic.decision import decide


def __getattr__(name: str) -> Any:
    # `decide` uses the plugins, and the plugins use `logic.names`: importing it lazily lets either
    # package be imported first.
    if name == "decide":
        from vc_job_controller.logic.decision import decide

        return decide
    raise AttributeError(name)


__all__ = [
    "DelayedAction",
    "HistoryEvent",
    "JobView",
    "ObjectRef",
    "ObjectWrite",
    "Plan",
    "PodDeletion",
    "Request",
    "WriteMode",
    "decide",
    "request_for_fired",
]
