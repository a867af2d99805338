"""Which of a job's queued requests one reconcile pass may handle together. Pure.

Volcano runs one pass per request. A pass is level-triggered (it re-reads the job's whole view), so a
run of requests that can only end in an immediate SyncJob, and do nothing besides, leaves the job
exactly where the same number of passes would: each of those passes would read the same, newest view
(the shell's caches already hold every change that raised them). Their only individual trace is the
history record of each pod's transition, which the merged pass still writes, one per request
(`decide(..., merged=...)`).

Never merged, so still handled one at a time and in order: anything that can match a lifecycle policy
(PodFailed, PodEvicted, TaskCompleted, TaskFailed, Unknown, and PodPending when a timed policy takes
it), Commands and fired delayed actions, and any request that would cancel a delayed action.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Final

from vc_job_controller.logic.policies import apply_policies, delays_cancelled_by
from vc_job_controller.logic.view import DelayedAction, Request
from vc_proto.batch import Job
from vc_proto.vocabulary import Action, Event

# Events no policy can act on (PodPending only through a timed policy, which the resolution shows).
MERGEABLE_EVENTS: Final = frozenset({Event.OUT_OF_SYNC, Event.POD_RUNNING, Event.POD_PENDING, ""})
MAX_MERGED: Final = 256


def mergeable(job: Job, request: Request, delayed: Mapping[str, DelayedAction]) -> bool:
    """True when `request` can only cause an immediate SyncJob and cancels no delayed action."""
    if request.event not in MERGEABLE_EVENTS or request.action or request.delayed_key is not None:
        return False
    resolution = apply_policies(job, request)
    if resolution.action != Action.SYNC_JOB or resolution.delay:
        return False
    return not delays_cancelled_by(request, delayed)


def take_pass(job: Job, queue: deque[Request], delayed: Mapping[str, DelayedAction]) -> list[Request]:
    """Pop the requests the next pass handles: the first; when it is mergeable, also every mergeable
    request right after it (up to the first that is not, and at most MAX_MERGED)."""
    taken = [queue.popleft()]
    if not mergeable(job, taken[0], delayed):
        return taken
    while queue and len(taken) < MAX_MERGED and mergeable(job, queue[0], delayed):
        taken.append(queue.popleft())
    return taken
