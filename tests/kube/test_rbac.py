"""Least privilege, asked of the real apiserver: after `kubectl apply -k deploy/k8s` (and the
node-sim identity), what may each Tephra ServiceAccount do? Every (verb, resource) of the table below
is put to RBAC as a SubjectAccessReview, and the allowed set must be exactly the expected one: a grant
nobody needs fails here as surely as a missing one fails test_install.py.

When a service needs a new permission, it goes into the manifest *and* into EXPECTED, with the reason.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.kube.install import ACCOUNTS, K8S, NAMESPACE, can, kubectl
from vc_kube.client import KubeClient

pytestmark = [pytest.mark.kube]

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
USER_NAMESPACE = "team-a"  # any namespace a user submits to
# (group, resource[/subresource]) put to every account with every verb
RESOURCES = (
    ("", "events"),
    ("", "pods"),
    ("", "pods/status"),
    ("", "pods/binding"),
    ("", "pods/eviction"),
    ("", "pods/exec"),
    ("", "nodes"),
    ("", "nodes/status"),
    ("", "services"),
    ("", "configmaps"),
    ("", "secrets"),
    ("", "resourcequotas"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("", "namespaces"),
    ("", "serviceaccounts"),
    ("", "serviceaccounts/token"),
    ("batch.volcano.sh", "jobs"),
    ("batch.volcano.sh", "jobs/status"),
    ("batch.volcano.sh", "cronjobs"),
    ("batch.volcano.sh", "cronjobs/status"),
    ("flow.volcano.sh", "jobflows"),
    ("flow.volcano.sh", "jobflows/status"),
    ("flow.volcano.sh", "jobtemplates"),
    ("flow.volcano.sh", "jobtemplates/status"),
    ("scheduling.volcano.sh", "podgroups"),
    ("scheduling.volcano.sh", "podgroups/status"),
    ("scheduling.volcano.sh", "queues"),
    ("scheduling.volcano.sh", "queues/status"),
    ("bus.volcano.sh", "commands"),
    ("networking.k8s.io", "networkpolicies"),
    ("scheduling.k8s.io", "priorityclasses"),
    ("topology.volcano.sh", "hypernodes"),
    ("policy", "poddisruptionbudgets"),
    ("batch", "jobs"),
    ("apps", "deployments"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
)
READ = {"get", "list", "watch"}
CRUD = {"get", "create", "patch", "delete"}  # writes are resourceVersion-guarded merge patches: no update
# The services that record Kubernetes Events (vc_runtime.event_recorder): create, and read and patch a
# repeat's count.
EVENTS = {"get", "create", "patch"}

# account -> {(group, resource): verbs allowed in any user namespace (or cluster-wide)}
EXPECTED: dict[str, dict[tuple[str, str], set[str]]] = {
    # The only list/watch in Tephra: it mirrors every kind into NATS; writes nothing.
    "tephra-kube-relay": {
        ("", "pods"): READ,
        ("", "nodes"): READ,
        ("", "services"): READ,
        ("", "configmaps"): READ,
        ("", "secrets"): READ,
        ("batch.volcano.sh", "jobs"): READ,
        ("batch.volcano.sh", "cronjobs"): READ,
        ("flow.volcano.sh", "jobflows"): READ,
        ("flow.volcano.sh", "jobtemplates"): READ,
        ("scheduling.volcano.sh", "podgroups"): READ,
        ("scheduling.volcano.sh", "queues"): READ,
        ("bus.volcano.sh", "commands"): READ,
        ("networking.k8s.io", "networkpolicies"): READ,
        ("scheduling.k8s.io", "priorityclasses"): READ,
        ("topology.volcano.sh", "hypernodes"): READ,
        ("", "resourcequotas"): READ,  # the scheduler's resourcequota plugin
        ("policy", "poddisruptionbudgets"): READ,  # the scheduler's pdb plugin
        ("", "persistentvolumeclaims"): READ,  # the scheduler's volume predicate
        ("", "persistentvolumes"): READ,
    },
    # Users' writes through `vcctl`: jobs, queues (Open on create: status), podgroups, commands.
    "tephra-admission": {
        ("batch.volcano.sh", "jobs"): CRUD,
        ("scheduling.volcano.sh", "queues"): CRUD,
        ("scheduling.volcano.sh", "queues/status"): {"patch"},
        ("scheduling.volcano.sh", "podgroups"): CRUD,
        ("bus.volcano.sh", "commands"): {"get", "create"},
    },
    # A job's status and everything a job owns; consumes job Commands.
    "tephra-job-controller": {
        ("batch.volcano.sh", "jobs"): {"get", "patch"},
        ("batch.volcano.sh", "jobs/status"): {"patch"},
        ("", "pods"): CRUD,
        ("", "services"): CRUD,
        ("", "configmaps"): CRUD,
        ("", "secrets"): CRUD,
        ("", "persistentvolumeclaims"): CRUD,  # volumes[].volumeClaim
        ("scheduling.volcano.sh", "podgroups"): CRUD,
        ("scheduling.volcano.sh", "podgroups/status"): {"patch"},
        ("networking.k8s.io", "networkpolicies"): CRUD,
        ("bus.volcano.sh", "commands"): {"get", "delete"},
        ("scheduling.k8s.io", "priorityclasses"): {"get"},
        ("", "events"): EVENTS,
    },
    # `root` and `default` (create), queue state and status; consumes queue Commands.
    "tephra-queue-controller": {
        ("scheduling.volcano.sh", "queues"): {"get", "create", "patch"},
        ("scheduling.volcano.sh", "queues/status"): {"patch"},
        ("bus.volcano.sh", "commands"): {"get", "delete"},
        ("", "events"): EVENTS,
    },
    # A PodGroup for each plain pod that asks for Volcano, and the pod's annotation naming it.
    "tephra-podgroup-controller": {
        ("", "pods"): {"get", "patch"},
        ("scheduling.volcano.sh", "podgroups"): {"get", "create"},
    },
    # Finished jobs after their TTL, and what they owned.
    "tephra-gc": {
        ("batch.volcano.sh", "jobs"): {"get", "delete"},
        ("", "pods"): {"get", "delete"},
        ("", "services"): {"get", "delete"},
        ("", "configmaps"): {"get", "delete"},
        ("", "secrets"): {"get", "delete"},
        ("", "persistentvolumeclaims"): {"get", "delete"},
        ("scheduling.volcano.sh", "podgroups"): {"get", "delete"},
        ("networking.k8s.io", "networkpolicies"): {"get", "delete"},
    },
    # The vcjobs of JobFlows and CronJobs (created, and deleted by retention, history limits, Replace and with
    # their owner), and the status of JobFlows, JobTemplates and CronJobs.
    "tephra-flow-controller": {
        ("batch.volcano.sh", "jobs"): {"get", "create", "delete"},
        ("batch.volcano.sh", "cronjobs"): {"get"},
        ("batch.volcano.sh", "cronjobs/status"): {"patch"},
        ("flow.volcano.sh", "jobflows"): {"get"},
        ("flow.volcano.sh", "jobflows/status"): {"patch"},
        ("flow.volcano.sh", "jobtemplates"): {"get"},
        ("flow.volcano.sh", "jobtemplates/status"): {"patch"},
    },
    # Binds (pods/binding + an annotation), evicts (delete), PodGroup and queue status.
    "tephra-scheduler": {
        ("", "pods"): {"get", "patch", "delete"},
        ("", "pods/binding"): {"create"},
        ("scheduling.volcano.sh", "podgroups"): {"get"},
        ("scheduling.volcano.sh", "podgroups/status"): {"patch"},
        ("scheduling.volcano.sh", "queues"): {"get"},
        ("scheduling.volcano.sh", "queues/status"): {"patch"},
        ("", "events"): EVENTS,
    },
    # Closing NATS: Secrets in tephra-system only (test below), nothing in a user's namespace.
    "tephra-nats-bootstrap": {},
    # The hollow kubelet: its Nodes and their status, pod status, removing pods that ended.
    "tephra-node-sim": {
        ("", "nodes"): {"get", "create", "patch"},
        ("", "nodes/status"): {"patch"},
        ("", "pods"): {"get", "delete"},
        ("", "pods/status"): {"patch"},
        ("", "events"): EVENTS,
    },
}


@pytest.fixture
async def installed_rbac(kube: KubeClient) -> KubeClient:
    kubectl("apply", "-k", str(K8S))
    kubectl("apply", "-k", str(K8S / "node-sim"))
    return kube


async def _allowed(kube: KubeClient, account: str) -> dict[tuple[str, str], set[str]]:
    cases = list(itertools.product(RESOURCES, VERBS))

    async def ask(resource: tuple[str, str], verb: str) -> bool:
        group, path = resource
        plural, _, sub = path.partition("/")
        namespaced = plural not in {
            "nodes",
            "namespaces",
            "queues",
            "priorityclasses",
            "clusterroles",
            "clusterrolebindings",
            "customresourcedefinitions",
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        }
        return await can(
            kube, account, verb, plural, group=group, subresource=sub, namespace=USER_NAMESPACE if namespaced else ""
        )

    answers = await asyncio.gather(*(ask(r, v) for r, v in cases))
    table: dict[tuple[str, str], set[str]] = {}
    for (resource, verb), allowed in zip(cases, answers, strict=True):
        if allowed:
            table.setdefault(resource, set()).add(verb)
    return table


@pytest.mark.parametrize("account", sorted(EXPECTED))
async def test_each_identity_may_do_exactly_what_its_service_needs(installed_rbac: KubeClient, account: str) -> None:
    assert await _allowed(installed_rbac, account) == EXPECTED[account]


def test_every_service_has_a_row() -> None:
    assert sorted(EXPECTED) == sorted(ACCOUNTS.values())


async def test_only_admission_writes_webhook_configurations_and_only_its_own(installed_rbac: KubeClient) -> None:
    kube = installed_rbac
    for plural, own in (
        ("mutatingwebhookconfigurations", "tephra-mutate"),
        ("validatingwebhookconfigurations", "tephra-validate"),
    ):
        for account in ACCOUNTS.values():
            for verb in ("create", "update", "patch", "delete"):
                for name in (own, "someone-elses", ""):
                    allowed = await can(kube, account, verb, plural, group="admissionregistration.k8s.io", name=name)
                    assert allowed == (account == "tephra-admission" and verb == "patch" and name == own), (
                        account,
                        verb,
                        plural,
                        name,
                    )


async def test_admissions_secret_rights_end_at_its_own_certificate(installed_rbac: KubeClient) -> None:
    kube, account = installed_rbac, "tephra-admission"
    own = {"namespace": NAMESPACE, "name": "tephra-admission-tls"}
    assert await can(kube, account, "get", "secrets", **own)
    assert await can(kube, account, "patch", "secrets", **own)
    assert not await can(kube, account, "delete", "secrets", **own)
    assert not await can(kube, account, "update", "secrets", **own)
    # create names no object yet, so RBAC cannot narrow it to one name: it stays in tephra-system
    assert await can(kube, account, "create", "secrets", namespace=NAMESPACE)
    assert not await can(kube, account, "create", "secrets", namespace=USER_NAMESPACE)
    for verb in ("get", "patch", "list", "watch"):
        assert not await can(kube, account, verb, "secrets", namespace=NAMESPACE, name="nats-auth")
        assert not await can(kube, account, verb, "secrets", namespace=USER_NAMESPACE, name="job-ssh")


async def test_nobody_may_escalate_bind_or_impersonate(installed_rbac: KubeClient) -> None:
    for account in ACCOUNTS.values():
        for verb, resource, group in (
            ("escalate", "clusterroles", "rbac.authorization.k8s.io"),
            ("bind", "clusterroles", "rbac.authorization.k8s.io"),
            ("impersonate", "users", ""),
            ("impersonate", "serviceaccounts", ""),
        ):
            assert not await can(installed_rbac, account, verb, resource, group=group), (account, verb, resource)


async def test_the_nats_bootstraps_secret_rights_end_at_the_nats_secrets(installed_rbac: KubeClient) -> None:
    from vc_security.cluster import secret_names

    kube, account = installed_rbac, "tephra-nats-bootstrap"
    for name in secret_names():
        for verb in ("get", "patch"):
            assert await can(kube, account, verb, "secrets", namespace=NAMESPACE, name=name), (verb, name)
        for verb in ("update", "delete"):
            assert not await can(kube, account, verb, "secrets", namespace=NAMESPACE, name=name), (verb, name)
    # create names no object yet, so RBAC cannot narrow it to names: it stays in tephra-system
    assert await can(kube, account, "create", "secrets", namespace=NAMESPACE)
    assert not await can(kube, account, "create", "secrets", namespace=USER_NAMESPACE)
    for verb in ("get", "list", "watch", "patch"):
        assert not await can(kube, account, verb, "secrets", namespace=NAMESPACE, name="tephra-admission-tls")
        assert not await can(kube, account, verb, "secrets", namespace=USER_NAMESPACE, name="job-ssh")
    # Who else can read an identity's NATS credentials: those whose work on jobs' Secrets in every
    # namespace needs a cluster-wide `get` on Secrets, which RBAC cannot narrow by label or namespace
    # list: the relay (it mirrors only Tephra's own, vc_kube.relay.MIRRORED_ONLY), the job controller
    # (ssh Secrets) and gc (deletes them). docs/install.md says so.
    readers = {
        a
        for a in ACCOUNTS.values()
        if await can(kube, a, "get", "secrets", namespace=NAMESPACE, name="tephra-nats-admin")
    }
    assert readers == {account, "tephra-kube-relay", "tephra-job-controller", "tephra-gc"}
