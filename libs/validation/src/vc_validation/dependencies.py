"""Task `dependsOn`: every name must be a task of the job, `iteration` is any/all, and the graph is a DAG."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from vc_proto.batch import TaskSpec
from vc_validation.verdict import Violation

ITERATIONS: Final = frozenset({"any", "all"})
DAG_MESSAGE: Final = "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)"


def validate_depends_on(tasks: Sequence[TaskSpec]) -> Iterator[Violation]:
    names = {task.name for task in tasks if task.name}
    for index, task in enumerate(tasks):
        if task.depends_on is None:
            continue
        path = f"spec.tasks[{index}].dependsOn"
        if task.depends_on.iteration not in (None, "", *ITERATIONS):
            yield Violation(f"{path}.iteration", "depends-on-iteration", "iteration must be one of [any all]")
        for dep_index, dep in enumerate(task.depends_on.name or []):
            if dep not in names:
                yield Violation(
                    f"{path}.name[{dep_index}]", "depends-on-task", f"task {dep[:64]!r} does not exist in the job"
                )
    if has_cycle(tasks):
        yield Violation("spec.tasks", "depends-on-dag", DAG_MESSAGE)


def has_cycle(tasks: Sequence[TaskSpec]) -> bool:
    """Kahn's algorithm over the tasks (Volcano `topoSort`); unknown names are ignored here."""
    names = [task.name or "" for task in tasks]
    known = set(names)
    edges: dict[str, set[str]] = {name: set() for name in known}
    in_degree = dict.fromkeys(known, 0)
    for task in tasks:
        for dep in set(task.depends_on.name or []) if task.depends_on else set():
            if dep in known and (task.name or "") not in edges[dep]:
                edges[dep].add(task.name or "")
                in_degree[task.name or ""] += 1
    ready = [name for name, degree in in_degree.items() if degree == 0]
    visited = 0
    while ready:
        current = ready.pop()
        visited += 1
        for nxt in edges[current]:
            in_degree[nxt] -= 1
            if in_degree[nxt] == 0:
                ready.append(nxt)
    return visited < len(known)
