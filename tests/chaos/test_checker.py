"""The history checker on hand-made histories: each invariant caught, each allowed case let through."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos.checker import Rules, Verdict, check
from tests.chaos.history import Change, History, Rollback, Submission, Survey

NS = "default"


class Tape:
    """Builds a history: every write gets the next revision of its kind and a time one second on."""

    def __init__(self) -> None:
        self.history = History()
        self.revision: dict[str, int] = {}
        self.newest: dict[tuple[str, str], int] = {}
        self.now = 1000.0

    def put(self, kind: str, key: str, obj: dict[str, Any], *, at: float | None = None) -> Change:
        return self._write(kind, key, "put", obj, at)

    def delete(self, kind: str, key: str, *, at: float | None = None) -> Change:
        return self._write(kind, key, "delete", None, at)

    def _write(self, kind: str, key: str, op: str, obj: dict[str, Any] | None, at: float | None) -> Change:
        self.now = at if at is not None else self.now + 1
        seq = self.revision[kind] = self.revision.get(kind, 0) + 1
        change = Change(kind, seq, key, op, obj, self.now, self.newest.get((kind, key), 0))  # type: ignore[arg-type]
        self.newest[(kind, key)] = seq
        self.history.records.append(change)
        return change

    def node(self, name: str, cpu: str = "2", pods: str = "110") -> None:
        self.put(
            "Node", f"_.{name}", {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": pods}}}
        )

    def queue(self, name: str, cpu: str) -> None:
        self.put(
            "Queue", f"_.{name}", {"metadata": {"name": name}, "spec": {"capability": {"cpu": cpu}, "parent": "root"}}
        )

    def group(self, name: str, min_member: int, job: str = "") -> None:
        owners = [{"kind": "Job", "name": job}] if job else []
        meta = {"name": name, "namespace": NS, "ownerReferences": owners}
        self.put("PodGroup", f"{NS}.{name}", {"metadata": meta, "spec": {"minMember": min_member}})

    def job(self, name: str, phase: str, uid: str = "", *, at: float | None = None) -> Change:
        meta = {"name": name, "namespace": NS, "uid": uid or f"uid-{name}"}
        return self.put("Job", f"{NS}.{name}", {"metadata": meta, "status": {"state": {"phase": phase}}}, at=at)

    def pod(
        self,
        name: str,
        *,
        node: str = "",
        phase: str = "Pending",
        cpu: str = "1",
        queue: str = "q",
        group: str = "",
        uid: str = "",
        deleting: bool = False,
        at: float | None = None,
    ) -> Change:
        annotations = {"volcano.sh/queue-name": queue, **({"scheduling.k8s.io/group-name": group} if group else {})}
        meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid or f"uid-{name}", "annotations": annotations}
        if deleting:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        spec = {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        return self.put("Pod", f"{NS}.{name}", {"metadata": meta, "spec": spec, "status": {"phase": phase}}, at=at)

    def check(self, **rules: float) -> Verdict:
        self.history.end_at = self.now + 1
        return check(self.history, Rules(**rules))


def invariants(verdict: Verdict) -> list[str]:
    return [v.invariant for v in verdict.violations]


@pytest.fixture
def tape() -> Tape:
    t = Tape()
    t.node("n1", cpu="2")
    t.node("n2", cpu="2")
    t.queue("q", cpu="3")
    return t


def test_a_clean_history_has_no_violation(tape: Tape) -> None:
    tape.group("g", 2, job="j")
    tape.job("j", "Pending")
    tape.pod("a", group="g")
    tape.pod("b", group="g")
    tape.pod("a", group="g", node="n1")
    tape.pod("b", group="g", node="n2")
    tape.pod("a", group="g", node="n1", phase="Running")
    tape.pod("b", group="g", node="n2", phase="Running")
    tape.pod("a", group="g", node="n1", phase="Succeeded")
    tape.pod("b", group="g", node="n2", phase="Succeeded")
    tape.job("j", "Completed")
    verdict = tape.check()
    assert verdict.violations == []
    assert (verdict.jobs, verdict.finished, verdict.binds) == (1, 1, 2)


def test_a_pod_bound_to_a_second_node_is_caught_with_its_trail(tape: Tape) -> None:
    tape.pod("a", node="n1")
    tape.pod("a", node="n2")
    verdict = tape.check()
    assert invariants(verdict) == ["bound-twice"]
    assert "bound to n1, then to n2" in verdict.violations[0].message
    assert [step.split(" rev ")[0] for step in verdict.violations[0].trail] == ["Pod default.a"] * 2
    assert "node=n1" in verdict.violations[0].trail[0] and "node=n2" in verdict.violations[0].trail[1]


def test_a_pod_unbound_and_bound_again_is_caught(tape: Tape) -> None:
    tape.pod("a", node="n1")
    tape.pod("a", node="")
    tape.pod("a", node="n1")
    assert invariants(tape.check()) == ["bound-twice"]


def test_a_recreated_pod_may_land_elsewhere(tape: Tape) -> None:
    tape.pod("a", node="n1", uid="first")
    tape.delete("Pod", f"{NS}.a")
    tape.pod("a", node="n2", uid="second")
    assert tape.check().violations == []


def test_a_node_overcommitted_at_one_moment_is_caught_even_if_it_recovers(tape: Tape) -> None:
    tape.pod("a", node="n1", cpu="1", queue="other")
    tape.pod("b", node="n1", cpu="1", queue="other")
    tape.pod("c", node="n1", cpu="1", queue="other")  # 3 cpu on a 2-cpu node
    tape.pod("c", node="n1", cpu="1", queue="other", phase="Failed")
    verdict = tape.check()
    assert invariants(verdict) == ["node-allocatable"]
    violation = verdict.violations[0]
    assert "node n1" in violation.message and "cpu: 3 > 2" in violation.message
    assert [s.split(" rev ")[0] for s in violation.trail] == ["Pod default.a", "Pod default.b", "Pod default.c"]


def test_terminal_pods_free_their_room_and_deleting_ones_do_not(tape: Tape) -> None:
    tape.pod("a", node="n1", queue="other")
    tape.pod("b", node="n1", queue="other")
    tape.pod("a", node="n1", queue="other", phase="Succeeded")
    tape.pod("c", node="n1", queue="other")  # fits: a is done
    tape.pod("b", node="n1", queue="other", deleting=True)
    tape.pod("d", node="n1", queue="other")  # b still runs while it is deleted
    verdict = tape.check()
    assert invariants(verdict) == ["node-allocatable"]
    assert "after default.d" in verdict.violations[0].message


def test_pod_slots_count(tape: Tape) -> None:
    tape.node("small", cpu="8", pods="1")
    tape.pod("a", node="small", queue="other")
    tape.pod("b", node="small", queue="other")
    assert "pods: 2 > 1" in tape.check().violations[0].message


def test_a_queue_over_its_capability_is_caught_once_per_episode(tape: Tape) -> None:
    tape.pod("a", node="n1", cpu="2")
    tape.pod("b", node="n2", cpu="2")  # 4 > 3
    tape.pod("b", node="n2", cpu="2", phase="Succeeded")
    tape.pod("c", node="n2", cpu="1")  # 3: back within
    tape.pod("d", node="n2", cpu="1")  # 4 again: a new episode
    verdict = tape.check()
    assert invariants(verdict) == ["queue-capability", "queue-capability"]
    assert "queue q" in verdict.violations[0].message and "cpu: 4 > 3" in verdict.violations[0].message


def test_a_parent_queue_caps_its_children(tape: Tape) -> None:
    tape.put("Queue", "_.child", {"metadata": {"name": "child"}, "spec": {"parent": "q"}})
    tape.pod("a", node="n1", cpu="2", queue="child")
    tape.pod("b", node="n2", cpu="2", queue="child")
    assert "queue q" in tape.check().violations[0].message


def test_a_gang_being_bound_or_torn_down_within_the_grace_is_fine(tape: Tape) -> None:
    tape.group("g", 2)
    tape.pod("a", group="g", node="n1", at=2000)
    tape.pod("b", group="g", node="n2", at=2003)
    tape.pod("a", group="g", node="n1", deleting=True, at=2100)
    tape.pod("b", group="g", node="n2", deleting=True, at=2104)
    assert tape.check(gang_grace_s=10).violations == []


def test_a_gang_left_below_min_member_past_the_grace_is_caught(tape: Tape) -> None:
    tape.group("g", 3)
    tape.pod("a", group="g", node="n1", at=2000)
    tape.pod("b", group="g", node="n2", at=2001)
    tape.pod("c", group="g", at=2002)  # never bound
    tape.pod("b", group="g", node="n2", phase="Failed", at=2050)
    tape.pod("a", group="g", node="n1", deleting=True, at=2051)
    verdict = tape.check(gang_grace_s=10)
    assert invariants(verdict) == ["gang-partial"]
    assert "was placed below minMember for 51.0 s" in verdict.violations[0].message


def test_a_gang_still_partial_at_the_end_is_caught(tape: Tape) -> None:
    tape.group("g", 2)
    tape.pod("a", group="g", node="n1", at=2000)
    tape.now = 2100
    assert "is still placed below minMember" in tape.check(gang_grace_s=10).violations[0].message


def test_a_finishing_gang_may_shrink(tape: Tape) -> None:
    tape.group("g", 2)
    tape.pod("a", group="g", node="n1", at=2000)
    tape.pod("b", group="g", node="n2", at=2000)
    tape.pod("a", group="g", node="n1", phase="Succeeded", at=2010)
    tape.now = 2100
    assert tape.check(gang_grace_s=10).violations == []


def test_an_acknowledged_job_missing_from_the_store_is_lost(tape: Tape) -> None:
    created = tape.job("kept", "Pending")
    tape.job("kept", "Completed")
    tape.history.submissions += [
        Submission("kept", "default.kept", "acked", tape.now, revision=created.seq),
        Submission("ghost", "default.ghost", "acked", tape.now, revision=7),
    ]
    verdict = tape.check()
    assert invariants(verdict) == ["job-lost"]
    assert "default.ghost at rev 7" in verdict.violations[0].message


def test_an_acknowledgement_without_a_revision_needs_the_key_created(tape: Tape) -> None:
    """A retry that found the job already there knows no revision: any creation of the key will do."""
    tape.job("found", "Completed")
    tape.history.submissions += [
        Submission("found", "default.found", "acked", tape.now, detail="an earlier attempt landed"),
        Submission("gone", "default.gone", "acked", tape.now, detail="an earlier attempt landed"),
    ]
    verdict = tape.check()
    assert invariants(verdict) == ["job-lost"]
    assert "default.gone at rev 0" in verdict.violations[0].message


def test_a_refused_valid_job_is_reported(tape: Tape) -> None:
    tape.history.submissions.append(Submission("j", "default.j", "refused", tape.now, detail="Invalid: queue q closed"))
    assert invariants(tape.check()) == ["job-refused"]


def test_a_job_deleted_before_it_finished_is_lost_and_after_is_collected(tape: Tape) -> None:
    tape.job("early", "Running")
    tape.delete("Job", f"{NS}.early")
    tape.job("done", "Completed")
    tape.delete("Job", f"{NS}.done")
    verdict = tape.check()
    assert invariants(verdict) == ["job-lost"]
    assert (verdict.jobs, verdict.finished) == (2, 1)


def test_a_job_stuck_is_dropped_and_a_changing_one_is_progressing(tape: Tape) -> None:
    tape.job("stuck", "Pending", at=1000)
    tape.job("busy", "Running", at=1200)
    tape.now = 1230
    verdict = tape.check(progress_window_s=60)
    assert invariants(verdict) == ["job-dropped"]
    assert "default.stuck stuck in phase Pending" in verdict.violations[0].message
    assert verdict.progressing == 1


def test_a_job_whose_pods_change_is_progressing(tape: Tape) -> None:
    tape.job("j", "Running", at=1000)
    tape.group("g", 1, job="j")
    tape.pod("a", group="g", node="n1", at=1190)
    tape.now = 1200
    assert tape.check(progress_window_s=60).progressing == 1


def test_a_rollback_within_the_unsynced_interval_is_allowed_and_forgets_the_lost_branch(tape: Tape) -> None:
    tape.group("g", 1)
    kept = tape.job("j", "Pending")
    tape.pod("a", group="g", node="n1", uid="u1")
    pod_kept = tape.revision["Pod"]
    lost = tape.job("late", "Pending")  # acknowledged after the last sync
    tape.pod("a", group="g", node="n1", uid="u1", phase="Running")
    tape.history.records += [
        Rollback("Job", kept=kept.seq, synced=kept.seq, at=tape.now),
        Rollback("Pod", kept=pod_kept, synced=pod_kept, at=tape.now),
    ]
    tape.revision["Pod"], tape.revision["Job"] = pod_kept, kept.seq
    tape.newest[("Pod", "default.a")] = pod_kept
    tape.pod("a", group="g", node="n1", uid="u1", phase="Running")  # the same revision number, again
    tape.job("j", "Completed")
    tape.history.submissions += [
        Submission("j", "default.j", "acked", 0, revision=kept.seq),
        Submission("late", "default.late", "acked", 0, revision=lost.seq),
    ]
    verdict = tape.check()
    assert verdict.violations == []
    assert verdict.lost_unsynced == 1


def test_a_rollback_past_the_last_sync_is_a_lost_write(tape: Tape) -> None:
    tape.job("j", "Pending")
    tape.job("k", "Pending")
    tape.history.records.append(Rollback("Job", kept=1, synced=2, at=tape.now))
    assert "write-lost" in invariants(tape.check(progress_window_s=1e9))


def test_a_survey_after_a_restart_catches_a_lost_write(tape: Tape) -> None:
    tape.job("j", "Pending")
    tape.job("j", "Running")
    tape.history.records.append(Survey("Job", {"default.j": 1}, tape.now, why="nats-server kill -9"))
    verdict = tape.check(progress_window_s=1e9)
    assert invariants(verdict) == ["write-lost"]
    assert "after nats-server kill -9 Job default.j is at rev 1, but rev 2" in verdict.violations[0].message


def test_a_survey_that_finds_newer_revisions_is_fine(tape: Tape) -> None:
    tape.job("j", "Pending")
    tape.history.records.append(Survey("Job", {"default.j": 5, "default.other": 3}, tape.now))
    assert tape.check(progress_window_s=1e9).violations == []
