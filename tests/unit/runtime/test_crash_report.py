"""A service that dies of a task group's failure logs what failed inside it, not only the group (a job
controller's crash in kube-mode chaos said "unhandled errors in a TaskGroup" and nothing more)."""

from __future__ import annotations

from vc_runtime.service import _leaf_exceptions


def test_nested_groups_are_flattened_to_what_was_raised() -> None:
    first, second, third = TimeoutError("nats: timeout"), KeyError("k"), ValueError("v")
    group = ExceptionGroup("outer", [ExceptionGroup("inner", [first, second]), third])
    assert _leaf_exceptions(group) == [first, second, third]


def test_a_group_of_one_names_its_member() -> None:
    cause = ConnectionResetError("peer")
    assert _leaf_exceptions(ExceptionGroup("unhandled errors in a TaskGroup", [cause])) == [cause]
