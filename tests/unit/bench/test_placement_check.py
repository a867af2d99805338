"""The e2e benchmark's end check: every gang whole, no node over its allocatable."""

from __future__ import annotations

from fractions import Fraction

from benchmarks.placement_check import RunningPod, check_placement

NODE = {"cpu": Fraction(2), "memory": Fraction(4), "pods": Fraction(3)}


def _pod(gang: str, node: str, cpu: str = "1") -> RunningPod:
    return RunningPod(gang, node, {"cpu": Fraction(cpu), "memory": Fraction(1)})


def test_whole_gangs_within_their_nodes_pass() -> None:
    running = [_pod("ns/a", "n1"), _pod("ns/a", "n2"), _pod("ns/b", "n1"), _pod("ns/b", "n2")]
    check = check_placement(running, {"ns/a": 2, "ns/b": 2}, {"n1": NODE, "n2": NODE})
    assert check.problems == []
    assert check.describe() == "every gang whole (2), no node over its allocatable (2 with pods)"


def test_a_partial_gang_and_an_overcommitted_node_are_named() -> None:
    running = [_pod("ns/a", "n1"), _pod("ns/b", "n1", cpu="1.5"), _pod("ns/b", "n1", cpu="0.5")]
    check = check_placement(running, {"ns/a": 2, "ns/b": 2, "ns/c": 1}, {"n1": NODE})
    assert check.problems == [
        "gang ns/a: 1 of 2 Running",
        "gang ns/c: 0 of 1 Running",
        "node n1: cpu 3 used of 2",
    ]
    assert check.describe().startswith("BROKEN: 3 problems: gang ns/a")


def test_the_pod_slots_count_and_an_unknown_node_is_named() -> None:
    running = [_pod("ns/a", "n1", cpu="0.1") for _ in range(4)] + [_pod("ns/b", "gone")]
    check = check_placement(running, {"ns/a": 4, "ns/b": 1}, {"n1": NODE})
    assert check.problems == [
        "node gone: pods Running on a node the store does not have",
        "node n1: pods 4 used of 3",
    ]
