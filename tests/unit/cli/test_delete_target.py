"""vcctl delete -f: which object each document names (kind, namespace, name), checked before connecting."""

from __future__ import annotations

import pytest

from vc_cli.commands.delete import target
from vc_cli.errors import CliError


def test_a_document_names_its_object_and_n_fills_a_missing_namespace() -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute"}}
    assert target(quota, None) == ("ResourceQuota", "default", "compute")
    assert target(quota, "team") == ("ResourceQuota", "team", "compute")
    placed = {"kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "team"}}
    assert target(placed, None) == ("PodDisruptionBudget", "team", "web")
    assert target({"kind": "Queue", "metadata": {"name": "q", "namespace": "ignored"}}, "team") == ("Queue", None, "q")


@pytest.mark.parametrize(
    ("doc", "namespace", "message"),
    [
        ({"kind": "Deployment", "metadata": {"name": "d"}}, None, "unsupported kind 'Deployment'"),
        ({"kind": "ResourceQuota", "metadata": {}}, None, "metadata.name is required"),
        ({"kind": "ResourceQuota", "metadata": "x"}, None, "metadata.name is required"),
        ({"kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "a"}}, "b", "-n says 'b'"),
    ],
)
def test_a_document_that_names_nothing_deletable_is_refused(
    doc: dict[str, object], namespace: str | None, message: str
) -> None:
    with pytest.raises(CliError, match=message) as refused:
        target(doc, namespace)
    assert refused.value.code == 2
