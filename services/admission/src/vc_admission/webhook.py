"""AdmissionReview v1 in, AdmissionReview v1 out: the Kubernetes front-end of the same pure rules. Pure.

One route per Volcano webhook path. Mutating routes answer with an RFC 6902 JSONPatch (base64, as
the API server expects); validating routes answer allowed or denied with every violation's field and
message. A malformed review is answered, never raised: the API server must always get a response.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, Final

import msgspec

from vc_proto import codec
from vc_proto.batch import Job
from vc_proto.core import Pod
from vc_proto.cronjob import CronJob
from vc_proto.flow import JobFlow, JobTemplate
from vc_proto.kinds import KINDS, KubeObject
from vc_proto.scheduling import PodGroup, Queue
from vc_proto.topology import HyperNode
from vc_validation import (
    AdmissionContext,
    Violation,
    check_request_size,
    json_patch,
    mutate_cronjob,
    mutate_job,
    mutate_pod,
    mutate_podgroup,
    mutate_queue,
    validate_cronjob,
    validate_job_create,
    validate_job_update,
    validate_jobflow,
    validate_jobtemplate,
    validate_podgroup_create,
    validate_queue_delete,
    validate_queue_write,
)
from vc_validation.hypernodes import validate_hypernode
from vc_validation.pods_tenancy import validate_pod_submission

ADMISSION_V1: Final = "admission.k8s.io/v1"
Outcome = tuple[list[Violation], KubeObject | None]  # violations, and the mutated object (mutating routes)


def _job_validate(op: str, obj: Any, old: Any, ctx: AdmissionContext) -> Outcome:
    if op == "CREATE":
        return validate_job_create(obj, ctx), None
    return (validate_job_update(obj, old) if op == "UPDATE" else []), None


def _queue_validate(op: str, obj: Any, old: Any, ctx: AdmissionContext) -> Outcome:
    return (validate_queue_delete(old, ctx) if op == "DELETE" else validate_queue_write(obj, old, ctx)), None


def _workload_validate(op: str, obj: Any, old: Any, ctx: AdmissionContext) -> Outcome:
    """Volcano's /jobflows/validate and /cronjobs/validate (CREATE and UPDATE), and Tephra's for JobTemplates."""
    if op == "DELETE":
        return [], None
    if isinstance(obj, JobFlow):
        return validate_jobflow(obj), None
    if isinstance(obj, JobTemplate):
        return validate_jobtemplate(obj, ctx.queues), None
    return validate_cronjob(obj, ctx.queues), None


ROUTES: Final[dict[str, tuple[type[KubeObject], Callable[[str, Any, Any, AdmissionContext], Outcome]]]] = {
    "/jobs/mutate": (
        Job,
        lambda op, obj, old, ctx: (
            [],
            mutate_job(obj, scheduler_name=ctx.scheduler_names[0]) if op == "CREATE" else obj,
        ),
    ),
    "/jobs/validate": (Job, _job_validate),
    "/queues/mutate": (Queue, lambda op, obj, old, ctx: ([], mutate_queue(obj) if op == "CREATE" else obj)),
    "/queues/validate": (Queue, _queue_validate),
    "/podgroups/mutate": (
        PodGroup,
        lambda op, obj, old, ctx: ([], mutate_podgroup(obj, ctx) if op == "CREATE" else obj),
    ),
    "/podgroups/validate": (
        PodGroup,
        lambda op, obj, old, ctx: (validate_podgroup_create(obj, ctx) if op == "CREATE" else [], None),
    ),
    "/pods/mutate": (
        Pod,
        lambda op, obj, old, ctx: (
            [],
            mutate_pod(obj, resource_groups=ctx.resource_groups, queue_gate=ctx.queue_allocation_gate)
            if op == "CREATE"
            else obj,
        ),
    ),
    "/pods/validate": (
        Pod,
        lambda op, obj, old, ctx: (validate_pod_submission(obj, ctx) if op == "CREATE" else [], None),
    ),
    "/jobflows/validate": (JobFlow, _workload_validate),
    "/jobtemplates/validate": (JobTemplate, _workload_validate),
    "/cronjobs/mutate": (CronJob, lambda op, obj, old, ctx: ([], mutate_cronjob(obj) if op != "DELETE" else obj)),
    "/cronjobs/validate": (CronJob, _workload_validate),
    "/hypernodes/validate": (
        HyperNode,
        lambda op, obj, old, ctx: (validate_hypernode(obj) if op != "DELETE" else [], None),
    ),
}


def _response(
    uid: str, *, allowed: bool, message: str = "", patch: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": 400, "reason": "BadRequest", "message": message}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": ADMISSION_V1, "kind": "AdmissionReview", "response": response}


def _decode(raw: Any, kind: type[KubeObject], namespace: str | None) -> KubeObject | None:
    if not isinstance(raw, dict):
        return None
    obj = msgspec.convert(raw, kind)
    if KINDS[kind.__name__].namespaced and not obj.metadata.namespace and namespace:
        obj = msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, namespace=namespace))
    return obj


_JUDGE_OLD_OBJECT: Final = ("/jobs/validate", "/queues/validate")  # their rules read oldObject on UPDATE/DELETE


def handle_review(path: str, body: bytes, ctx: AdmissionContext) -> dict[str, Any]:
    """The AdmissionReview response for a request body posted to `path`."""
    too_large = check_request_size(len(body))
    try:
        review = json.loads(body)
        request = review["request"]
        uid = str(request["uid"])
    except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: nested too deeply (found by fuzzing)
        return _response(
            "", allowed=False, message="malformed AdmissionReview: expected {request: {uid, operation, object}}"
        )
    if too_large is not None:
        return _response(uid, allowed=False, message=too_large.message)
    route = ROUTES.get(path)
    if route is None:
        return _response(uid, allowed=False, message=f"no admission rule at {path}")
    kind, rule = route
    operation = str(request.get("operation", ""))
    try:
        obj = _decode(request.get("object"), kind, request.get("namespace"))
        old = _decode(request.get("oldObject"), kind, request.get("namespace"))
    except msgspec.ValidationError as exc:
        return _response(uid, allowed=False, message=f"{kind.__name__} does not decode: {exc}")
    except RecursionError:
        return _response(uid, allowed=False, message=f"{kind.__name__} does not decode: nested too deeply")
    # The rules judge what Kubernetes always sends (found by fuzzing: a null object gave a 500).
    if obj is None and operation != "DELETE":
        return _response(
            uid,
            allowed=False,
            message=f"request.object: a {kind.__name__} is required for {operation or 'an operation'}",
        )
    if old is None and operation in ("UPDATE", "DELETE") and path in _JUDGE_OLD_OBJECT:
        return _response(
            uid, allowed=False, message=f"request.oldObject: a {kind.__name__} is required for {operation}"
        )
    violations, mutated = rule(operation, obj, old, ctx)
    if violations:
        return _response(uid, allowed=False, message="; ".join(f"{v.field}: {v.message}" for v in violations))
    patch = json_patch(codec.to_dict(obj), codec.to_dict(mutated)) if mutated is not None and obj is not None else None
    return _response(uid, allowed=True, patch=patch)
