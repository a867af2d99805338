"""The users' own examples (tests/fixtures/seeds) pass admission unchanged: accepted as written, and
the defaulted result matches Volcano's defaulting field for field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.admission.admission_builders import context
from vc_proto.batch import Job
from vc_proto.codec import from_dict, to_dict
from vc_proto.scheduling import PodGroup
from vc_validation import apply_json_patch, json_patch, review

SEEDS = Path(__file__).resolve().parents[2] / "fixtures" / "seeds"


def load(name: str) -> Any:
    return from_dict(yaml.safe_load((SEEDS / name).read_text()))


@pytest.mark.parametrize("name", ["tensorflow-benchmark.yaml", "lm-mpi-job.yaml"])
def test_seed_job_is_admitted(name: str) -> None:
    submitted = load(name)
    assert isinstance(submitted, Job)
    verdict = review("CREATE", submitted, None, context())
    assert verdict.allowed, verdict.violations
    assert verdict.violations == ()
    patch = json_patch(submitted, verdict.patched)
    # Only additions: nothing the user wrote is changed or removed.
    assert {op["op"] for op in patch} == {"add"}
    assert apply_json_patch(to_dict(submitted), patch) == to_dict(verdict.patched)


@pytest.mark.parametrize(
    ("name", "task_min_available", "min_available"),
    [
        pytest.param("tensorflow-benchmark.yaml", [1, 2], 3, id="tensorflow-benchmark"),
        pytest.param("lm-mpi-job.yaml", [1, 3], 4, id="lm-mpi-job"),
    ],
)
def test_seed_job_defaults(name: str, task_min_available: list[int], min_available: int) -> None:
    patched = review("CREATE", load(name), None, context()).patched
    assert isinstance(patched, Job) and patched.spec is not None and patched.spec.tasks is not None
    assert (patched.spec.queue, patched.spec.scheduler_name, patched.spec.max_retry) == ("default", "volcano", 3)
    assert [t.min_available for t in patched.spec.tasks] == task_min_available
    assert [t.max_retry for t in patched.spec.tasks] == [3, 3]
    assert patched.spec.min_available == min_available


def test_seed_job_admitted_again_after_defaulting() -> None:
    once = review("CREATE", load("lm-mpi-job.yaml"), None, context()).patched
    twice = review("CREATE", once, None, context())
    assert twice.allowed and twice.patched == once


def test_seed_podgroup_is_admitted() -> None:
    submitted = load("lm-mpi-job-podgroup.yaml")
    assert isinstance(submitted, PodGroup)
    verdict = review("CREATE", submitted, None, context())
    assert verdict.allowed, verdict.violations
    assert json_patch(submitted, verdict.patched) == []
