"""`vcctl sim cycle` entry point: JSON out, exit 2 with index and field for bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

from vc_sched_core.sim import main

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(argv, stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_malformed_snapshot_exits_2_naming_document_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "kind: Node\nmetadata: {name: n}\n---\nkind: Queue\nmetadata: {name: q}\n---\n"
        "kind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: many}\n"
    )
    code, out, err = _run(["-f", str(bad), "-o", "json"])
    assert code == 2 and out == ""
    assert "document 2" in err and "spec.minMember" in err


def test_unknown_plugin_in_conf_exits_2(tmp_path: Path) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: nosuch\n')
    code, _, err = _run(["-f", str(SCENARIOS / "deadlock-4gpu.yaml"), "--conf", str(conf), "-o", "json"])
    assert code == 2 and "failed to find Plugin nosuch" in err


def test_missing_file_and_bad_flags_exit_2(tmp_path: Path) -> None:
    assert _run(["-f", str(tmp_path / "absent.yaml")])[0] == 2
    assert _run(["-f", str(SCENARIOS / "deadlock-4gpu.yaml"), "--cycles", "0"])[0] == 2
    assert _run(["--nonsense"])[0] == 2


def test_deadlock_snapshot_prints_the_spec_shape() -> None:
    code, out, _ = _run(["-f", str(SCENARIOS / "deadlock-4gpu.yaml"), "-o", "json"])
    report = json.loads(out)
    assert code == 0
    assert set(report) == {"binds", "evictions", "pipelined", "podgroups"}
    assert sorted(report["binds"]) == [f"default/job1-{i}" for i in range(4)]
    assert len(set(report["binds"].values())) == 4
    condition = report["podgroups"]["default/job2"]["conditions"][0]
    assert set(condition) == {"type", "status", "reason", "message"}
