"""A bounded slice of `make chaos MODE=kube` in `make test`: a private etcd + kube-apiserver (the
cached build `make test` makes when it starts the kube tests' apiserver), the relay and every service
on `--backend kube`, one short schedule with every kube fault, checked over its whole history."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.chaos.harness import ScheduleResult
from tests.chaos.kube_harness import RELAY_INSTANCE, run_kube_schedule
from tests.chaos.kube_plan import KUBE_FAULTS, KUBE_OPTIONS, make_kube_schedule

pytestmark = [pytest.mark.kube, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

SLICE = dataclasses.replace(KUBE_OPTIONS, load_s=12.0)
CACHE = Path(os.environ.get("TEPHRA_KUBE_CACHE", Path.home() / ".cache" / "tephra" / "kube"))


def _skip_without_a_build() -> None:
    """kubed.py takes the build scripts/kube/build.sh cached; a first build takes many minutes, so it
    is not started from here (`make test` makes it when it starts the kube tests' apiserver)."""
    if not any(CACHE.glob("*/bin/kube-apiserver")):
        pytest.skip(f"no kube-apiserver build under {CACHE} (make kube-up or make test builds it)")
    if shutil.which("etcd") is None:
        pytest.skip("no etcd on PATH (scripts/kube/build.sh installs etcd-server)")


def _explain(result: ScheduleResult) -> str:
    return "\n".join([result.line(), *(v.render() for v in result.verdict.violations)])


async def test_a_kube_chaos_schedule_keeps_every_invariant(tmp_path: Path) -> None:
    _skip_without_a_build()
    schedule = make_kube_schedule(1, 0, SLICE)
    result = await run_kube_schedule(schedule, tmp_path / "schedule-0")
    assert result.verdict.violations == [], _explain(result)
    assert result.skipped == [] and len(result.applied) == len(schedule.faults), result.line()
    assert {label.split(" ", 1)[0] for label in result.applied} >= set(KUBE_FAULTS), result.line()
    # The forced 410 really made the relay re-list (its log says which kinds), Pods among them.
    gone = next(label for label in result.applied if label.startswith("gone-relist"))
    match = re.search(r"410: (\d+) kinds re-listed", gone)
    assert match is not None and int(match.group(1)) >= 1, gone
    relay_log = (tmp_path / "schedule-0" / f"{RELAY_INSTANCE}.log").read_text()
    assert any('"watch.relist"' in line and '"kind":"Pod"' in line for line in relay_log.splitlines())
    assert result.drained and result.verdict.finished == result.acked > 0, result.line()
    assert result.verdict.binds > 0 and result.verdict.queue_full_moments > 0, result.line()
