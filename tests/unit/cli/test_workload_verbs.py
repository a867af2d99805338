"""vcctl jobflow / jobtemplate / cronjob: their table rows, summaries and flag rules (no server)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from tests.unit.flow_controller.builders import example_cronjob, example_flow, example_templates
from vc_cli.commands import cronjob, jobflow, jobtemplate
from vc_cli.errors import CliError
from vc_cli.main import build_parser
from vc_proto.cronjob import CronJobStatus, ObjectReference
from vc_proto.flow import FlowJobStatus, FlowState, JobFlowStatus


def test_a_jobflow_row_and_summary_show_its_phase_and_each_flows_job() -> None:
    status = JobFlowStatus(
        completed_jobs=["test-a"],
        state=FlowState(phase="Running"),
        job_status_list=[
            FlowJobStatus(name="test-a", state="Completed"),
            FlowJobStatus(name="test-b", state="Running"),
        ],
    )
    flow = msgspec.structs.replace(example_flow(), status=status)
    assert jobflow.COLUMNS.row(flow)[:2] == ["test", "Running"]
    assert jobflow.COLUMNS.wide_row is not None and jobflow.COLUMNS.wide_row(flow) == ["1/5", "delete"]
    lines = jobflow.describe(flow)
    assert "Phase:             Running" in lines
    rows = [line.split() for line in lines[lines.index("Flows:") + 1 :]]
    assert rows[1:4] == [
        ["a", "-", "test-a", "Completed"],
        ["b", "a", "test-b", "Running"],
        ["c", "b", "test-c", "not", "created"],
    ]


def test_a_jobtemplate_row_counts_its_jobs() -> None:
    template = example_templates()["a"]
    assert jobtemplate.COLUMNS.row(template)[:3] == ["a", "default", 0]
    assert "Tasks:" in jobtemplate.describe(template)


def test_a_cronjob_row_and_summary_show_schedule_activity_and_the_next_time() -> None:
    active = [ObjectReference(name="volcano-cronjob-example-1", uid="u")]
    cron = msgspec.structs.replace(
        example_cronjob(timeZone="Asia/Shanghai", schedule="30 9 * * *"), status=CronJobStatus(active=active)
    )
    assert cronjob.COLUMNS.row(cron)[:5] == ["volcano-cronjob-example", "30 9 * * *", "Asia/Shanghai", "False", 1]
    assert cronjob.next_run(cron, datetime(2026, 1, 1, 2, 0, tzinfo=UTC)) == "2026-01-02T01:30:00Z"
    suspended = example_cronjob(suspend=True)
    assert cronjob.next_run(suspended, datetime(2026, 1, 1, tzinfo=UTC)) is None
    assert any(
        line.startswith("Active Jobs:") and line.endswith("volcano-cronjob-example-1")
        for line in cronjob.describe(cron)
    )


@pytest.mark.parametrize("argv", [["jobflow", "delete"], ["jobflow", "delete", "-N", "x", "-f", "y.yaml"]])
def test_delete_needs_exactly_one_of_a_name_and_a_file(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    with pytest.raises(CliError, match="exactly one of -N/--name and -f/--file"):
        args.prepare(args)


def test_create_refuses_a_file_of_another_kind(tmp_path: Path) -> None:
    path = tmp_path / "cron.yaml"
    path.write_text("apiVersion: batch.volcano.sh/v1alpha1\nkind: CronJob\nmetadata: {name: c}\n")
    args = build_parser().parse_args(["jobflow", "create", "-f", str(path)])
    with pytest.raises(CliError, match="holds CronJob, not JobFlow"):
        args.prepare(args)
