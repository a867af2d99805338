"""The load of a chaos run: gang vcjobs submitted through admission (as `vcctl job run` does) at the
planned times, into capped queues the load exceeds.

A careful client: when the outcome of a create is unknown (no answer in time, admission down, NATS
unreachable) it asks again until it gets a definite one; AlreadyExists after an unknown attempt
means the first one landed. So every submission ends acknowledged or refused, and the checker can
hold the system to each.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec
import nats.errors
from nats.aio.client import Client

from tests.chaos.history import History, Submission
from tests.chaos.plan import JobPlan, QueuePlan
from vc_proto import api, subjects
from vc_proto.subjects import object_key

NAMESPACE = "default"
REQUEST_TIMEOUT_S = 10.0
GIVE_UP_AFTER_S = 300.0  # a submission still unanswered after this long stays "unknown"
_reply = msgspec.json.Decoder(api.WriteReply)
_RETRY_CODES = (api.UNAVAILABLE, api.INTERNAL, api.CONFLICT)  # nothing definite: ask again


class _Head(msgspec.Struct):
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


_head = msgspec.json.Decoder(_Head)


def job_document(job: JobPlan) -> dict[str, Any]:
    annotations = {"sim.tephra.dev/duration": f"{job.duration_s}s"}
    if job.exit_code:
        annotations["sim.tephra.dev/exit-code"] = str(job.exit_code)
    template = {
        "metadata": {"annotations": annotations},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": job.cpu, "memory": job.memory}}}
            ],
        },
    }
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "queue": job.queue,
        "minAvailable": job.min_available,
        # A gang that loses a member restarts whole: it never runs on below minAvailable.
        "policies": [{"event": "PodEvicted", "action": "RestartJob"}, {"event": "PodFailed", "action": "RestartJob"}],
        "tasks": [{"name": "worker", "replicas": job.replicas, "template": template}],
    }
    if job.ttl_s is not None:
        spec["ttlSecondsAfterFinished"] = job.ttl_s
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": job.name, "namespace": NAMESPACE},
        "spec": spec,
    }


def queue_document(queue: QueuePlan) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": queue.name},
        "spec": {"weight": 1, "reclaimable": False, "capability": {"cpu": queue.cpu, "memory": queue.memory}},
    }


class Load:
    def __init__(self, nc: Client, history: History) -> None:
        self.nc = nc
        self.history = history
        self.in_flight = 0

    async def create(self, document: dict[str, Any]) -> Submission:
        """Create through admission until a definite answer (or GIVE_UP_AFTER_S)."""
        meta = document["metadata"]
        key = object_key(meta.get("namespace"), meta["name"])
        request = msgspec.json.encode(api.Create(object=msgspec.Raw(msgspec.json.encode(document))))
        deadline, unsure, attempt = time.monotonic() + GIVE_UP_AFTER_S, False, 0
        while time.monotonic() < deadline:
            attempt += 1
            try:
                msg = await self.nc.request(subjects.ADMISSION_WRITE, request, timeout=REQUEST_TIMEOUT_S)
            except nats.errors.NoRespondersError:
                await asyncio.sleep(0.5)  # no admission instance up: nothing was sent to anyone
                continue
            except (
                nats.errors.TimeoutError,
                nats.errors.ConnectionClosedError,
                nats.errors.StaleConnectionError,
                nats.errors.ConnectionReconnectingError,
                OSError,
            ):
                unsure = True
                await asyncio.sleep(min(0.2 * attempt, 2.0))
                continue
            reply = _reply.decode(msg.data)
            if reply.error is None:
                head = _head.decode(bytes(reply.object)).metadata
                return Submission(
                    meta["name"],
                    key,
                    "acked",
                    time.time(),
                    int(head.get("resourceVersion") or 0),
                    str(head.get("uid") or ""),
                )
            if reply.error.code == api.ALREADY_EXISTS and unsure:
                return Submission(meta["name"], key, "acked", time.time(), detail="an earlier attempt landed")
            if reply.error.code in _RETRY_CODES:
                unsure = True
                await asyncio.sleep(min(0.2 * attempt, 2.0))
                continue
            return Submission(
                meta["name"], key, "refused", time.time(), detail=f"{reply.error.code}: {reply.error.message}"
            )
        return Submission(
            meta["name"], key, "unknown", time.time(), detail=f"no definite answer in {GIVE_UP_AFTER_S:.0f} s"
        )

    async def submit(self, job: JobPlan) -> None:
        self.in_flight += 1
        try:
            self.history.submissions.append(await self.create(job_document(job)))
        finally:
            self.in_flight -= 1

    async def run(self, jobs: tuple[JobPlan, ...], started: float) -> None:
        """Submit every job at its planned time (seconds after `started`, on the monotonic clock)."""
        async with asyncio.TaskGroup() as tg:
            for job in jobs:
                wait = started + job.submit_at_s - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                tg.create_task(self.submit(job), name=f"submit:{job.name}")
