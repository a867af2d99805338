"""Property-based: random and mutated Jobs and Queues never crash the rules, always get a decision,
and defaulting is idempotent (a job or queue admitted once is admitted again unchanged)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.admission.admission_builders import context, queue
from vc_proto.batch import Job
from vc_proto.codec import from_dict
from vc_proto.scheduling import Queue
from vc_validation import StaticContext, Verdict, mutate_job, mutate_queue, review

PROFILE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Mostly plausible values, with enough invalid ones to reach every rule.
names = st.one_of(
    st.sampled_from(["default", "root", "t1", "t2", "master", "worker", "ps", "team-a", "leaf", "parent"]),
    st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True),
    st.text(max_size=70),
)
counts = st.one_of(st.integers(-3, 12), st.integers(-(2**40), 2**40))
events = st.sampled_from(
    [
        "*",
        "PodFailed",
        "PodEvicted",
        "PodPending",
        "Unknown",
        "TaskCompleted",
        "TaskFailed",
        "JobUpdated",
        "OutOfSync",
        "Bogus",
    ]
)
actions = st.sampled_from(
    ["AbortJob", "RestartJob", "RestartTask", "RestartPod", "TerminateJob", "CompleteJob", "SyncJob", "Nope"]
)
quantities = st.one_of(
    st.sampled_from(["1", "500m", "2Gi", "0", "-1", "1e3", "lots", "", "1.5", "3Ei"]),
    st.integers(-10, 10**6),
)
resource_lists = st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "pods"]), quantities, max_size=3)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


policies = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "event": events,
            "events": st.lists(events, max_size=3),
            "action": actions,
            "exitCode": st.integers(-2, 3),
            "timeout": st.sampled_from(["10m", "1m30s", "soon"]),
        },
    ),
    max_size=4,
)
containers = st.lists(
    st.fixed_dictionaries(
        {"name": names},
        optional={
            "image": st.just("busybox"),
            "resources": st.fixed_dictionaries({}, optional={"requests": resource_lists, "limits": resource_lists}),
        },
    ),
    max_size=3,
)
tasks = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "name": names,
            "replicas": counts,
            "minAvailable": counts,
            "maxRetry": counts,
            "policies": policies,
            "topologyPolicy": st.sampled_from(["none", "restricted", "weird"]),
            "dependsOn": st.fixed_dictionaries(
                {}, optional={"name": st.lists(names, max_size=3), "iteration": st.sampled_from(["any", "all", "x"])}
            ),
            "partitionPolicy": st.fixed_dictionaries(
                {}, optional={"totalPartitions": counts, "partitionSize": counts, "minPartitions": counts}
            ),
            "template": st.fixed_dictionaries(
                {},
                optional={
                    "spec": st.fixed_dictionaries({}, optional={"containers": containers, "hostNetwork": st.booleans()})
                },
            ),
        },
    ),
    max_size=5,
)
plugin_args = st.lists(
    st.sampled_from(["--master=t1", "--port", "22", "--port=x", "-worker", "t2", "--bogus", "--", "x" * 5]), max_size=4
)
job_specs = st.fixed_dictionaries(
    {},
    optional={
        "tasks": tasks,
        "minAvailable": counts,
        "maxRetry": counts,
        "queue": names,
        "schedulerName": optional(names),
        "policies": policies,
        "plugins": st.dictionaries(
            st.sampled_from(["env", "svc", "ssh", "mpi", "tensorflow", "pytorch", "ray", "magic"]),
            plugin_args,
            max_size=3,
        ),
        "volumes": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "mountPath": st.sampled_from(["/a", "/a", "", "x:y"]),
                    "volumeClaimName": names,
                    "volumeClaim": st.just({}),
                },
            ),
            max_size=3,
        ),
        "ttlSecondsAfterFinished": counts,
        "minSuccess": counts,
        "priorityClassName": names,
        "networkTopology": st.fixed_dictionaries(
            {},
            optional={
                "mode": st.sampled_from(["hard", "soft", "x"]),
                "highestTierAllowed": counts,
                "highestTierName": names,
            },
        ),
    },
)
jobs = st.builds(
    lambda name, namespace, spec: from_dict(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    ),
    names,
    st.sampled_from(["default", "team-a", "team-b"]),
    job_specs,
)
# Jobs built to be mostly valid, so the "admitted stays admitted" property has admitted jobs to test.
plausible_tasks = st.lists(
    st.fixed_dictionaries(
        {
            "replicas": st.integers(0, 6),
            "template": st.sampled_from(
                [
                    {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
                    {
                        "spec": {
                            "hostNetwork": True,
                            "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
                        }
                    },
                ]
            ),
        },
        optional={
            "minAvailable": st.integers(0, 2),
            "maxRetry": st.integers(-1, 5),
            "policies": st.lists(
                st.fixed_dictionaries(
                    {
                        "event": events.filter(lambda e: e not in ("OutOfSync", "Bogus")),
                        "action": actions.filter(lambda a: a not in ("SyncJob", "Nope")),
                    }
                ),
                max_size=1,
            ),
        },
    ),
    min_size=1,
    max_size=4,
)
plausible_jobs = st.builds(
    lambda task_list, spec, namespace: from_dict(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "plausible", "namespace": namespace},
            "spec": {**spec, "tasks": [{**t, "name": f"t{i}"} for i, t in enumerate(task_list)]},
        }
    ),
    plausible_tasks,
    st.fixed_dictionaries(
        {},
        optional={
            "queue": st.sampled_from(["default", "leaf", "team-a"]),
            "plugins": st.dictionaries(
                st.sampled_from(["env", "svc", "ssh", "tensorflow", "pytorch"]), st.just([]), max_size=3
            ),
            "maxRetry": st.integers(0, 5),
            "minAvailable": st.integers(0, 1),
            "policies": st.just([{"exitCode": 3, "action": "RestartJob"}]),
        },
    ),
    st.sampled_from(["default", "team-a"]),
)
queue_specs = st.fixed_dictionaries(
    {},
    optional={
        "weight": counts,
        "capability": resource_lists,
        "deserved": resource_lists,
        "guarantee": st.fixed_dictionaries({}, optional={"resource": resource_lists}),
        "parent": names,
        "reclaimable": st.booleans(),
        "priority": counts,
        "allowedNamespaces": st.lists(st.sampled_from(["team-a", "*", "Bad_NS", "default"]), max_size=3),
        "dequeueStrategy": st.sampled_from(["fifo", "traverse", "lifo"]),
    },
)
queues = st.builds(
    lambda name, spec, state, annotations: from_dict(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name, "annotations": annotations},
            "spec": spec,
            "status": {"state": state} if state else {},
        }
    ),
    names,
    queue_specs,
    st.sampled_from([None, "Open", "Closed", "Closing", "Bogus"]),
    st.dictionaries(
        st.sampled_from(["volcano.sh/hierarchy", "volcano.sh/hierarchy-weights"]),
        st.sampled_from(["a/b", "root/a", "1/2", "x/-1", "nan"]),
        max_size=2,
    ),
)
contexts = st.builds(
    lambda extra, busy: context(*extra, queue("parent"), queue("leaf", parent="parent"), busy=busy),
    st.lists(queues, max_size=5),
    st.frozensets(names, max_size=3),
)


def decided(verdict: object) -> Verdict:
    assert isinstance(verdict, Verdict)
    assert verdict.allowed == (not verdict.violations)
    for violation in verdict.violations:
        assert violation.field and violation.rule and violation.message
    return verdict


@PROFILE
@given(job=jobs, ctx=contexts)
def test_random_jobs_always_get_a_decision(job: Job, ctx: StaticContext) -> None:
    verdict = decided(review("CREATE", job, None, ctx))
    assert isinstance(verdict.patched, Job)


@PROFILE
@given(job=st.one_of(jobs, plausible_jobs))
def test_job_defaulting_is_idempotent(job: Job) -> None:
    once = mutate_job(job)
    assert mutate_job(once) == once


@PROFILE
@given(job=st.one_of(jobs, plausible_jobs), ctx=contexts)
def test_admitted_job_stays_admitted_after_defaulting(job: Job, ctx: StaticContext) -> None:
    first = decided(review("CREATE", job, None, ctx))
    if first.allowed:
        second = decided(review("CREATE", first.patched, None, ctx))
        assert second.allowed, second.violations
        assert second.patched == first.patched


@PROFILE
@given(old=jobs, new=jobs)
def test_random_job_updates_always_get_a_decision(old: Job, new: Job) -> None:
    decided(review("UPDATE", new, old, context()))
    # An unchanged job is always a valid update of itself when its counts are consistent.
    same = decided(review("UPDATE", old, old, context()))
    assert not any(v.rule in ("job-update-immutable", "job-update-tasks") for v in same.violations)


@PROFILE
@given(q=queues, ctx=contexts)
def test_random_queues_always_get_a_decision(q: Queue, ctx: StaticContext) -> None:
    created = decided(review("CREATE", q, None, ctx))
    assert isinstance(created.patched, Queue)
    decided(review("UPDATE", q, ctx.queues.get(q.metadata.name or "", queue("other")), ctx))
    deleted = decided(review("DELETE", None, q, ctx))
    assert deleted.patched is None


@PROFILE
@given(q=queues, ctx=contexts)
def test_admitted_queue_stays_admitted_after_defaulting(q: Queue, ctx: StaticContext) -> None:
    assert mutate_queue(mutate_queue(q)) == mutate_queue(q)
    first = decided(review("CREATE", q, None, ctx))
    if first.allowed:
        second = decided(review("CREATE", first.patched, None, ctx))
        assert second.allowed, second.violations
        assert second.patched == first.patched


@PROFILE
@given(
    field=st.sampled_from(["replicas", "minAvailable", "name", "maxRetry"]),
    value=st.one_of(counts, names),
    ctx=contexts,
)
def test_mutated_seed_like_job_gets_a_decision(field: str, value: Any, ctx: StaticContext) -> None:
    """Start from a valid job and break one task field at a time."""
    document: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "mutant", "namespace": "default"},
        "spec": {"tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}]},
    }
    expects_int = field != "name"
    if expects_int != isinstance(value, int):
        value = 1 if expects_int else "worker"
    document["spec"]["tasks"][0][field] = value
    decided(review("CREATE", from_dict(document), None, ctx))


def test_cyclic_stored_queues_do_not_hang() -> None:
    looped = context(queue("a", parent="b"), queue("b", parent="a"))
    decided(review("CREATE", queue("c", parent="a", capability={"cpu": "1"}), None, looped))
    decided(review("UPDATE", queue("a", parent="b", capability={"cpu": "2"}), looped.queues["a"], looped))
