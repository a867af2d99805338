"""Why a job is not placed, in terms a user can act on (appended after Volcano's condition message).

Volcano says which predicates failed on how many nodes; this adds how much was asked and how much
the best eligible node has, and which queue quota or enqueue check held the job back.
"""

from __future__ import annotations

from vc_scheduling.framework.model import JobInfo, TaskStatus
from vc_scheduling.framework.session import Session


def explain_job(ssn: Session, job: JobInfo) -> str:
    sentences = list(job.why.values())
    sentences.extend(_resource_shortfalls(job))
    if not sentences:
        return ""
    return "Why: " + "; ".join(sentences) + "."


def _resource_shortfalls(job: JobInfo) -> list[str]:
    pending = job.tasks_in(TaskStatus.PENDING)
    out: list[str] = []
    seen: set[bytes] = set()
    for task in sorted(pending, key=lambda t: t.name):
        errors = job.nodes_fit_errors.get(task.uid)
        if errors is None or task.class_key in seen:
            continue
        seen.add(task.class_key)
        alike = sum(1 for t in pending if t.class_key == task.class_key)
        for name, (need, best) in sorted(errors.shortfalls.items()):
            out.append(
                f"{alike} pending task(s) like {task.name} need {name} {need} each, "
                f"but the most free on any node that passes the other checks is {best}"
            )
        other = [r for r in errors.reasons if not r.startswith("Insufficient ")]
        if other and not errors.shortfalls:
            out.append(
                f"{alike} pending task(s) like {task.name} are refused by every node ({', '.join(sorted(other))})"
            )
    return out
