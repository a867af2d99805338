"""vcctl's smaller surfaces: kubectl's escaped JSONPath keys, NATS' version in plain text, a running
job's duration, `-o`'s help naming the formats, `job run --queue`, allocation figures, and quiet exit
on a closed pipe."""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from nats.aio.client import ServerVersion

from vc_cli.allocation import node_wide_row, pods_by_node, queue_wide_row
from vc_cli.commands.job import _prepare_run
from vc_cli.commands.version import nats_version
from vc_cli.describe import describe_job
from vc_cli.describe_node import describe_node
from vc_cli.jsonpath import parse_template
from vc_cli.main import build_parser
from vc_proto.batch import Job
from vc_proto.core import Node, Pod
from vc_proto.scheduling import Queue

BIN = Path(sys.executable).parent


def test_jsonpath_takes_keys_with_escaped_dots_as_kubectl_writes_them() -> None:
    queue = {"spec": {"capability": {"nvidia.com/gpu": "8", "cpu": "64"}}}
    assert parse_template(r"{.spec.capability.nvidia\.com/gpu}").render(queue) == "8"
    assert parse_template(r"{.spec.capability['nvidia.com/gpu']}").render(queue) == "8"


def test_the_nats_server_version_is_plain() -> None:
    assert nats_version(ServerVersion("2.15.1")) == "2.15.1"
    assert nats_version(ServerVersion("2.11.0-RC.1")) == "2.11.0-RC.1"


def _job(status: dict[str, Any]) -> Job:
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"tasks": []},
        "status": status,
    }
    return msgspec.convert(doc, Job)


def _field(lines: list[str], label: str) -> str:
    (line,) = [line for line in lines if line.strip().startswith(f"{label}:")]
    return line.split(":", 1)[1].strip()


def test_a_running_job_shows_how_long_it_has_been_running() -> None:
    now = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
    running = _job({"state": {"phase": "Running", "lastTransitionTime": "2026-01-01T00:05:00Z"}})
    assert _field(describe_job(running, podgroup=None, pods=[], events=[], now=now), "Running Duration") == "5m"
    ended = _job({"state": {"phase": "Completed"}, "runningDuration": "7m3s"})
    assert _field(describe_job(ended, podgroup=None, pods=[], events=[], now=now), "Running Duration") == "7m3s"


def test_output_help_lists_the_formats_wherever_o_is_taken() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    queue = next(a for a in sub.choices["queue"]._actions if isinstance(a, argparse._SubParsersAction))
    for verb in ("get", "list"):
        text = queue.choices[verb].format_help()
        assert "wide, json, yaml, name" in " ".join(text.split()), verb


def test_job_run_queue_submits_the_file_into_that_queue(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: a}\nspec: {tasks: []}\n")
    args = build_parser().parse_args(["job", "run", "-f", str(path), "--queue", "research"])
    _prepare_run(args)
    assert [d["spec"]["queue"] for d in args.documents] == ["research"]
    flags = build_parser().parse_args(["job", "run", "-N", "b", "-q", "research"])
    _prepare_run(flags)
    assert flags.documents[0]["spec"]["queue"] == "research"


def _pod(name: str, node: str, cpu: str, memory: str, phase: str = "Running") -> Pod:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        },
        "status": {"phase": phase},
    }
    return msgspec.convert(doc, Pod)


def _node() -> Node:
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "nvidia.com/gpu": "8", "pods": "110"}},
    }
    return msgspec.convert(doc, Node)


def test_a_nodes_allocation_is_what_its_unfinished_pods_request() -> None:
    pods = [_pod("a", "n1", "4", "8Gi"), _pod("b", "n1", "500m", "8Gi"), _pod("done", "n1", "8", "1Gi", "Succeeded")]
    placed = pods_by_node(pods)
    assert node_wide_row(_node(), placed) == ["4.5 (14%)", "16Gi (25%)", "0 (0%)", "2 (1%)"]
    page = describe_node(_node(), placed["n1"])
    assert "Allocated resources:" in page and any("4.5 (14%)" in line for line in page)
    assert any(" a " in f" {line} " and "8Gi" in line for line in page) and not any("done" in line for line in page)


def test_a_queues_allocation_is_shown_against_its_capability() -> None:
    doc = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research"},
        "spec": {"weight": 1, "capability": {"cpu": "64", "nvidia.com/gpu": "8"}},
        "status": {"allocated": {"cpu": "5", "memory": "6Gi", "nvidia.com/gpu": "2"}},
    }
    assert queue_wide_row(msgspec.convert(doc, Queue)) == ["5/64", "6Gi/-", "2/8"]


def test_a_closed_pipe_ends_vcctl_quietly() -> None:
    proc = subprocess.Popen(
        [str(BIN / "vcctl"), "completion", "bash"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before vcctl writes a byte
    error = proc.stderr.read()
    assert proc.wait(30) != 1 and error == ""


def test_history_lines_name_the_service_as_its_kubernetes_events_do() -> None:
    from vc_cli.describe import history_events
    from vc_proto.events import DomainEvent

    def fact(source: str) -> DomainEvent:
        return DomainEvent(
            id=source, occurred_at="2026-01-01T00:00:00Z", source=source, kind="Job", name="j", reason="R"
        )

    sources = [e.source for e in history_events([fact("scheduler/scheduler-0"), fact("gc"), fact("vc-dashboard")])]
    assert sources == ["vc-scheduler", "vc-gc", "vc-dashboard"]


def test_a_request_above_the_default_limit_is_refused_with_a_hint() -> None:
    import pytest

    from vc_cli.errors import CliError

    args = build_parser().parse_args(["job", "run", "-N", "big", "-R", "cpu=1,memory=1Gi"])
    with pytest.raises(CliError) as refused:
        _prepare_run(args)
    said = str(refused.value)
    assert refused.value.code == 2 and "-R/--requests memory=1Gi" in said and "memory=100Mi (the default)" in said
    assert "-L memory=1Gi" in said
    fine = build_parser().parse_args(["job", "run", "-N", "big", "-R", "cpu=1,memory=1Gi", "-L", "cpu=1,memory=1Gi"])
    _prepare_run(fine)
    assert fine.documents[0]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "1",
        "memory": "1Gi",
    }
