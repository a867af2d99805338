"""How many kube tests ran, at the end of the run, loudly when they were skipped for want of an apiserver.

A kube test skips (saying why) when no kube-apiserver answers, so a green run can hide that none of
them ran: the first `make test` on a fresh machine once did exactly that. These hooks (registered by
tests/conftest.py) note the selected tests marked `kube`, then print one line after the run with how
many ran, and a banner when any was skipped because of the apiserver. With TEPHRA_KUBE_TEST_SUMMARY
set (the Makefile's test target sets it), the same lines go to that file too, so `make test` can print
them last.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import pytest

# Worst first: a test with a failed call and a passed teardown counts as failed.
_RANK = {"failed": 0, "error": 0, "skipped": 1, "passed": 2}
_APISERVER = "kube-apiserver"  # every skip reason tests/kube/support.py gives names it
_KUBE_TESTS = pytest.StashKey[frozenset[str]]()


@dataclass
class KubeCounts:
    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> passed / failed / skipped
    reasons: Counter[str] = field(default_factory=Counter)  # skip reason -> tests

    @property
    def total(self) -> int:
        return len(self.outcomes)

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)

    @property
    def ran(self) -> int:
        return self.total - self.count("skipped")

    @property
    def skipped_for_apiserver(self) -> int:
        return sum(n for reason, n in self.reasons.items() if _APISERVER in reason)


def count_kube_tests(stats: dict[str, list[object]], kube_tests: frozenset[str]) -> KubeCounts:
    counts = KubeCounts()
    skip_reason: dict[str, str] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            if nodeid not in kube_tests:
                continue
            known = counts.outcomes.get(nodeid)
            if known is None or _RANK[outcome] < _RANK[known]:
                counts.outcomes[nodeid] = "failed" if outcome == "error" else outcome
            longrepr = getattr(report, "longrepr", None)
            if outcome == "skipped" and isinstance(longrepr, tuple) and len(longrepr) == 3:
                skip_reason[nodeid] = str(longrepr[2]).removeprefix("Skipped: ")
    for nodeid, outcome in counts.outcomes.items():
        if outcome == "skipped":
            counts.reasons[skip_reason.get(nodeid, "(no reason given)")] += 1
    return counts


def summary_lines(counts: KubeCounts) -> list[str]:
    line = (
        f"kube tests: {counts.ran} of {counts.total} ran ({counts.count('passed')} passed, "
        f"{counts.count('failed')} failed), {counts.count('skipped')} skipped"
    )
    lines = [line]
    if counts.skipped_for_apiserver:
        lines = [
            "!" * 100,
            f"!!! KUBE TESTS SKIPPED: {counts.skipped_for_apiserver} of {counts.total} did not run: the kube-apiserver"
            " was missing or busy",
            f"!!! {line}",
            *(f"!!!   {n} x {reason}" for reason, n in counts.reasons.most_common()),
            "!" * 100,
        ]
    else:
        lines += [f"  skipped: {n} x {reason}" for reason, n in counts.reasons.most_common()]
    return lines


def pytest_collection_finish(session: pytest.Session) -> None:
    """The selected tests (after -m/-k) that carry the kube marker."""
    session.config.stash[_KUBE_TESTS] = frozenset(i.nodeid for i in session.items if i.get_closest_marker("kube"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    counts = count_kube_tests(terminalreporter.stats, terminalreporter.config.stash.get(_KUBE_TESTS, frozenset()))
    if counts.total == 0:
        return  # none selected (e.g. -m "not kube")
    lines = summary_lines(counts)
    loud = counts.skipped_for_apiserver > 0
    terminalreporter.write_sep("=", "kube tests", red=loud, bold=loud)
    for line in lines:
        terminalreporter.write_line(line, red=loud, bold=loud)
    path = os.environ.get("TEPHRA_KUBE_TEST_SUMMARY")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
