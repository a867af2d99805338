"""Who may write what through the embedded API: the caller is the NATS identity, never a claim."""

from __future__ import annotations

import pytest

from vc_admission.authorization import authorize
from vc_core.errors import PolicyViolation
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.bus import BUS_V1ALPHA1, Command
from vc_proto.core import CORE_V1, Pod, Secret
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, Queue
from vc_security.registry import BUILT_IN_ADMIN, Person

ALICE = Person("alice", "tenant", frozenset({"team-a", "team-a-ci"}))
JOB_REF = OwnerReference(api_version=BATCH_V1ALPHA1, kind="Job", name="j", uid="u1", controller=True)


def meta(name: str, namespace: str | None = "team-a", **kw: object) -> ObjectMeta:
    return ObjectMeta(name=name, namespace=namespace, **kw)  # type: ignore[arg-type]


def job(namespace: str = "team-a") -> Job:
    return Job(api_version=BATCH_V1ALPHA1, metadata=meta("j", namespace))


@pytest.mark.parametrize(
    "caller, kind, namespace, allowed",
    [
        (ALICE, "Job", "team-a", True),
        (ALICE, "Job", "team-a-ci", True),
        (ALICE, "Job", "team-b", False),
        (ALICE, "Pod", "default", False),
        (ALICE, "Queue", None, False),
        (ALICE, "Node", None, False),
        (ALICE, "PriorityClass", None, False),
        (ALICE, "HyperNode", None, False),  # a tenant's fake switch would steer every gang's placement
        (BUILT_IN_ADMIN, "Job", "team-b", True),
        (BUILT_IN_ADMIN, "Queue", None, True),
        (BUILT_IN_ADMIN, "Node", None, True),
    ],
)
def test_tenants_write_in_their_namespaces_and_admins_own_queues_and_nodes(
    caller: Person, kind: str, namespace: str | None, allowed: bool
) -> None:
    if allowed:
        authorize(caller, "delete", kind, namespace, new=None, old=None)
    else:
        with pytest.raises(PolicyViolation, match=f"{caller.identity} may not delete"):
            authorize(caller, "delete", kind, namespace, new=None, old=None)


def test_the_namespace_refusal_names_what_the_caller_holds() -> None:
    with pytest.raises(PolicyViolation, match=r"in namespace 'team-b' \(its namespaces: team-a, team-a-ci\)"):
        authorize(ALICE, "create", "Job", "team-b", new=job("team-b"), old=None)


@pytest.mark.parametrize("caller", [ALICE, BUILT_IN_ADMIN])
def test_objects_tephra_owns_are_nobodys_to_write(caller: Person) -> None:
    ssh = Secret(api_version=CORE_V1, metadata=meta("j-ssh", owner_references=[JOB_REF]), type="Opaque")
    labelled = Secret(api_version=CORE_V1, metadata=meta("x", labels={"app.kubernetes.io/managed-by": "tephra"}))
    group = PodGroup(api_version=SCHEDULING_V1BETA1, metadata=meta("j-uid", owner_references=[JOB_REF]))
    pod = Pod(api_version=CORE_V1, metadata=meta("j-worker-0", owner_references=[JOB_REF]))
    plain = Secret(api_version=CORE_V1, metadata=meta("j-ssh"), type="Opaque")
    for owned in (ssh, labelled, group, pod):
        kind = type(owned).__name__
        with pytest.raises(PolicyViolation, match="only Tephra writes it"):
            authorize(caller, "update", kind, "team-a", new=plain if kind == "Secret" else owned, old=owned)  # replace
        with pytest.raises(PolicyViolation, match="only Tephra writes it"):
            authorize(caller, "delete", kind, "team-a", new=None, old=owned)
        with pytest.raises(PolicyViolation, match="only Tephra writes it"):
            authorize(caller, "create", kind, "team-a", new=owned, old=None)  # claiming to be Tephra's
    authorize(caller, "create", "Secret", "team-a", new=plain, old=None)  # a user's own Secret is fine


def test_a_command_names_its_target_and_only_admins_command_queues() -> None:
    def command(kind: str) -> Command:
        target = OwnerReference(api_version="x", kind=kind, name="t", uid="u", controller=True)
        return Command(
            api_version=BUS_V1ALPHA1, metadata=meta("c", owner_references=[target]), action="A", target=target
        )

    authorize(ALICE, "create", "Command", "team-a", new=command("Job"), old=None)
    with pytest.raises(PolicyViolation, match="Command on a queue"):
        authorize(ALICE, "create", "Command", "team-a", new=command("Queue"), old=None)
    authorize(BUILT_IN_ADMIN, "create", "Command", "team-a", new=command("Queue"), old=None)
    queue = Queue(api_version=SCHEDULING_V1BETA1, metadata=meta("q", None))
    authorize(BUILT_IN_ADMIN, "create", "Queue", None, new=queue, old=None)
