"""JobFlow validation on CREATE and UPDATE (Volcano `validateJobFlowDAG` and its CRD, plus bounds).

Volcano checks that every `dependsOn.targets` entry names a flow of the same JobFlow and that the
dependencies form a DAG; its CRD checks `jobRetainPolicy` and the probes' ports and lengths. Tephra
also bounds the counts, requires flow names to be unique (Volcano would merge two flows of one name
into one job), and checks that each job name `<jobflow>-<flow>` is a valid vcjob name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from vc_proto.flow import Flow, FlowDependsOn, HttpGet, HttpHeader, JobFlow, Probe, RetainPolicy
from vc_validation.limits import MAX_TASKS
from vc_validation.names import (
    dns1123_subdomain_errors,
    format_errors,
    qualified_name_errors,
    validate_metadata_bounds,
)
from vc_validation.verdict import Violation
from vc_validation.workload_limits import (
    MAX_FLOWS,
    MAX_HEADER_NAME_LENGTH,
    MAX_HEADER_VALUE_LENGTH,
    MAX_PHASE_LENGTH,
    MAX_PORT,
    MAX_PROBE_PATH_LENGTH,
    MAX_PROBES_PER_KIND,
    MAX_TASK_NAME_LENGTH,
)

NOT_DAG = "jobflow Flow is not DAG"
RETAIN_POLICIES = tuple(p.value for p in RetainPolicy)


def validate_jobflow(flow: JobFlow) -> list[Violation]:
    spec_flows = (flow.spec.flows if flow.spec else None) or []
    if len(spec_flows) > MAX_FLOWS:
        message = f"may not have more than {MAX_FLOWS} flows, got {len(spec_flows)}"
        return [Violation("spec.flows", "flows-count", message)]
    name = flow.metadata.name or ""
    violations = [*_name(name), *validate_metadata_bounds(flow.metadata), *_retain_policy(flow)]
    for index, item in enumerate(spec_flows):
        violations.extend(_flow(item, f"spec.flows[{index}]", name))
    violations.extend(_unique_names(spec_flows))
    if not any(v.rule in ("flow-name", "flow-name-unique") for v in violations):
        violations.extend(validate_dag(spec_flows))
    return violations


def _name(name: str) -> Iterator[Violation]:
    if errors := dns1123_subdomain_errors(name):
        yield Violation("metadata.name", "jobflow-name", format_errors(errors))


def _retain_policy(flow: JobFlow) -> Iterator[Violation]:
    policy = flow.spec.job_retain_policy if flow.spec else None
    if policy not in (None, "", *RETAIN_POLICIES):
        allowed = ", ".join(RETAIN_POLICIES)
        yield Violation(
            "spec.jobRetainPolicy", "job-retain-policy", f"must be one of {allowed}, got {str(policy)[:64]!r}"
        )


def _flow(item: Flow, path: str, flow_name: str) -> Iterator[Violation]:
    name = item.name or ""
    if not name:
        yield Violation(f"{path}.name", "flow-name", "the name of a JobTemplate is required")
        return
    if errors := dns1123_subdomain_errors(name):
        yield Violation(f"{path}.name", "flow-name", format_errors(errors))
        return
    job = f"{flow_name}-{name}"
    if errors := qualified_name_errors(job) or dns1123_subdomain_errors(job, max_length=63):
        message = f"the job name {job[:80]!r} is not a valid vcjob name: {format_errors(errors)}"
        yield Violation(f"{path}.name", "flow-job-name", message)
    if item.depends_on is not None:
        yield from _depends_on(item.depends_on, f"{path}.dependsOn")
    job_spec = item.patch.job_spec if item.patch else None
    tasks = (job_spec.tasks if job_spec else None) or []
    if len(tasks) > MAX_TASKS:
        yield Violation(f"{path}.patch.jobSpec.tasks", "tasks-count", f"may not have more than {MAX_TASKS} tasks")


def _depends_on(depends_on: FlowDependsOn, path: str) -> Iterator[Violation]:
    targets = depends_on.targets or []
    if len(targets) > MAX_FLOWS:
        yield Violation(f"{path}.targets", "targets-count", f"may not have more than {MAX_FLOWS} targets")
    if depends_on.probe is not None:
        yield from validate_probe(depends_on.probe, f"{path}.probe")


def validate_probe(probe: Probe, path: str) -> Iterator[Violation]:
    """Volcano's CRD bounds (ports 0-65535, taskName <= 253, phase <= 63), plus counts and sizes."""
    lists = (
        ("httpGetList", probe.http_get_list),
        ("tcpSocketList", probe.tcp_socket_list),
        ("taskStatusList", probe.task_status_list),
    )
    for field, items in lists:
        if items is not None and len(items) > MAX_PROBES_PER_KIND:
            yield Violation(f"{path}.{field}", "probe-count", f"may not have more than {MAX_PROBES_PER_KIND} entries")
            return
    for index, http in enumerate(probe.http_get_list or []):
        yield from _http_get(http, f"{path}.httpGetList[{index}]")
    for index, tcp in enumerate(probe.tcp_socket_list or []):
        at = f"{path}.tcpSocketList[{index}]"
        yield from _task_name(tcp.task_name, at)
        yield from _port(tcp.port, at, required=True)
    for index, status in enumerate(probe.task_status_list or []):
        at = f"{path}.taskStatusList[{index}]"
        yield from _task_name(status.task_name, at)
        if len(status.phase or "") > MAX_PHASE_LENGTH:
            yield Violation(f"{at}.phase", "probe-phase", f"must be no more than {MAX_PHASE_LENGTH} characters")


