"""Pod validation on CREATE.

Every pod: what an API server checks that Tephra depends on (metadata bounds, containers and their
resources, node-sim's annotations); the embedded store has no other API server. Pods a Volcano
scheduler serves also get Volcano's checks (`pods/validate/admit_pod.go`): the disruption-budget
annotations `volcano.sh/jdb-min-available` and `volcano.sh/jdb-max-unavailable` take a positive integer
or a percentage between 1% and 99%, and only one of them may be set.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from vc_proto.core import Pod
from vc_validation.names import validate_metadata_bounds
from vc_validation.simulation import validate_sim_annotations
from vc_validation.templates import validate_pod_spec
from vc_validation.verdict import Violation

JDB_MIN_AVAILABLE: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE: Final = "volcano.sh/jdb-max-unavailable"
JDB_KEYS: Final = (JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE)


def is_volcano_pod(pod: Pod, scheduler_names: Sequence[str]) -> bool:
    return pod.spec is not None and pod.spec.scheduler_name in scheduler_names


def validate_pod_create(pod: Pod, scheduler_names: Sequence[str]) -> list[Violation]:
    """Volcano's own checks only for pods a Volcano scheduler serves, as in Volcano."""
    violations = validate_pod(pod)
    if is_volcano_pod(pod, scheduler_names):
        violations.extend(_validate_budget(pod.metadata.annotations or {}))
    return violations


def validate_pod(pod: Pod) -> list[Violation]:
    """What any pod must be before anything acts on it, whoever stored it."""
    return [
        *validate_metadata_bounds(pod.metadata),
        *validate_sim_annotations(pod.metadata.annotations, path="metadata.annotations"),
        *validate_pod_spec(pod.spec, "spec"),
    ]


def _validate_budget(annotations: dict[str, str]) -> Iterator[Violation]:
    present = [key for key in JDB_KEYS if key in annotations]
    for key in present:
        problem = budget_value_problem(key, annotations[key])
        if problem:
            yield Violation(f"metadata.annotations[{key}]", "jdb-annotation", problem)
            return
    if len(present) > 1:
        yield Violation(
            "metadata.annotations",
            "jdb-annotation",
            f"not allow configure multiple annotations <[{' '.join(JDB_KEYS)}]> at same time",
        )


def budget_value_problem(key: str, value: str) -> str | None:
    """Volcano `validateIntPercentageStr`, with intstr.Parse's rule: a value that parses as an int is one."""
    if _is_int(value):
        if int(value) <= 0:
            return f'invalid value <"{value[:64]}"> for {key}, it must be a positive integer'
        return None
    digits = value.replace("%", "")
    if not _is_int(digits):
        return f"invalid value {value[:64]!r} for {key}: not an integer or a percentage"
    if not 0 < int(digits) < 100:
        return f'invalid value <"{value[:64]}"> for {key}, it must be a valid percentage which between 1% ~ 99%'
    return None


def _is_int(text: str) -> bool:
    # Go's strconv.Atoi: optional sign then ASCII digits, bounded so int() never sees a huge string.
    body = text[1:] if text[:1] in "+-" else text
    return 0 < len(body) <= 18 and body.isascii() and body.isdigit()
