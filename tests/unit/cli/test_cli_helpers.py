"""vcctl's pure helpers: resource-list flags, Commands as vcctl writes them, documents, ages."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from vc_admission.decoding import decode_object
from vc_cli.commands.common import command_document, parse_resource_list
from vc_cli.documents import read_documents
from vc_cli.errors import CliError
from vc_cli.output import age
from vc_core.errors import InvalidObject
from vc_proto.meta import OwnerReference


def test_resource_list_flag() -> None:
    assert parse_resource_list("cpu=4,memory=8Gi,nvidia.com/gpu=2", flag="--capability") == {
        "cpu": "4",
        "memory": "8Gi",
        "nvidia.com/gpu": "2",
    }
    assert parse_resource_list(None, flag="--capability") is None
    for bad in ("cpu", "cpu=", "=4", "cpu=lots"):
        with pytest.raises(CliError) as err:
            parse_resource_list(bad, flag="--capability")
        assert err.value.code == 2 and "--capability" in str(err.value)


def test_command_document_targets_its_object_like_volcano() -> None:
    target = OwnerReference(api_version="batch.volcano.sh/v1alpha1", kind="Job", name="train", uid="u1")
    doc = command_document(action="AbortJob", namespace="ns", target=target)
    assert doc["metadata"]["generateName"] == "train-abortjob-"  # type: ignore[index]
    assert doc["target"] == {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": "u1"}


def test_documents_expand_lists_and_name_the_bad_document(tmp_path: Path) -> None:
    path = tmp_path / "objs.yaml"
    path.write_text("kind: List\nitems:\n- {kind: Queue}\n- {kind: Job}\n---\nkind: Pod\n")
    assert [d["kind"] for d in read_documents(str(path))] == ["Queue", "Job", "Pod"]
    path.write_text("kind: Queue\n---\n- not an object\n")
    with pytest.raises(CliError, match="document 1 is not an object"):
        read_documents(str(path))


def test_ages_read_like_kubectl() -> None:
    now = datetime(2026, 1, 2, 0, 0, 0, tzinfo=UTC)
    assert age("2026-01-01T23:59:30Z", now) == "30s"
    assert age("2026-01-01T23:55:00Z", now) == "5m"
    assert age("2025-12-30T00:00:00Z", now) == "3d"
    assert age(None, now) == "<unknown>"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"not json", ""),
        (b'{"apiVersion": "v1", "metadata": {}}', "kind"),
        (b'{"apiVersion": "v1", "kind": "Gadget", "metadata": {}}', "kind"),
        (b'{"apiVersion": "v2", "kind": "Pod", "metadata": {}}', "apiVersion"),
        (b'{"apiVersion": "v1", "kind": "Pod"}', "metadata"),
        (
            b'{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {}, "spec": {"maxRetry": "x"}}',
            "spec.maxRetry",
        ),
    ],
)
def test_admission_decoding_names_the_field(body: bytes, field: str) -> None:
    with pytest.raises(InvalidObject) as err:
        decode_object(body)
    assert err.value.field == field
