"""Per-role gang checks (minTaskMember) from counts kept as tasks change status, against walking every
task as Volcano does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.scheduler.scheduler_builders import NOW, snapshot
from vc_sched_core.cycle import load_scheduler_conf
from vc_sched_core.framework.framework import open_session
from vc_sched_core.framework.model import READY_STATUSES, VALID_STATUSES, JobInfo, TaskStatus
from vc_sched_core.plugins import in_tree_plugins


def _walk(job: JobInfo, counted: frozenset[TaskStatus], best_effort_pending: bool) -> bool:
    if not job.task_min_available or job.min_available < job.task_min_total():
        return True
    occupied: dict[str, int] = {}
    for task in job.tasks.values():
        pending_be = best_effort_pending and task.status == TaskStatus.PENDING and task.best_effort
        if task.status in counted or pending_be:
            occupied[task.role] = occupied.get(task.role, 0) + 1
    return all(occupied.get(role, 0) >= need for role, need in job.task_min_available.items())


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["ps", "worker", "chief"]), st.booleans()), min_size=1, max_size=8),
    st.dictionaries(st.sampled_from(["ps", "worker"]), st.integers(0, 3), min_size=1),
    st.lists(st.tuples(st.integers(0, 7), st.sampled_from(list(TaskStatus))), max_size=20),
)
def test_role_counts_answer_as_walking_the_tasks(
    pods: list[tuple[str, bool]], minimums: dict[str, int], moves: list[tuple[int, TaskStatus]]
) -> None:
    objs: list[dict[str, object]] = [
        {
            "kind": "PodGroup",
            "metadata": {"name": "j", "namespace": "default"},
            "spec": {"minMember": sum(minimums.values()), "minTaskMember": minimums},
            "status": {"phase": "Inqueue"},
        }
    ]
    for i, (role, best_effort) in enumerate(pods):
        requests = {} if best_effort else {"cpu": "1"}
        objs.append(
            {
                "kind": "Pod",
                "metadata": {"name": f"j-{i}", "namespace": "default", "annotations": {
                    "scheduling.k8s.io/group-name": "j", "volcano.sh/task-spec": role
                }},
                "spec": {"schedulerName": "volcano", "containers": [{"resources": {"requests": requests}}]},
            }
        )  # fmt: skip
    ssn, _ = open_session(snapshot(*objs), load_scheduler_conf(), plugins=in_tree_plugins(), now=NOW, uid="t")
    job = {**ssn.jobs, **ssn.invalid_jobs}["default/j"]
    tasks = list(job.tasks.values())
    for index, status in [(0, TaskStatus.PENDING), *moves]:
        job.update_task_status(tasks[index % len(tasks)], status)
        assert job.check_task_valid() == _walk(job, VALID_STATUSES, False)
        assert job.check_task_ready() == _walk(job, READY_STATUSES, True)
        assert job.check_task_pipelined() == _walk(job, READY_STATUSES | {TaskStatus.PIPELINED}, True)
