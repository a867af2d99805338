"""The annotations that tell node-sim how a pod ends: `sim.tephra.dev/duration` (Go duration text, how
long it runs) and `sim.tephra.dev/exit-code` (0-255, how it exits). Admission refuses bad values on pods
and on task templates; node-sim parses them with the same functions, so the two never disagree about
what a value means (a negative duration is an error, not "finish now").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from vc_core.durations import parse_duration
from vc_core.errors import InvalidObject
from vc_proto.vocabulary import SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION
from vc_validation.verdict import Violation

MAX_EXIT_CODE: Final = 255


def parse_sim_duration(text: str, *, path: str = "metadata.annotations") -> float:
    """Seconds the pod runs; raises InvalidObject (rule `sim-duration`) for anything else."""
    field = f"{path}[{SIM_DURATION_ANNOTATION}]"
    try:
        seconds = parse_duration(text, field=field)
    except InvalidObject as exc:
        raise InvalidObject(field, "sim-duration", exc.message) from exc
    if seconds < 0:
        raise InvalidObject(field, "sim-duration", f"{text[:64]!r} is negative; a pod runs for 0s or longer")
    return seconds


def parse_sim_exit_code(text: str, *, path: str = "metadata.annotations") -> int:
    """The pod's exit code; raises InvalidObject (rule `sim-exit-code`) unless it is an integer 0-255."""
    body = text.strip()
    if not (0 < len(body) <= 3 and body.isascii() and body.isdigit()) or int(body) > MAX_EXIT_CODE:
        field = f"{path}[{SIM_EXIT_CODE_ANNOTATION}]"
        raise InvalidObject(field, "sim-exit-code", f"{text[:64]!r} is not an exit code (an integer 0-{MAX_EXIT_CODE})")
    return int(body)


def validate_sim_annotations(annotations: Mapping[str, str] | None, *, path: str) -> Iterator[Violation]:
    """`path` is where the annotations live, e.g. `spec.tasks[0].template.metadata.annotations`."""
    values = annotations or {}
    for key, parse in ((SIM_DURATION_ANNOTATION, parse_sim_duration), (SIM_EXIT_CODE_ANNOTATION, parse_sim_exit_code)):
        if key not in values:
            continue
        try:
            parse(values[key], path=path)
        except InvalidObject as exc:
            yield Violation(exc.field, exc.rule, exc.message)
