"""ResourceQuota and PodDisruptionBudget admission: Kubernetes' documented objects pass; each broken rule
is refused naming its field and rule; through the write API a tenant may set budgets over its own pods
but not lift its namespace's quota, and a policy/v1beta1 budget (what a 1.20 apiserver serves) is taken
as written."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from vc_admission.context import CacheContext
from vc_admission.review import Admitter
from vc_admission.write_api import WriteApi
from vc_bus.testing import MemoryStore
from vc_core.errors import NotFound
from vc_proto import api, codec
from vc_proto.core import ResourceQuota
from vc_proto.policy import PodDisruptionBudget
from vc_security.registry import BUILT_IN_ADMIN, Person
from vc_validation.context import StaticContext
from vc_validation.disruption_budgets import validate_pod_disruption_budget
from vc_validation.limits import MAX_SELECTOR_TERMS
from vc_validation.resource_quotas import validate_resource_quota
from vc_validation.review import review

_reply = msgspec.json.Decoder(api.WriteReply)
ALICE = Person("alice", "tenant", frozenset({"team-a"}))


def quota(hard: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": "team-a"},
        "spec": {"hard": {"requests.cpu": "4", "pods": "10"} if hard is None else hard, **spec},
    }


def budget(version: str = "policy/v1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": version,
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "team-a"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}} | spec,
    }


def quota_rules(doc: dict[str, Any]) -> set[tuple[str, str]]:
    obj = codec.from_dict(doc)
    assert isinstance(obj, ResourceQuota)
    return {(v.field, v.rule) for v in validate_resource_quota(obj)}


def budget_rules(doc: dict[str, Any]) -> set[tuple[str, str]]:
    obj = codec.from_dict(doc)
    assert isinstance(obj, PodDisruptionBudget)
    return {(v.field, v.rule) for v in validate_pod_disruption_budget(obj)}


def test_kubernetes_documented_quotas_pass() -> None:
    # kubernetes.io "Configure Memory and CPU Quotas", "object count" and extended-resource examples
    compute = {"requests.cpu": "1", "requests.memory": "1Gi", "limits.cpu": "2", "limits.memory": "2Gi"}
    counts = {"count/pods": "2", "configmaps": "10", "services.loadbalancers": "2", "count/deployments.apps": "4"}
    assert quota_rules(quota(compute)) == set()
    assert quota_rules(quota(counts)) == set()
    assert quota_rules(quota({"requests.nvidia.com/gpu": 4, "hugepages-2Mi": "1Gi"})) == set()
    scoped = quota(
        {"pods": "10"},
        scopeSelector={"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]},
    )
    assert quota_rules(scoped) == set()


@pytest.mark.parametrize(
    ("hard", "spec", "expected"),
    [
        ({"cpu": "-1"}, {}, ("spec.hard.cpu", "quantity-non-negative")),
        ({"cpu": "lots"}, {}, ("spec.hard.cpu", "quantity")),
        ({"pods": "1.5"}, {}, ("spec.hard.pods", "quantity-integer")),
        ({"count/pods": "500m"}, {}, ("spec.hard.count/pods", "quantity-integer")),
        ({"gpus": "1"}, {}, ("spec.hard.gpus", "quota-resource-name")),
        ({"requests.Bad_Domain/gpu": "1"}, {}, ("spec.hard.requests.Bad_Domain/gpu", "quota-resource-name")),
        ({f"count/k{i}": "1" for i in range(40)}, {}, ("spec.hard", "resources-count")),
        ({"pods": "1"}, {"scopes": ["Everything"]}, ("spec.scopes[0]", "quota-scope")),
        (
            {"pods": "1"},
            {"scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In"}]}},
            ("spec.scopeSelector.matchExpressions[0].values", "required"),
        ),
    ],
)
def test_each_broken_quota_rule_is_named(hard: dict[str, Any], spec: dict[str, Any], expected: tuple[str, str]) -> None:
    assert expected in quota_rules(quota(hard, **spec))


def test_kubernetes_documented_budgets_pass_in_both_versions() -> None:
    for version in ("policy/v1", "policy/v1beta1"):
        assert budget_rules(budget(version)) == set()
        assert budget_rules(budget(version, minAvailable="80%")) == set()
        expressions = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["zk"]}]}
        assert budget_rules(budget(version, minAvailable=None, maxUnavailable=1, selector=expressions)) == set()


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"maxUnavailable": 1}, ("spec", "pdb-min-or-max")),
        ({"minAvailable": -1}, ("spec.minAvailable", "int-or-percent")),
        ({"minAvailable": "half"}, ("spec.minAvailable", "int-or-percent")),
        ({"minAvailable": "101%"}, ("spec.minAvailable", "int-or-percent")),
        ({"minAvailable": None, "maxUnavailable": "1.5%"}, ("spec.maxUnavailable", "int-or-percent")),
        (
            {"selector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}},
            ("spec.selector.matchExpressions[0].operator", "label-operator"),
        ),
        (
            {"selector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}},
            ("spec.selector.matchExpressions[0].values", "forbidden"),
        ),
        ({"selector": {"matchLabels": {"app": "not a value"}}}, ("spec.selector.matchLabels[app]", "label-value")),
        (
            {"selector": {"matchLabels": {f"k{i}": "v" for i in range(MAX_SELECTOR_TERMS + 1)}}},
            ("spec.selector", "label-terms"),
        ),
        ({"unhealthyPodEvictionPolicy": "Sometimes"}, ("spec.unhealthyPodEvictionPolicy", "pdb-eviction-policy")),
    ],
)
def test_each_broken_budget_rule_is_named(spec: dict[str, Any], expected: tuple[str, str]) -> None:
    doc = budget()
    doc["spec"] = {k: v for k, v in (doc["spec"] | spec).items() if v is not None}
    assert expected in budget_rules(doc)


def test_review_judges_both_kinds_and_lets_their_deletes_through() -> None:
    bad = codec.from_dict(quota({"pods": "-1"}))
    assert not review("CREATE", bad, None, StaticContext()).allowed
    assert review("DELETE", None, bad, StaticContext()).allowed
    assert review("UPDATE", codec.from_dict(budget()), None, StaticContext()).allowed


async def write(store: MemoryStore, doc: dict[str, Any], caller: Person = BUILT_IN_ADMIN) -> api.WriteReply:
    request = msgspec.json.encode({"operation": "apply", "object": doc})
    return _reply.decode(await WriteApi(store, Admitter(CacheContext(store))).handle(request, caller))


async def test_the_write_api_stores_quotas_without_their_status_and_budgets_of_either_version() -> None:
    store = MemoryStore()
    with_status = quota() | {"status": {"used": {"pods": "3"}}}
    assert (await write(store, with_status)).error is None
    stored = await store.get(ResourceQuota, "team-a", "compute")
    assert stored.spec is not None and stored.spec.hard == {"requests.cpu": "4", "pods": "10"}
    assert stored.status is None  # Tephra counts the pods; a client's figure is not the truth
    assert (await write(store, budget("policy/v1beta1"))).error is None
    assert (await store.get(PodDisruptionBudget, "team-a", "web")).api_version == "policy/v1beta1"


async def test_the_write_api_refuses_a_broken_object_or_an_unknown_version_and_stores_nothing() -> None:
    store = MemoryStore()
    reply = await write(store, quota({"pods": "-1"}))
    assert reply.error is not None and reply.error.code == api.INVALID
    assert [(c.field, c.rule) for c in reply.error.causes or []] == [("spec.hard.pods", "quantity-non-negative")]
    reply = await write(store, budget("policy/v2"))
    assert reply.error is not None and [(c.field, c.rule) for c in reply.error.causes or []] == [
        ("apiVersion", "api-version")
    ]
    assert "'policy/v1' or 'policy/v1beta1'" in reply.error.message
    for kind in (ResourceQuota, PodDisruptionBudget):
        with pytest.raises(NotFound):
            await store.get(kind, "team-a", "compute" if kind is ResourceQuota else "web")


async def test_a_tenant_sets_budgets_over_its_own_pods_but_not_its_quota() -> None:
    store = MemoryStore()
    assert (await write(store, budget(), ALICE)).error is None
    reply = await write(store, quota(), ALICE)
    assert reply.error is not None and reply.error.code == api.FORBIDDEN
    assert "ResourceQuotas are an admin's to manage" in reply.error.message
    elsewhere = budget() | {"metadata": {"name": "web", "namespace": "team-b"}}
    reply = await write(store, elsewhere, ALICE)
    assert reply.error is not None and reply.error.code == api.FORBIDDEN
