"""node-sim never reads garbage as a value: annotations and control requests."""

from __future__ import annotations

import pytest

from vc_node_sim.admit import admit
from vc_node_sim.control import parse_control
from vc_node_sim.logic import SimConfig, Step, plan
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, PodStatus
from vc_proto.meta import ObjectMeta

STARTED = "2030-01-01T00:00:00Z"
STARTED_EPOCH = 1893456000.0


def running(annotations: dict[str, str]) -> Pod:
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name="p", namespace="default", annotations=annotations),
        spec=PodSpec(node_name="node-0", containers=[Container(name="main")]),
        status=PodStatus(phase="Running", start_time=STARTED),
    )


def test_a_good_duration_and_exit_code_end_the_pod_as_asked() -> None:
    nxt = plan(
        running({"sim.tephra.dev/duration": "30s", "sim.tephra.dev/exit-code": "3"}),
        seen_at=0,
        node_not_ready_since=None,
        cfg=SimConfig(),
    )
    assert nxt is not None
    assert (nxt.step, nxt.due, nxt.exit_code, nxt.reason) == (Step.FINISH, STARTED_EPOCH + 30, 3, None)


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        pytest.param({"sim.tephra.dev/duration": "-5s"}, "sim.tephra.dev/duration", id="negative-duration"),
        pytest.param({"sim.tephra.dev/duration": "soon"}, "sim.tephra.dev/duration", id="garbage-duration"),
        pytest.param({"sim.tephra.dev/exit-code": "boom"}, "sim.tephra.dev/exit-code", id="garbage-exit-code"),
    ],
)
def test_a_bad_annotation_fails_the_pod_with_a_reason_instead_of_meaning_now(
    annotations: dict[str, str], field: str
) -> None:
    nxt = plan(running(annotations), seen_at=0, node_not_ready_since=None, cfg=SimConfig())
    assert nxt is not None and nxt.step is Step.FINISH and nxt.exit_code != 0
    assert nxt.reason == "Invalid" and nxt.message is not None and field in nxt.message
    pending = Pod(api_version=CORE_V1, metadata=running(annotations).metadata, spec=running(annotations).spec)
    rejection = admit(pending, allocatable={"cpu": "1", "pods": "1"}, running=[])
    assert rejection is not None and rejection.reason == "Invalid" and field in rejection.message


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b'{"node": "node-1", "ready": false}', ("node-1", False), id="bool-false"),
        pytest.param(b'{"node": "node-1", "ready": "false"}', ("node-1", False), id="text-false"),
        pytest.param(b'{"node": "node-1", "ready": "TRUE"}', ("node-1", True), id="text-true-any-case"),
        pytest.param(b'{"node": "node-1", "ready": true}', ("node-1", True), id="bool-true"),
    ],
)
def test_ready_is_a_boolean(data: bytes, expected: tuple[str, bool]) -> None:
    assert parse_control(data) == expected


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"node": "node-1", "ready": "yes"}', id="yes"),
        pytest.param(b'{"node": "node-1", "ready": 1}', id="number"),
        pytest.param(b'{"node": "node-1", "ready": null}', id="null"),
        pytest.param(b'{"node": "", "ready": true}', id="no-node"),
        pytest.param(b'{"node": 5, "ready": true}', id="node-not-text"),
        pytest.param(b"\xff", id="not-json"),
        pytest.param(b"[]", id="not-an-object"),
    ],
)
def test_anything_else_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        parse_control(data)
