"""Job CREATE, ported from Volcano's `jobs/validate/admit_job_test.go` (TestValidateJobCreate,
TestValidateHierarchyCreate, TestValidateTaskTopoPolicy) plus Tephra's own rules. Each case runs the
full `review` (defaulting, then validation) and asserts the decision, the field, the rule and the text."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from tests.unit.admission.admission_builders import container, context, job, only, policy, queue, task, template
from vc_proto.batch import DependsOn, NetworkTopologySpec, PartitionPolicySpec, VolumeSpec
from vc_proto.core import PodSpec, PodTemplateSpec
from vc_validation import review

TIER = NetworkTopologySpec(highest_tier_allowed=1, highest_tier_name="tier-1")


class Expect(NamedTuple):
    field: str
    rule: str
    message: str


CASES = [
    # ---- Volcano TestValidateJobCreate ----
    pytest.param(job("simple-valid-job", min_available=1), None, id="simple-valid-job"),
    pytest.param(
        job(
            "simple-valid-job-with-policy",
            task(policies=[policy("RestartTask", event="PodFailed")]),
            policies=[policy("RestartJob", event="PodEvicted")],
        ),
        None,
        id="simple-valid-job-with-policy",
    ),
    pytest.param(
        job("valid-job-with-resources", task(template=template(container(requests={"cpu": "1"}, limits={"cpu": "2"})))),
        None,
        id="valid-job-with-resources",
    ),
    pytest.param(
        job("duplicate-task-job", task("duplicated-task-1"), task("duplicated-task-1")),
        Expect("spec.tasks[1].name", "task-name-unique", "duplicated task name duplicated-task-1"),
        id="duplicate-task-job",
    ),
    pytest.param(
        job(
            "job-policy-duplicated",
            policies=[policy("RestartJob", event="PodFailed"), policy("AbortJob", event="PodFailed")],
        ),
        Expect("spec.policies[1].events", "policy-duplicate-event", "duplicate event PodFailed"),
        id="job-policy-duplicated",
    ),
    pytest.param(
        job("job-min-illegal", min_available=2),
        Expect(
            "spec.minAvailable",
            "job-min-available",
            "job 'minAvailable' should not be greater than total replicas in tasks",
        ),
        id="min-available-illegal",
    ),
    pytest.param(
        job("job-plugin-illegal", plugins={"big_plugin": []}),
        Expect("spec.plugins.big_plugin", "plugin-known", "unable to find job plugin: big_plugin"),
        id="job-plugin-illegal",
    ),
    pytest.param(
        job("no-task", tasks=[]), Expect("spec.tasks", "tasks-required", "No task specified in job spec"), id="no-task"
    ),
    pytest.param(
        job("replica-less-than-zero", task(replicas=-1), min_available=1),
        Expect(
            "spec.minAvailable", "job-min-available", "job 'minAvailable' should not be greater than total replicas"
        ),
        id="replica-less-than-zero",
    ),
    pytest.param(
        job("job-policy-with-exit-code", policies=[policy("AbortJob", event="PodFailed", exit_code=-1)]),
        Expect("spec.policies[0]", "policy-event-xor-exitcode", "must not specify event and exitCode simultaneously"),
        id="job-policy-with-event-and-exit-code",
    ),
    pytest.param(
        job("policy-no-event-no-exit-code", policies=[policy("AbortJob")]),
        Expect("spec.policies[0]", "policy-event-xor-exitcode", "either event and exitCode should be specified"),
        id="policy-no-event-no-exit-code",
    ),
    pytest.param(
        job("invalid-policy-event", policies=[policy("AbortJob", event="someFakeEvent")]),
        Expect("spec.policies[0].events", "policy-event", "invalid policy event"),
        id="invalid-policy-event",
    ),
    pytest.param(
        job("invalid-policy-action", policies=[policy("someFakeAction", event="PodEvicted")]),
        Expect("spec.policies[0].action", "policy-action", "invalid policy action"),
        id="invalid-policy-action",
    ),
    pytest.param(
        job("policy-exit-code-zero", policies=[policy("AbortJob", exit_code=0)]),
        Expect("spec.policies[0].exitCode", "policy-exit-code", "0 is not a valid error code"),
        id="policy-exit-code-zero",
    ),
    pytest.param(
        job("duplicate-exit-code", policies=[policy("AbortJob", exit_code=1), policy("RestartJob", exit_code=1)]),
        Expect("spec.policies[1].exitCode", "policy-duplicate-exit-code", "duplicate exitCode 1"),
        id="duplicate-exit-code",
    ),
    pytest.param(
        job(
            "job-policy-any-and-other",
            policies=[policy("AbortJob", event="*"), policy("RestartJob", event="PodFailed")],
        ),
        Expect("spec.policies", "policy-any-alone", "if there's * here, no other policy should be here"),
        id="job-policy-any-with-other-event",
    ),
    pytest.param(
        job("invalid-mount-volume", volumes=[VolumeSpec(volume_claim_name="pvc")]),
        Expect("spec.volumes[0].mountPath", "volume-mount-path", "mountPath is required"),
        id="invalid-mount-volume",
    ),
    pytest.param(
        job(
            "duplicate-mount-volume",
            volumes=[
                VolumeSpec(mount_path="/var", volume_claim_name="a"),
                VolumeSpec(mount_path="/var", volume_claim_name="b"),
            ],
        ),
        Expect("spec.volumes[1].mountPath", "volume-duplicate-mount-path", "duplicated mountPath: /var"),
        id="duplicate-mount-volume",
    ),
    pytest.param(
        job("invalid-volume", volumes=[VolumeSpec(mount_path="/var")]),
        Expect("spec.volumes[0]", "volume-claim", "either VolumeClaim or VolumeClaimName must be specified"),
        id="volume-without-claim-or-claim-name",
    ),
    pytest.param(
        job(
            "task-policy-any-and-other",
            task(policies=[policy("AbortJob", event="*"), policy("RestartJob", event="PodFailed")]),
        ),
        Expect("spec.tasks[0].policies", "policy-any-alone", "if there's * here, no other policy should be here"),
        id="task-policy-any-with-other-event",
    ),
    pytest.param(
        job("job-with-no-queue", queue="jobqueue"),
        Expect("spec.queue", "queue-exists", "unable to find job queue"),
        id="job-with-missing-queue",
    ),
    pytest.param(
        job(
            "valid-job-init",
            task(template=PodTemplateSpec(spec=PodSpec(containers=[container()], init_containers=[container("init")]))),
        ),
        None,
        id="job-with-init-container",
    ),
    pytest.param(
        job("job-with-valid-depends-on", task("t1"), task("t2", depends_on=DependsOn(name=["t1"]))),
        None,
        id="valid-task-depends-on",
    ),
    pytest.param(
        job(
            "job-with-invalid-depends-on",
            task("t1", depends_on=DependsOn(name=["t2"])),
            task("t2", depends_on=DependsOn(name=["t1"])),
        ),
        Expect(
            "spec.tasks",
            "depends-on-dag",
            "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)",
        ),
        id="invalid-task-depends-on-cycle",
    ),
    pytest.param(
        job(
            "partition-size-lt-zero",
            task(replicas=8, partition_policy=PartitionPolicySpec(partition_size=-1, total_partitions=8)),
        ),
        Expect(
            "spec.tasks[0].partitionPolicy.partitionSize",
            "partition-policy",
            "'PartitionSize' must be greater than 0 in task: task-1, job: partition-size-lt-zero",
        ),
        id="partition-size-less-than-zero",
    ),
    pytest.param(
        job(
            "total-partitions-lt-zero",
            task(replicas=8, partition_policy=PartitionPolicySpec(partition_size=1, total_partitions=-1)),
        ),
        Expect(
            "spec.tasks[0].partitionPolicy.totalPartitions",
            "partition-policy",
            "'TotalPartitions' must be greater than 0 in task: task-1, job: total-partitions-lt-zero",
        ),
        id="total-partitions-less-than-zero",
    ),
    pytest.param(
        job(
            "invalid-partition-policy",
            task(replicas=8, partition_policy=PartitionPolicySpec(partition_size=2, total_partitions=2)),
        ),
        Expect(
            "spec.tasks[0].partitionPolicy",
            "partition-policy",
            "'Replicas' are not equal to TotalPartitions*PartitionSize in task: task-1, job: invalid-partition-policy",
        ),
        id="replicas-not-partitions-times-size",
    ),
    pytest.param(
        job(
            "valid-partition-policy",
            task(replicas=8, partition_policy=PartitionPolicySpec(partition_size=4, total_partitions=2)),
        ),
        None,
        id="valid-partition-policy",
    ),
    pytest.param(
        job(
            "valid-topology-and-partition",
            task(
                replicas=8,
                partition_policy=PartitionPolicySpec(
                    partition_size=4,
                    total_partitions=2,
                    network_topology=NetworkTopologySpec(mode="hard", highest_tier_allowed=1),
                ),
            ),
            network_topology=NetworkTopologySpec(mode="hard", highest_tier_allowed=2),
        ),
        None,
        id="valid-network-topology-and-partition-policy",
    ),
    pytest.param(
        job("invalid-job-topology", network_topology=TIER),
        Expect(
            "spec.networkTopology",
            "network-topology",
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously",
        ),
        id="job-with-invalid-network-topology",
    ),
    pytest.param(
        job(
            "invalid-partition-topology",
            task(
                replicas=8,
                partition_policy=PartitionPolicySpec(partition_size=4, total_partitions=2, network_topology=TIER),
            ),
        ),
        Expect(
            "spec.tasks[0].partitionPolicy.networkTopology",
            "network-topology",
            "must not specify 'highestTierAllowed' and 'highestTierName'",
        ),
        id="task-with-invalid-partition-network-topology",
    ),
    pytest.param(
        job(
            "valid-min-partitions",
            task(
                replicas=8, partition_policy=PartitionPolicySpec(partition_size=4, total_partitions=2, min_partitions=1)
            ),
            min_available=1,
        ),
        None,
        id="valid-partition-policy-min-partitions",
    ),
    pytest.param(
        job(
            "invalid-min-partitions",
            task(
                replicas=8,
                min_available=1,
                partition_policy=PartitionPolicySpec(partition_size=2, total_partitions=4, min_partitions=1),
            ),
            min_available=1,
        ),
        Expect(
            "spec.tasks[0].partitionPolicy",
            "partition-policy",
            "'MinAvailable' is not equal to MinPartitions*PartitionSize in task: task-1, job: invalid-min-partitions",
        ),
        id="partition-min-partitions-not-equal",
    ),
    pytest.param(
        job(
            "equal-min-partitions",
            task(
                replicas=8,
                min_available=2,
                partition_policy=PartitionPolicySpec(partition_size=2, total_partitions=4, min_partitions=1),
            ),
            min_available=1,
        ),
        None,
        id="partition-min-partitions-equal",
    ),
    pytest.param(
        job(
            "omitted-min-partitions",
            task(
                replicas=8, min_available=8, partition_policy=PartitionPolicySpec(partition_size=2, total_partitions=4)
            ),
        ),
        None,
        id="partition-min-partitions-omitted",
    ),
    pytest.param(
        job("mpi-valid-master", task("launcher"), task("worker", replicas=2), plugins={"mpi": ["--master=launcher"]}),
        None,
        id="mpi-plugin-valid-master",
    ),
    pytest.param(
        job("mpi-valid-master-only", task("launcher"), plugins={"mpi": ["--master=launcher"]}),
        None,
        id="mpi-plugin-valid-master-without-worker",
    ),
    pytest.param(
        job("mpi-invalid-master", task("worker", replicas=2), plugins={"mpi": ["--master=launcher"]}),
        Expect("spec.plugins.mpi", "mpi-master", "The specified mpi master task was not found"),
        id="mpi-plugin-invalid-master",
    ),
    pytest.param(
        job("mpi-default-master", task("master"), task("worker", replicas=2), plugins={"mpi": []}),
        None,
        id="mpi-plugin-default-master-name",
    ),
    pytest.param(
        job("request-over-limit", task(template=template(container(requests={"cpu": "6"}, limits={"cpu": "4"})))),
        Expect(
            "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
            "request-exceeds-limit",
            "must be less than or equal to cpu limit",
        ),
        id="resource-requests-greater-than-limits",
    ),
    # ---- Volcano TestValidateHierarchyCreate ----
    pytest.param(
        job("job-with-root-queue", queue="root"),
        Expect("spec.queue", "queue-leaf", "can not submit job to root queue"),
        id="job-with-root-queue",
    ),
    pytest.param(
        job("job-with-parent-queue", queue="parentqueue"),
        Expect("spec.queue", "queue-leaf", "can only submit job to leaf queue, queue `parentqueue` has 1 child queues"),
        id="job-with-parent-queue",
    ),
    pytest.param(job("job-with-leaf-queue", queue="childqueue"), None, id="job-with-leaf-queue"),
    pytest.param(
        job("job-with-closed-queue", queue="closedqueue"),
        Expect(
            "spec.queue",
            "queue-open",
            "can only submit job to queue with state `Open`, queue `closedqueue` status is `Closed`",
        ),
        id="job-with-closed-queue",
    ),
    pytest.param(
        job("job-with-closing-queue", queue="closingqueue"),
        Expect("spec.queue", "queue-open", "status is `Closing`"),
        id="job-with-closing-queue",
    ),
    pytest.param(job("job-with-new-queue", queue="unreconciled"), None, id="queue-without-state-counts-as-open"),
    # ---- Volcano TestValidateTaskTopoPolicy ----
    pytest.param(
        job(
            "topo-integer",
            task(topology_policy="restricted", template=template(container(limits={"cpu": "1", "memory": "2000"}))),
        ),
        None,
        id="topology-policy-integer-cpu",
    ),
    pytest.param(
        job("topo-fraction", task(topology_policy="restricted", template=template(container(limits={"cpu": "500m"})))),
        Expect("spec.tasks[0].template", "topology-integer-cpu", "the cpu request isn't an integer"),
        id="topology-policy-fractional-cpu",
    ),
    pytest.param(
        job("topo-unknown", task(topology_policy="numa-magic")),
        Expect("spec.tasks[0].topologyPolicy", "topology-policy", "must be one of"),
        id="topology-policy-unknown",
    ),
    # ---- Volcano's CEL policy (jobs-validating.yaml) and CRD schema ----
    pytest.param(
        job("bad-task-name", task("Task_1")),
        Expect(
            "spec.tasks[0].name",
            "task-name",
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters",
        ),
        id="task-name-not-dns1123",
    ),
    pytest.param(
        job("negative-replicas", task(replicas=-1)),
        Expect("spec.tasks[0].replicas", "replicas-non-negative", "'replicas' must be >= 0 in task: task-1"),
        id="task-replicas-negative",
    ),
    pytest.param(
        job("task-min-over-replicas", task(replicas=2, min_available=3)),
        Expect(
            "spec.tasks[0].minAvailable",
            "task-min-available",
            "'minAvailable' is greater than 'replicas' in task: task-1, job: task-min-over-replicas",
        ),
        id="task-min-available-greater-than-replicas",
    ),
    pytest.param(
        job("task-min-negative", task(replicas=2, min_available=-1)),
        Expect(
            "spec.tasks[0].minAvailable", "min-available-non-negative", "'minAvailable' must be >= 0 in task: task-1"
        ),
        id="task-min-available-negative",
    ),
    pytest.param(
        job("job-min-negative", min_available=-1),
        Expect("spec.minAvailable", "min-available-non-negative", "job 'minAvailable' must be >= 0"),
        id="job-min-available-negative",
    ),
    pytest.param(
        job("negative-max-retry", max_retry=-1),
        Expect("spec.maxRetry", "max-retry", "'maxRetry' cannot be less than zero"),
        id="job-max-retry-negative",
    ),
    pytest.param(
        job("negative-ttl", ttl_seconds_after_finished=-5),
        Expect("spec.ttlSecondsAfterFinished", "ttl", "'ttlSecondsAfterFinished' cannot be less than zero"),
        id="ttl-negative",
    ),
    pytest.param(
        job("zero-min-success", min_success=0),
        Expect("spec.minSuccess", "min-success", "'minSuccess' must be >= 1"),
        id="min-success-zero",
    ),
    pytest.param(
        job("Bad_Job"),
        Expect("metadata.name", "job-name", "create job with name Bad_Job validate failed"),
        id="job-name-not-dns",
    ),
    pytest.param(
        job(
            "claim-conflict",
            volumes=[VolumeSpec(mount_path="/data", volume_claim_name="pvc", volume_claim={"storageClassName": "x"})],
        ),
        Expect("spec.volumes[0]", "volume-claim", "conflict: If you want to use an existing PVC"),
        id="volume-claim-and-claim-name",
    ),
    pytest.param(
        job("bad-claim-name", volumes=[VolumeSpec(mount_path="/data", volume_claim_name="Bad_PVC")]),
        Expect("spec.volumes[0].volumeClaimName", "volume-claim-name", "invalid VolumeClaimName Bad_PVC"),
        id="volume-claim-name-invalid",
    ),
    pytest.param(
        job("bad-claim-spec", volumes=[VolumeSpec(mount_path="/data", volume_claim={"accessModes": "ReadWriteOnce"})]),
        Expect(
            "spec.volumes[0].volumeClaim",
            "volume-claim-spec",
            "not a PersistentVolumeClaimSpec: Expected `array | null`, got `str` - at `$.accessModes`",
        ),
        id="volume-claim-spec-malformed",
    ),
    pytest.param(
        job("colon-mount", volumes=[VolumeSpec(mount_path="/a:b", volume_claim_name="pvc")]),
        Expect("spec.volumes[0].mountPath", "volume-mount-path", "must not contain ':'"),
        id="volume-mount-path-with-colon",
    ),
    pytest.param(
        job("valid-volume", volumes=[VolumeSpec(mount_path="/data", volume_claim={"storageClassName": "x"})]),
        None,
        id="volume-with-claim-template",
    ),
    # ---- Tephra's own rules ----
    pytest.param(
        job("unknown-dependency", task("t1", depends_on=DependsOn(name=["ghost"]))),
        Expect("spec.tasks[0].dependsOn.name[0]", "depends-on-task", "task 'ghost' does not exist in the job"),
        id="depends-on-unknown-task",
    ),
    pytest.param(
        job("self-dependency", task("t1", depends_on=DependsOn(name=["t1"]))),
        Expect("spec.tasks", "depends-on-dag", "directed acyclic graph"),
        id="depends-on-itself",
    ),
    pytest.param(
        job("bad-iteration", task("t1"), task("t2", depends_on=DependsOn(name=["t1"], iteration="some"))),
        Expect("spec.tasks[1].dependsOn.iteration", "depends-on-iteration", "iteration must be one of [any all]"),
        id="depends-on-bad-iteration",
    ),
    pytest.param(
        job("bad-plugin-flag", plugins={"svc": ["--no-such-flag"]}),
        Expect("spec.plugins.svc", "plugin-args", "flag provided but not defined: -no-such-flag"),
        id="plugin-unknown-flag",
    ),
    pytest.param(
        job("bad-plugin-int", plugins={"ssh": ["--ssh-port=abc"]}),
        Expect("spec.plugins.ssh", "plugin-args", "invalid value 'abc' for flag -ssh-port"),
        id="plugin-int-flag-not-a-number",
    ),
    pytest.param(
        job(
            "good-plugin-args", plugins={"ssh": ["--ssh-port", "2222"], "svc": ["--disable-network-policy"], "env": []}
        ),
        None,
        id="plugin-args-parse",
    ),
    pytest.param(
        job("no-containers", task(template=None)),
        Expect("spec.tasks[0].template.spec.containers", "template-containers", "at least one container"),
        id="template-without-containers",
    ),
    pytest.param(
        job("dup-containers", task(template=template(container("a"), container("a")))),
        Expect("spec.tasks[0].template.spec.containers[1].name", "container-name-unique", "Duplicate value"),
        id="duplicate-container-names",
    ),
    pytest.param(
        job("bad-quantity", task(template=template(container(requests={"cpu": "lots"})))),
        Expect("spec.tasks[0].template.spec.containers[0].resources.requests[cpu]", "quantity", "is not a quantity"),
        id="container-quantity-unparsable",
    ),
    pytest.param(
        job(
            "bad-restart",
            task(template=PodTemplateSpec(spec=PodSpec(containers=[container()], restart_policy="Sometimes"))),
        ),
        Expect("spec.tasks[0].template.spec.restartPolicy", "restart-policy", 'Unsupported value: "Sometimes"'),
        id="restart-policy-unknown",
    ),
    pytest.param(
        job(
            "ok-restart",
            task(template=PodTemplateSpec(spec=PodSpec(containers=[container()], restart_policy="OnFailure"))),
        ),
        None,
        id="restart-policy-on-failure",
    ),
    pytest.param(
        job("bad-timeout", policies=[policy("RestartJob", event="PodPending", timeout="ten minutes")]),
        Expect("spec.policies[0].timeout", "policy-timeout", "invalid duration"),
        id="policy-timeout-not-a-duration",
    ),
    pytest.param(
        job("good-timeout", policies=[policy("RestartJob", event="PodPending", timeout="1m30s")]),
        None,
        id="policy-timeout-go-duration",
    ),
    pytest.param(
        job("internal-action", policies=[policy("SyncJob", event="PodFailed")]),
        Expect("spec.policies[0].action", "policy-action", "invalid policy action 'SyncJob'"),
        id="policy-internal-action-refused",
    ),
    pytest.param(
        job("internal-event", policies=[policy("RestartJob", event="OutOfSync")]),
        Expect("spec.policies[0].events", "policy-event", "invalid policy event 'OutOfSync'"),
        id="policy-internal-event-refused",
    ),
    pytest.param(
        job("bad-priority-class", priority_class_name="High_Priority"),
        Expect("spec.priorityClassName", "priorityClassName-format", "RFC 1123 subdomain"),
        id="priority-class-name-invalid",
    ),
    pytest.param(
        job("a" * 50, task("b" * 20)),
        Expect("spec.tasks[0].name", "pod-name", "create pod with name"),
        id="pod-name-too-long",
    ),
    pytest.param(
        job("bad-mode", network_topology=NetworkTopologySpec(mode="medium")),
        Expect("spec.networkTopology.mode", "network-topology-mode", "must be one of [hard soft]"),
        id="network-topology-mode-unknown",
    ),
]


QUEUES = (
    queue("parentqueue"),
    queue("childqueue", parent="parentqueue"),
    queue("closedqueue", state="Closed"),
    queue("closingqueue", state="Closing"),
    queue("unreconciled", state=None),
)


@pytest.mark.parametrize(("submitted", "expected"), CASES)
def test_job_create(submitted: object, expected: Expect | None) -> None:
    verdict = review("CREATE", submitted, None, context(*QUEUES))
    if expected is None:
        assert verdict.allowed, verdict.violations
        assert verdict.violations == ()
        return
    assert not verdict.allowed
    found = only(verdict, expected.rule)
    assert found.field == expected.field
    assert expected.message in found.message
    assert expected.message in verdict.message


def test_no_task_is_reported_alone() -> None:
    verdict = review("CREATE", job("no-task", tasks=[], queue="missing", min_available=-3), None, context())
    assert [v.rule for v in verdict.violations] == ["tasks-required"]


def test_every_violation_is_reported_at_once() -> None:
    submitted = job(
        "many-problems",
        task("t1", replicas=-1),
        task("t1"),
        queue="missing",
        plugins={"nope": []},
        policies=[policy("AbortJob", exit_code=0)],
    )
    verdict = review("CREATE", submitted, None, context())
    assert {"replicas-non-negative", "task-name-unique", "queue-exists", "plugin-known", "policy-exit-code"} <= {
        v.rule for v in verdict.violations
    }
