"""Plan: everything one `decide` call wants done, as data.

The shell executes a plan in this order, which is Volcano's and keeps every step retry-safe
(all names are deterministic, so re-running `decide` after a crash re-plans only what is missing):

1. `delays_to_cancel`, then
2. `objects_to_write` (plugin ConfigMap/Secret/Service/NetworkPolicy, volume claims; pods mount them),
3. `podgroup_to_create` / `podgroup_to_update`,
4. `pods_to_delete` (when `mark_out_of_sync`, first patch the annotation
   `volcano.sh/controller-out-of-sync: "true"`; if that patch fails, do not delete),
5. `pods_to_create` (AlreadyExists is success),
6. `status` (compare-and-set on the job; None means unchanged),
7. `podgroup_to_delete`, `objects_to_delete` (NotFound is success),
8. `delays_to_schedule`, then publish `events`.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from vc_job_controller.logic.history import HistoryEvent
from vc_job_controller.logic.view import DelayedAction
from vc_proto.batch import JobStatus
from vc_proto.core import ConfigMap, NetworkPolicy, PersistentVolumeClaim, Pod, Secret, Service
from vc_proto.scheduling import PodGroup
from vc_proto.vocabulary import Action

# What a job's plugins create, and the claims of its volumes[].volumeClaim (logic/volumes.py).
PluginObject = Service | ConfigMap | Secret | NetworkPolicy | PersistentVolumeClaim


class WriteMode(StrEnum):
    # Create; an existing object is left as it is (Service, NetworkPolicy, the ssh Secret, a claim).
    CREATE_IF_ABSENT = "CreateIfAbsent"
    # Create, or update when the stored content differs (the svc hosts ConfigMap).
    CREATE_OR_UPDATE = "CreateOrUpdate"


class ObjectWrite(msgspec.Struct, frozen=True, kw_only=True):
    obj: PluginObject
    mode: WriteMode

    @property
    def kind(self) -> str:
        return type(self.obj).__name__

    @property
    def name(self) -> str:
        return self.obj.metadata.name or ""


class ObjectRef(msgspec.Struct, frozen=True, kw_only=True):
    kind: str
    name: str


class PodDeletion(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    uid: str = ""
    # killPods marks a pod out of sync before deleting it, so its later events only trigger SyncJob.
    mark_out_of_sync: bool = False
    reason: str = ""


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    # The action that was executed (after policy resolution); SyncJob when nothing else applied.
    action: str = Action.SYNC_JOB
    # The new job status to write; None when nothing in it changed.
    status: JobStatus | None = None
    pods_to_create: tuple[Pod, ...] = ()
    pods_to_delete: tuple[PodDeletion, ...] = ()
    podgroup_to_create: PodGroup | None = None
    podgroup_to_update: PodGroup | None = None
    podgroup_to_delete: str | None = None
    objects_to_write: tuple[ObjectWrite, ...] = ()
    objects_to_delete: tuple[ObjectRef, ...] = ()
    delays_to_schedule: tuple[DelayedAction, ...] = ()
    # Keys (pod names, "" for job-level) of the job's pending delayed actions to cancel.
    delays_to_cancel: tuple[str, ...] = ()
    events: tuple[HistoryEvent, ...] = ()
    # A status change of pod counts alone, not written now (`decide(..., hold_counts=True)`): the shell
    # syncs the job again once the hold is over, and that pass writes the counts it finds then.
    status_held: bool = False
    # With it: (task, phase) of each task whose summarised phase the held change moves (the shell notes
    # when it first saw each, for the records the write will make).
    held_tasks: tuple[tuple[str, str], ...] = ()

    @property
    def is_empty(self) -> bool:
        return self == Plan(action=self.action)