def _http_get(http: HttpGet, at: str) -> Iterator[Violation]:
    yield from _task_name(http.task_name, at)
    yield from _port(http.port, at, required=False)
    if len(http.path or "") > MAX_PROBE_PATH_LENGTH:
        yield Violation(f"{at}.path", "probe-path", f"must be no more than {MAX_PROBE_PATH_LENGTH} characters")
    header = http.http_header or HttpHeader()
    if len(header.name or "") > MAX_HEADER_NAME_LENGTH or len(header.value or "") > MAX_HEADER_VALUE_LENGTH:
        limits = f"name at most {MAX_HEADER_NAME_LENGTH} and value at most {MAX_HEADER_VALUE_LENGTH} characters"
        yield Violation(f"{at}.httpHeader", "probe-header", limits)


def _task_name(name: str | None, path: str) -> Iterator[Violation]:
    if len(name or "") > MAX_TASK_NAME_LENGTH:
        message = f"must be no more than {MAX_TASK_NAME_LENGTH} characters"
        yield Violation(f"{path}.taskName", "probe-task-name", message)


def _port(port: int | None, path: str, *, required: bool) -> Iterator[Violation]:
    if port is None:
        if required:
            yield Violation(f"{path}.port", "probe-port", "a port is required")
        return
    if not 0 <= port <= MAX_PORT:
        yield Violation(f"{path}.port", "probe-port", f"must be between 0 and {MAX_PORT}, got {port}")


def _unique_names(flows: Sequence[Flow]) -> Iterator[Violation]:
    seen: set[str] = set()
    for index, item in enumerate(flows):
        if item.name and item.name in seen:
            yield Violation(f"spec.flows[{index}].name", "flow-name-unique", f"duplicated flow name {item.name}")
        seen.add(item.name or "")


def validate_dag(flows: Sequence[Flow]) -> Iterator[Violation]:
    """Every target names a flow; no flow depends on itself, directly or through others."""
    graph = {item.name or "": list((item.depends_on.targets if item.depends_on else None) or []) for item in flows}
    for index, item in enumerate(flows):
        for target in graph[item.name or ""]:
            if target not in graph:
                path = f"spec.flows[{index}].dependsOn.targets"
                yield Violation(path, "flow-target-exists", f"{NOT_DAG}: vertex is not defined: {target[:253]}")
                return
    cycle = find_cycle(graph)
    if cycle:
        yield Violation("spec.flows", "flow-dag", f"{NOT_DAG}: {' -> '.join(cycle)}")


def find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str]:
    """A dependency cycle as a path (`a -> b -> a`), or [] when the graph is acyclic. Iterative, O(V+E)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in graph:
        if state.get(root):
            continue
        path: list[str] = [root]
        stack = [iter(graph[root])]
        state[root] = 1
        while stack:
            target = next(stack[-1], None)
            if target is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if not state.get(target):
                state[target] = 1
                path.append(target)
                stack.append(iter(graph.get(target, ())))
    return []
