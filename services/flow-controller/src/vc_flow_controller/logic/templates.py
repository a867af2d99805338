"""A JobTemplate's status: `jobDependsOnList`, the jobs made from it (Volcano's jobtemplate controller). Pure.

Volcano writes the list only when some job exists, and never empties it; so does Tephra (sorted).
"""

from __future__ import annotations

from collections.abc import Iterable

from vc_proto.flow import JobTemplate, JobTemplateStatus


def template_status(template: JobTemplate, job_names: Iterable[str]) -> JobTemplateStatus | None:
    """The new status, or None when the stored one stands."""
    names = sorted(set(job_names))
    old = template.status or JobTemplateStatus()
    if not names or names == (old.job_depends_on_list or []):
        return None
    return JobTemplateStatus(job_depends_on_list=names)
