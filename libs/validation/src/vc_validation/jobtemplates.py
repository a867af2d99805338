"""JobTemplate validation on CREATE and UPDATE: its `spec` is a vcjob's spec and meets a vcjob's rules.

Volcano has no webhook for JobTemplates (a bad one fails only when a flow creates its job); Tephra
refuses it at the door, where the author sees why. The queue's tenancy is judged when the queue is
known; the flow controller judges the created job again (queue existence and state included).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from vc_proto.flow import JobTemplate
from vc_proto.scheduling import Queue
from vc_validation.job_templates import validate_embedded_job_spec
from vc_validation.names import dns1123_subdomain_errors, format_errors, validate_metadata_bounds
from vc_validation.verdict import Violation
from vc_validation.workload_limits import MAX_JOB_NAME_LENGTH

DEFAULT_NAMESPACE = "default"


def validate_jobtemplate(template: JobTemplate, queues: Mapping[str, Queue] | None = None) -> list[Violation]:
    namespace = template.metadata.namespace or DEFAULT_NAMESPACE
    return [
        *_name(template.metadata.name or ""),
        *validate_metadata_bounds(template.metadata),
        *validate_embedded_job_spec(template.spec, path="spec", namespace=namespace, queues=queues),
    ]


def _name(name: str) -> Iterator[Violation]:
    # A flow names its job `<jobflow>-<template>`, at most 63 characters: a longer name can never be used.
    if errors := dns1123_subdomain_errors(name, max_length=MAX_JOB_NAME_LENGTH):
        yield Violation("metadata.name", "jobtemplate-name", format_errors(errors))
