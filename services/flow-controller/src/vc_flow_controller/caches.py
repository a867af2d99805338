"""The flow controller's view: JobFlows, JobTemplates, CronJobs, the queues, and vcjobs indexed by the
JobFlow or CronJob that controls them and by the JobTemplate they were made from.

Changes become work keys `(kind, namespace, name)`: a flow, template or CronJob's own change; a job's
change wakes its owner (its phase may let the next flow start, or free a CronJob's slot); a job's
arrival or removal wakes its template (its status lists the jobs); a template's change wakes the
flows that name it (a flow may have been waiting for it).
"""

from __future__ import annotations

from collections.abc import Callable

from vc_core.store import ObjectStore
from vc_flow_controller.logic.flow_jobs import template_of
from vc_flow_controller.logic.owners import OwnerKey, owner_key
from vc_proto.batch import Job
from vc_proto.cronjob import CronJob
from vc_proto.flow import JobFlow, JobTemplate
from vc_proto.kinds import KubeObject
from vc_proto.scheduling import Queue
from vc_runtime.informer import Informer

Index = dict[OwnerKey, set[str]]  # owner or template key -> names of jobs in its namespace


class FlowCaches:
    def __init__(self, store: ObjectStore, *, submit: Callable[[OwnerKey], None]) -> None:
        self._submit = submit
        self.flows: Informer[JobFlow] = Informer(store, JobFlow, on_change=self._flow_changed)
        self.templates: Informer[JobTemplate] = Informer(store, JobTemplate, on_change=self._template_changed)
        self.cronjobs: Informer[CronJob] = Informer(store, CronJob, on_change=self._cronjob_changed)
        self.jobs: Informer[Job] = Informer(store, Job, on_change=self._job_changed)
        self.queues: Informer[Queue] = Informer(store, Queue)
        self._by_owner: Index = {}
        self._by_template: Index = {}

    @property
    def informers(self) -> list[Informer[KubeObject]]:
        return [self.flows, self.templates, self.cronjobs, self.jobs, self.queues]  # type: ignore[list-item]

    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers)

    def all_keys(self) -> list[OwnerKey]:
        keys = [*self._by_owner, *self._by_template]
        for kind, informer in (("JobFlow", self.flows), ("JobTemplate", self.templates), ("CronJob", self.cronjobs)):
            keys += [(kind, obj.metadata.namespace or "", obj.metadata.name or "") for obj in informer.items.values()]
        return keys

    def jobs_of(self, key: OwnerKey) -> list[Job]:
        """The cached jobs whose controller reference names this owner (of any uid)."""
        return self._jobs(key, self._by_owner)

    def jobs_from_template(self, key: OwnerKey) -> list[Job]:
        return self._jobs(key, self._by_template)

    def queue_map(self) -> dict[str, Queue]:
        return {queue.metadata.name or "": queue for queue in self.queues.items.values()}

    def templates_in(self, namespace: str) -> dict[str, JobTemplate]:
        return {
            t.metadata.name or "": t for t in self.templates.items.values() if (t.metadata.namespace or "") == namespace
        }

    def _jobs(self, key: OwnerKey, index: Index) -> list[Job]:
        found = (self.jobs.get(key[1], name) for name in index.get(key, ()))
        return [job for job in found if job is not None]

    # -- change hooks ----------------------------------------------------------------------------------
    def _flow_changed(self, old: JobFlow | None, new: JobFlow | None) -> None:
        self._submit(_key("JobFlow", new or old))

    def _cronjob_changed(self, old: CronJob | None, new: CronJob | None) -> None:
        self._submit(_key("CronJob", new or old))

    def _template_changed(self, old: JobTemplate | None, new: JobTemplate | None) -> None:
        template = new or old
        assert template is not None
        self._submit(_key("JobTemplate", template))
        namespace, name = template.metadata.namespace or "", template.metadata.name or ""
        for flow in self.flows.items.values():
            if (flow.metadata.namespace or "") == namespace and any(
                item.name == name for item in (flow.spec.flows or [] if flow.spec else [])
            ):
                self._submit(_key("JobFlow", flow))

    def _job_changed(self, old: Job | None, new: Job | None) -> None:
        for job, add in ((old, False), (new, True)):
            if job is not None:
                self._index(job, add=add)
        job = new or old
        assert job is not None
        if (owner := owner_key(job)) is not None:
            self._submit(owner)
        if (old is None or new is None) and (template := template_of(job)) is not None:
            self._submit(("JobTemplate", *template))

    def _index(self, job: Job, *, add: bool) -> None:
        name = job.metadata.name or ""
        template = template_of(job)
        for index, key in (
            (self._by_owner, owner_key(job)),
            (self._by_template, ("JobTemplate", *template) if template else None),
        ):
            if key is None:
                continue
            if add:
                index.setdefault(key, set()).add(name)
            elif (names := index.get(key)) is not None:
                names.discard(name)
                if not names:
                    del index[key]


def _key(kind: str, obj: KubeObject | None) -> OwnerKey:
    assert obj is not None
    return (kind, obj.metadata.namespace or "", obj.metadata.name or "")
