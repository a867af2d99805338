"""The merge patch the kube adapter sends: only what changed, explicit nulls for removals (RFC 7386)."""

from __future__ import annotations

from vc_kube.store import merge_diff


def test_equal_documents_need_no_patch() -> None:
    assert merge_diff({"a": {"b": 1}}, {"a": {"b": 1}}) is None


def test_changes_additions_and_removals() -> None:
    old = {"metadata": {"labels": {"x": "1", "y": "2"}}, "spec": {"weight": 1, "keep": True}}
    new = {"metadata": {"labels": {"x": "1", "z": "3"}}, "spec": {"weight": 2, "keep": True}}
    assert merge_diff(old, new) == {"metadata": {"labels": {"y": None, "z": "3"}}, "spec": {"weight": 2}}


def test_lists_are_replaced_whole() -> None:
    assert merge_diff({"t": [1, 2]}, {"t": [1]}) == {"t": [1]}
    assert merge_diff({"t": [1]}, {}) == {"t": None}
