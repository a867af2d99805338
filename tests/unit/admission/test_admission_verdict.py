"""The Verdict type, the JSON Patch helper, and `review`'s dispatch over kinds."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.admission.admission_builders import context, job, queue
from vc_core.errors import InvalidObject, PolicyViolation
from vc_proto.core import CORE_V1, ConfigMap
from vc_proto.meta import ObjectMeta
from vc_validation import Verdict, Violation, apply_json_patch, review
from vc_validation.jsonpatch import diff, escape


def test_allowed_verdict_raises_nothing() -> None:
    assert Verdict(allowed=True).to_exception() is None


def test_invalid_object_names_the_first_malformed_field() -> None:
    verdict = Verdict(
        allowed=False,
        violations=(
            Violation("spec.queue", "queue-open", "queue closed"),
            Violation("spec.tasks[1].replicas", "replicas-non-negative", "'replicas' must be >= 0 in task: b"),
        ),
    )
    error = verdict.to_exception()
    assert isinstance(error, InvalidObject)
    assert (error.field, error.rule) == ("spec.tasks[1].replicas", "replicas-non-negative")
    assert verdict.message == "spec.queue: queue closed; spec.tasks[1].replicas: 'replicas' must be >= 0 in task: b"


def test_policy_only_denial_is_a_policy_violation() -> None:
    verdict = review("DELETE", None, queue("default"), context())
    assert isinstance(verdict.to_exception(), PolicyViolation)
    assert verdict.violations[0].to_dict() == {
        "field": "metadata.name",
        "rule": "queue-protected",
        "message": "`default` queue can not be deleted",
    }


def test_other_kinds_pass_unchanged() -> None:
    config = ConfigMap(api_version=CORE_V1, metadata=ObjectMeta(name="c"), data={"a": "b"})
    assert review("CREATE", config, None, context()) == Verdict(allowed=True, patched=config)


def test_missing_object_is_denied() -> None:
    verdict = review("CREATE", None, None, context())
    assert (verdict.allowed, verdict.violations[0].rule) == (False, "object-required")


def test_rejected_create_still_reports_the_defaulted_object() -> None:
    verdict = review("CREATE", job("j", queue="missing"), None, context())
    assert not verdict.allowed and isinstance(verdict.patched, type(job("j")))


PATCH_CASES = [
    pytest.param({"a": 1}, {"a": 1}, [], id="equal"),
    pytest.param({"a": 1}, {"a": 2}, [{"op": "replace", "path": "/a", "value": 2}], id="replace-scalar"),
    pytest.param({}, {"a": {"b": 1}}, [{"op": "add", "path": "/a", "value": {"b": 1}}], id="add-object"),
    pytest.param({"a": 1, "b": 2}, {"b": 2}, [{"op": "remove", "path": "/a"}], id="remove-key"),
    pytest.param({"l": [1, 2]}, {"l": [1, 3]}, [{"op": "replace", "path": "/l/1", "value": 3}], id="list-item"),
    pytest.param(
        {"l": [1]}, {"l": [1, 2]}, [{"op": "replace", "path": "/l", "value": [1, 2]}], id="list-length-change"
    ),
    pytest.param(
        {"m": {}},
        {"m": {"volcano.sh/x~y": "1"}},
        [{"op": "add", "path": "/m/volcano.sh~1x~0y", "value": "1"}],
        id="rfc6901-escaping",
    ),
    pytest.param({"a": 1}, {"a": True}, [{"op": "replace", "path": "/a", "value": True}], id="int-to-bool-is-a-change"),
]


@pytest.mark.parametrize(("before", "after", "expected"), PATCH_CASES)
def test_json_patch(before: dict[str, Any], after: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    patch = diff(before, after)
    assert patch == expected
    assert apply_json_patch(before, patch) == after


def test_escape_order_keeps_tilde_one_literal() -> None:
    assert escape("a~1/b") == "a~01~1b"


def test_reply_body_lists_every_violation() -> None:
    verdict = review("DELETE", None, queue("root"), context())
    assert verdict.to_dict() == {
        "allowed": False,
        "message": "metadata.name: `root` queue can not be deleted",
        "violations": [
            {"field": "metadata.name", "rule": "queue-protected", "message": "`root` queue can not be deleted"}
        ],
    }
