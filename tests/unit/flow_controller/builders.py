"""Objects for the flow controller's pure tests: Volcano's example files, and jobs in a given phase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import yaml

from vc_proto import codec
from vc_proto.batch import Job, JobState, JobStatus
from vc_proto.cronjob import CronJob
from vc_proto.flow import JobFlow, JobTemplate
from vc_validation import mutate_cronjob

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "volcano"


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]


def example_flow(uid: str = "flow-uid") -> JobFlow:
    flow = codec.from_dict(documents("jobflow-JobFlow.yaml")[0])
    assert isinstance(flow, JobFlow)
    meta = msgspec.structs.replace(flow.metadata, uid=uid, creation_timestamp="2026-01-01T00:00:00Z")
    return msgspec.structs.replace(flow, metadata=meta)


def example_templates(namespace: str = "default") -> dict[str, JobTemplate]:
    templates = [codec.from_dict(d) for d in documents("jobflow-JobTemplate.yaml")]
    out: dict[str, JobTemplate] = {}
    for template in templates:
        assert isinstance(template, JobTemplate)
        meta = msgspec.structs.replace(template.metadata, namespace=namespace)
        out[template.metadata.name or ""] = msgspec.structs.replace(template, metadata=meta)
    return out


def example_cronjob(created: str = "2026-01-01T00:00:00Z", **spec: Any) -> CronJob:
    document = documents("cronjob.yaml")[0]
    document["metadata"].update(namespace="default", uid="cron-uid", creationTimestamp=created)
    document["spec"].update(spec)
    cronjob = codec.from_dict(document)
    assert isinstance(cronjob, CronJob)
    return mutate_cronjob(cronjob)


def with_phase(
    job: Job, phase: str, *, uid: str | None = None, created: str = "2026-01-01T00:00:00Z", finished: str | None = None
) -> Job:
    meta = msgspec.structs.replace(job.metadata, uid=uid or f"uid-{job.metadata.name}", creation_timestamp=created)
    state = JobState(phase=phase, last_transition_time=finished)
    return msgspec.structs.replace(job, metadata=meta, status=JobStatus(state=state))
