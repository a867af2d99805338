"""The pure core of the vcjob controller: no I/O, no asyncio, time passed in.

How the shell drives it, per job key (serially):

    view = JobView(job, pods_by_name, podgroup_or_None,
                   delayed=pending_delays_of_this_job, priority_classes={name: value})
    plan = decide(view, request, now)        # logic.decision.decide; request: a Request built as Volcano's handlers do
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

from vc_job_controller.logic.history import HistoryEvent
from vc_job_controller.logic.plan import ObjectRef, ObjectWrite, Plan, PodDeletion, WriteMode
from vc_job_controller.logic.view import DelayedAction, JobView, Request, request_for_fired

# `decide` lives in logic.decision and is imported from there: it uses the plugins, which use
# logic.names, so re-exporting it here would make importing either package first a cycle.

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
    "request_for_fired",
]
