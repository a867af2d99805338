"""What a service may act on: admission's stateless rules applied to stored objects."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import yaml

from tests.unit.admission.admission_builders import container, job, pod, task
from vc_proto import codec
from vc_proto.batch import Job
from vc_proto.core import CORE_V1, Pod, PodSpec, PodTemplateSpec
from vc_proto.meta import ObjectMeta
from vc_validation import job_violations, pod_violations, summarize
from vc_validation.verdict import Violation

SEEDS = Path(__file__).resolve().parents[2] / "fixtures" / "seeds"


SEED_DOCUMENTS = {path.name: yaml.safe_load(path.read_text()) for path in sorted(SEEDS.glob("*.yaml"))}
SEED_JOBS = {name: document for name, document in SEED_DOCUMENTS.items() if document.get("kind") == "Job"}


@pytest.mark.parametrize("seed", sorted(SEED_JOBS))
def test_every_seed_job_is_acted_on(seed: str) -> None:
    assert job_violations(codec.decode(msgspec.json.encode(SEED_JOBS[seed]), Job)) == []


def test_a_job_is_judged_after_admission_defaults_so_a_job_admitted_with_them_passes() -> None:
    unnamed = job("defaults", task(name=None, replicas=2), queue=None)
    assert job_violations(unnamed) == []


@pytest.mark.parametrize(
    ("stored", "rule"),
    [
        pytest.param(job("neg", task(replicas=-5)), "replicas-non-negative", id="replicas-5"),
        pytest.param(job("none", tasks=[]), "tasks-required", id="no-tasks"),
        pytest.param(job("many", task(replicas=10**9)), "replicas-limit", id="replicas-1e9"),
        pytest.param(job("Bad_Name"), "job-name", id="bad-name"),
        pytest.param(job("empty", task(template=PodTemplateSpec())), "template-containers", id="no-containers"),
        pytest.param(job("q", queue="Not A Queue"), "queue-format", id="queue-name"),
    ],
)
def test_a_job_admission_would_refuse_is_named_by_its_rule(stored: Job, rule: str) -> None:
    assert rule in {v.rule for v in job_violations(stored)}


def test_a_pod_that_admission_would_refuse() -> None:
    assert pod_violations(pod()) == []
    bare = Pod(api_version=CORE_V1, metadata=ObjectMeta(name="p", namespace="default"), spec=PodSpec())
    assert [v.rule for v in pod_violations(bare)] == ["template-containers"]
    negative = pod()
    negative = msgspec.structs.replace(
        negative, spec=PodSpec(containers=[container(requests={"cpu": "-1"})], scheduler_name="volcano")
    )
    assert [v.field for v in pod_violations(negative)] == ["spec.containers[0].resources.requests[cpu]"]


def test_a_summary_names_each_field_and_stays_bounded() -> None:
    violations = [Violation("spec.a", "r", "bad"), Violation("", "r", "worse")]
    assert summarize(violations) == "spec.a: bad; worse"
    assert len(summarize([Violation("f", "r", "x" * 5000)])) == 1024
