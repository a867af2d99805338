"""Pod CREATE, ported from Volcano's `pods/validate/admit_pod_test.go` and `validateIntPercentageStr`."""

from __future__ import annotations

import pytest

from tests.unit.admission.admission_builders import context, only, pod
from vc_validation import review

MIN, MAX = "volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable"


@pytest.mark.parametrize(
    ("scheduler", "annotations", "message"),
    [
        pytest.param("default-scheduler", {MIN: "-1"}, None, id="pod-for-another-scheduler-passes"),
        pytest.param("volcano", None, None, id="volcano-pod-without-budget"),
        pytest.param("volcano", {MIN: "2"}, None, id="min-available-positive-integer"),
        pytest.param("volcano", {MAX: "50%"}, None, id="max-unavailable-percentage"),
        pytest.param("volcano", {MIN: "1%"}, None, id="percentage-lower-bound"),
        pytest.param("volcano", {MIN: "99%"}, None, id="percentage-upper-bound"),
        pytest.param(
            "volcano",
            {MIN: "0"},
            'invalid value <"0"> for volcano.sh/jdb-min-available, it must be a positive integer',
            id="zero",
        ),
        pytest.param(
            "volcano",
            {MAX: "-3"},
            'invalid value <"-3"> for volcano.sh/jdb-max-unavailable, it must be a positive integer',
            id="negative",
        ),
        pytest.param(
            "volcano",
            {MIN: "100%"},
            'invalid value <"100%"> for volcano.sh/jdb-min-available, '
            "it must be a valid percentage which between 1% ~ 99%",
            id="percentage-100",
        ),
        pytest.param(
            "volcano",
            {MIN: "0%"},
            "it must be a valid percentage which between 1% ~ 99%",
            id="percentage-0",
        ),
        pytest.param(
            "volcano", {MIN: "abc"}, "invalid value 'abc' for volcano.sh/jdb-min-available", id="not-a-number"
        ),
        pytest.param(
            "volcano",
            {MIN: "1", MAX: "1"},
            "not allow configure multiple annotations "
            "<[volcano.sh/jdb-min-available volcano.sh/jdb-max-unavailable]> at same time",
            id="both-budgets",
        ),
    ],
)
def test_pod_budget_annotations(scheduler: str, annotations: dict[str, str] | None, message: str | None) -> None:
    verdict = review("CREATE", pod(scheduler_name=scheduler, annotations=annotations), None, context())
    if message is None:
        assert verdict.allowed, verdict.violations
        assert verdict.patched is not None
        return
    assert not verdict.allowed
    assert message in only(verdict, "jdb-annotation").message


def test_pod_served_by_another_configured_scheduler_is_checked() -> None:
    ctx = context()
    ctx = type(ctx)(queues=ctx.queues, scheduler_names=("volcano", "tephra"))
    verdict = review("CREATE", pod(scheduler_name="tephra", annotations={MIN: "0"}), None, ctx)
    assert only(verdict, "jdb-annotation").field == f"metadata.annotations[{MIN}]"


@pytest.mark.parametrize("operation", ["UPDATE", "DELETE"])
def test_pod_only_validated_on_create(operation: str) -> None:
    bad = pod(annotations={MIN: "0"})
    assert review(operation, bad, bad, context()).allowed  # type: ignore[arg-type]
