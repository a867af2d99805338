"""vcctl job view / describe say why a job waits as the dashboard and the history do: the explanation
first, Volcano's condition text after it; the condition itself keeps Volcano's text first."""

from __future__ import annotations

from typing import Any

import msgspec

from vc_cli.describe import describe_job, describe_podgroup
from vc_proto.batch import Job
from vc_proto.scheduling import PodGroup

VOLCANO = "10/0 tasks in gang unschedulable: pod group is not ready, 10 minAvailable"
WHY = "Needs 40 nvidia.com/gpu for 10 pods; the cluster has 32 nvidia.com/gpu in all: it can never run as submitted."


def _podgroup(phase: str) -> PodGroup:
    doc: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "big", "namespace": "default"},
        "spec": {"minMember": 10},
        "status": {
            "phase": phase,
            "conditions": [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "reason": "NotEnoughResources",
                    "message": f"{VOLCANO}. Why: {WHY}",
                    "lastTransitionTime": "2026-01-01T00:00:05Z",
                }
            ],
        },
    }
    return msgspec.convert(doc, PodGroup)


def _job() -> Job:
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "big", "namespace": "default"},
        "spec": {"queue": "default", "tasks": []},
    }
    return msgspec.convert(doc, Job)


def _why_line(lines: list[str]) -> str:
    (line,) = [line for line in lines if line.strip().startswith("Why Pending:")]
    return line.split("Why Pending:", 1)[1].strip()


def test_job_view_and_describe_show_the_explanation_first() -> None:
    lines = describe_job(_job(), podgroup=_podgroup("Pending"), pods=[], events=[])
    assert _why_line(lines) == f"{WHY} Scheduler detail: {VOLCANO}."


def test_describe_podgroup_shows_it_too_and_only_while_the_group_waits() -> None:
    assert _why_line(describe_podgroup(_podgroup("Inqueue"), pods=[], events=[])).startswith("Needs 40")
    running = describe_podgroup(_podgroup("Running"), pods=[], events=[])
    assert _why_line(running) == "<none>"
