"""Where a Job or PodGroup may be submitted: an existing, Open, leaf queue that admits its namespace."""

from __future__ import annotations

from collections.abc import Iterator

from vc_proto.scheduling import Queue
from vc_proto.vocabulary import ROOT_QUEUE, QueueState
from vc_validation.context import AdmissionContext
from vc_validation.queue_hierarchy import children_of
from vc_validation.tenancy import namespace_violation
from vc_validation.verdict import Violation


def queue_state(queue: Queue) -> str:
    """A queue no controller has reconciled yet counts as Open: Volcano's queue controller opens every new
    queue, and refusing work in that instant would race it."""
    state = queue.status.state if queue.status else None
    return state or QueueState.OPEN


def validate_submission(ctx: AdmissionContext, queue_name: str, namespace: str, *, kind: str) -> Iterator[Violation]:
    """Volcano's job-queue checks (`validateJobCreate`) plus Tephra's namespace tenancy."""
    path = "spec.queue"
    queue = ctx.queues.get(queue_name)
    if queue is None:
        what = "job queue" if kind == "job" else "queue"
        yield Violation(
            path, "queue-exists", f'unable to find {what}: queue.scheduling.volcano.sh "{queue_name[:253]}" not found'
        )
        return
    state = queue_state(queue)
    if state != QueueState.OPEN:
        yield Violation(
            path,
            "queue-open",
            f"can only submit {kind} to queue with state `Open`, queue `{queue_name}` status is `{state}`",
        )
    if queue_name == ROOT_QUEUE:
        yield Violation(path, "queue-leaf", f"can not submit {kind} to root queue")
    elif children := children_of(ctx.queues, queue_name):
        yield Violation(
            path,
            "queue-leaf",
            f"can only submit {kind} to leaf queue, queue `{queue_name}` has {len(children)} child queues",
        )
    tenancy = namespace_violation(ctx.queues, queue_name, namespace, path=path)
    if tenancy is not None:
        yield tenancy
