"""Watch selectors decide on stored JSON exactly as the typed checks of their readers decide on objects."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from vc_job_controller.requests import owning_job
from vc_podgroup_controller.logic.selection import wants_podgroup
from vc_proto import codec
from vc_proto.batch import BATCH_V1ALPHA1
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.selectors import pods_bound_to, pods_naming_no_group, pods_of_vcjobs
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION, JOB_NAME_KEY, JOB_VERSION_KEY, TASK_SPEC_KEY


def pod(
    *,
    node: str | None = None,
    scheduler: str | None = "volcano",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> Pod:
    meta = ObjectMeta(name="p", namespace="ns", uid="u1", annotations=annotations, labels=labels)
    spec = PodSpec(node_name=node, scheduler_name=scheduler, containers=[Container(name="c", image="busybox")])
    return Pod(api_version=CORE_V1, metadata=meta, spec=spec)


@pytest.mark.parametrize(
    ("node", "selected"),
    [(None, False), ("", False), ("n1", True), ("n2", True), ("n3", False)],
)
def test_pods_bound_to_reads_the_node_name(node: str | None, selected: bool) -> None:
    assert pods_bound_to({"n1", "n2"})(codec.encode(pod(node=node))) is selected


def test_pods_bound_to_reads_the_node_set_at_each_call() -> None:
    nodes: dict[str, object] = {}
    select = pods_bound_to(nodes)
    data = codec.encode(pod(node="late"))
    assert not select(data)
    nodes["late"] = object()
    assert select(data)


def test_a_pod_the_controller_wants_is_always_selected() -> None:
    """The selector may keep more than `wants_podgroup` (the reader re-checks) but never less."""
    names = frozenset({"volcano"})
    select = pods_naming_no_group(names)
    schedulers = (None, "volcano", "default-scheduler")
    annotation_sets = (None, {}, {GROUP_NAME_ANNOTATION: "g"}, {"other": GROUP_NAME_ANNOTATION})
    label_sets = (None, {GROUP_NAME_ANNOTATION: "g"})
    for scheduler, notes, labels in itertools.product(schedulers, annotation_sets, label_sets):
        candidate = pod(scheduler=scheduler, annotations=notes, labels=labels)
        expected = scheduler == "volcano" and GROUP_NAME_ANNOTATION not in (notes or {})
        assert select(codec.encode(candidate)) is expected, (scheduler, notes, labels)
        assert not wants_podgroup(candidate, names) or expected


DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_IN_A_SKIPPED_FIELD = b'{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"livenessProbe":%s}]}}' % DEEP
DEEP_IN_METADATA = b'{"metadata":' * 50_000 + b"{}" + b"}" * 50_000


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[]",
        b"{}",
        b'{"kind":"Pod","metadata":{"annotations":{"a":1}}}',
        b'{"kind":"Pod","metadata":{}}',  # no name: not plainly a pod
        b'{"kind":"Job","metadata":{"name":"j"}}',  # another kind in the pod bucket
        DEEP_IN_A_SKIPPED_FIELD,
        DEEP_IN_METADATA,
    ],
)
def test_bytes_a_selector_cannot_read_are_let_through_to_the_decoder(data: bytes) -> None:
    # The full decode then reports them as undecodable, as it does without a selector.
    assert pods_bound_to({"n1"})(data)
    assert pods_naming_no_group({"volcano"})(data)
    assert pods_of_vcjobs(data)


def test_a_pod_without_spec_is_selected_by_neither() -> None:
    bare = msgspec.structs.replace(pod(), spec=None)
    assert not pods_bound_to({"n1"})(codec.encode(bare))
    assert not pods_naming_no_group({"volcano"})(codec.encode(bare))


def test_pods_of_vcjobs_keep_every_pod_the_job_controller_owns_and_judge_by_the_controller() -> None:
    """A superset of owning_job: annotations are left to the job controller (an edited pod stays a change
    it ignores, not a deletion)."""
    vcjob = OwnerReference(api_version=BATCH_V1ALPHA1, kind="Job", name="j", uid="ju", controller=True)
    refs = (
        None,
        [vcjob],
        [msgspec.structs.replace(vcjob, controller=None)],
        [msgspec.structs.replace(vcjob, api_version="batch/v1")],
        [OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="r", uid="ru", controller=True), vcjob],
    )
    full = {JOB_NAME_KEY: "j", JOB_VERSION_KEY: "0", TASK_SPEC_KEY: "worker"}
    annotation_sets = (None, full, {k: v for k, v in full.items() if k != TASK_SPEC_KEY})
    for owners, notes in itertools.product(refs, annotation_sets):
        candidate = pod(annotations=notes)
        candidate = msgspec.structs.replace(
            candidate, metadata=msgspec.structs.replace(candidate.metadata, owner_references=owners)
        )
        is_vcjobs = any(ref is vcjob for ref in owners or ())
        assert pods_of_vcjobs(codec.encode(candidate)) is is_vcjobs, (owners, notes)
        assert owning_job(candidate) is None or is_vcjobs
