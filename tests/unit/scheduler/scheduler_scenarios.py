"""Load the scenario files of tests/scenarios: the snapshot, the header, and a checker for `expect`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from vc_sched_core.cycle import load_scheduler_conf
from vc_sched_core.sim import simulate
from vc_sched_core.snapshot import ClusterSnapshot, load_snapshot

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"
HEADER_KIND = "SchedulerScenario"


@dataclass(frozen=True)
class Scenario:
    name: str
    snapshot: ClusterSnapshot
    conf_text: str | None
    cycles: int
    expect: dict[str, Any] = field(default_factory=dict)

    def run(self) -> dict[str, Any]:
        conf = load_scheduler_conf(self.conf_text)
        result = simulate(self.snapshot, conf, cycles=self.cycles, now=datetime.now(UTC))
        return {**result, "confWarnings": conf.warnings()}


def scenario_files() -> list[Path]:
    return sorted(SCENARIO_DIR.glob("*.yaml"))


def load_scenario(path: Path) -> Scenario:
    text = path.read_text()
    header = next(yaml.safe_load_all(text))
    if not isinstance(header, dict) or header.get("kind") != HEADER_KIND:
        raise ValueError(f"{path.name}: the first document must be kind {HEADER_KIND}")
    return Scenario(
        name=path.stem,
        snapshot=load_snapshot(text),
        conf_text=header.get("conf"),
        cycles=int(header.get("cycles", 1)),
        expect=dict(header.get("expect") or {}),
    )


def group_of(snapshot: ClusterSnapshot) -> dict[str, str]:
    return {p.key: f"{p.namespace}/{p.group_name}" for p in snapshot.pods if p.group_name}


def check(scenario: Scenario, result: dict[str, Any]) -> list[str]:
    """Every mismatch between the result and the scenario's `expect`, as readable lines."""
    expect, binds, problems = scenario.expect, result["binds"], []
    for pod, node in expect.get("binds", {}).items():
        if binds.get(pod) != node:
            problems.append(f"{pod}: bound to {binds.get(pod)}, expected {node}")
    for pod, nodes in expect.get("bindsAnyOf", {}).items():
        if binds.get(pod) not in nodes:
            problems.append(f"{pod}: bound to {binds.get(pod)}, expected one of {nodes}")
    if expect.get("onlyTheseBound"):
        listed = set(expect.get("binds", {})) | set(expect.get("bindsAnyOf", {}))
        extra = sorted(set(binds) - listed)
        if extra:
            problems.append(f"unexpected binds: {extra}")
    if expect.get("distinctNodes") and len(set(binds.values())) != len(binds):
        problems.append(f"two pods share a node: {binds}")
    groups = group_of(scenario.snapshot)
    counts = Counter(groups.get(pod) for pod in binds)
    for pg, count in expect.get("boundPerPodGroup", {}).items():
        if counts.get(pg, 0) != count:
            problems.append(f"{pg}: {counts.get(pg, 0)} pods bound, expected {count}")
    for key in ("evictions", "pipelined"):
        if key in expect and sorted(result[key]) != sorted(expect[key]):
            problems.append(f"{key}: {sorted(result[key])}, expected {sorted(expect[key])}")
    written = result.get("bindAnnotations", {})
    for pod, wanted in expect.get("bindAnnotations", {}).items():
        for key, value in wanted.items():
            if written.get(pod, {}).get(key) != value:
                problems.append(f"{pod}: bind annotation {key}={written.get(pod, {}).get(key)!r}, expected {value!r}")
    problems.extend(_check_podgroups(expect, result["podgroups"]))
    if "confWarnings" in expect and result.get("confWarnings", []) != expect["confWarnings"]:
        problems.append(f"conf warnings: {result.get('confWarnings')}, expected {expect['confWarnings']}")
    return problems


def _check_podgroups(expect: dict[str, Any], podgroups: dict[str, Any]) -> list[str]:
    problems = []
    for pg, phase in expect.get("podgroups", {}).items():
        actual = podgroups.get(pg, {}).get("phase")
        if actual != phase:
            problems.append(f"{pg}: phase {actual}, expected {phase}")
    for pg, reason in expect.get("reasons", {}).items():
        conditions = podgroups.get(pg, {}).get("conditions", [])
        if not conditions or conditions[-1]["reason"] != reason:
            problems.append(f"{pg}: conditions {conditions}, expected last reason {reason!r}")
    for pg, texts in expect.get("messages", {}).items():
        messages = " | ".join(c["message"] for c in podgroups.get(pg, {}).get("conditions", []))
        problems.extend(f"{pg}: {text!r} not in {messages!r}" for text in texts if text not in messages)
    return problems
