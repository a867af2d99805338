"""The end-of-run count of kube tests (pure: reports as pytest hands them to the terminal summary)."""

from __future__ import annotations

from types import SimpleNamespace

from tests.kube.summary import count_kube_tests, summary_lines

NO_APISERVER = "Skipped: no kube-apiserver: .kube/config is missing (run `make kube-up`)"


def report(nodeid: str, when: str = "call", reason: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, when=when, longrepr=("x.py", 1, reason) if reason else None)


def test_counts_each_kube_test_once_by_its_worst_outcome_and_ignores_the_rest() -> None:
    stats = {
        "passed": [report("k::a"), report("k::a", "teardown"), report("k::b", "setup"), report("u::x")],
        "failed": [report("k::b")],
        "error": [report("k::c", "setup")],
        "skipped": [report("k::d", "setup", "Skipped: no Docker engine")],
    }
    counts = count_kube_tests(stats, frozenset({"k::a", "k::b", "k::c", "k::d"}))
    assert counts.outcomes == {"k::a": "passed", "k::b": "failed", "k::c": "failed", "k::d": "skipped"}
    assert (counts.total, counts.ran, counts.skipped_for_apiserver) == (4, 3, 0)
    (line, reason) = summary_lines(counts)
    assert line == "kube tests: 3 of 4 ran (1 passed, 2 failed), 1 skipped"
    assert reason == "  skipped: 1 x no Docker engine"


def test_tests_skipped_for_want_of_an_apiserver_raise_the_banner() -> None:
    stats = {"skipped": [report(f"k::{i}", "setup", NO_APISERVER) for i in range(3)]}
    counts = count_kube_tests(stats, frozenset({"k::0", "k::1", "k::2"}))
    lines = summary_lines(counts)
    assert lines[1] == "!!! KUBE TESTS SKIPPED: 3 of 3 did not run: the kube-apiserver was missing or busy"
    assert "0 of 3 ran" in lines[2]
    assert lines[3] == "!!!   3 x no kube-apiserver: .kube/config is missing (run `make kube-up`)"
