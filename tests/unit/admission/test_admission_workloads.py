"""Admission of JobFlows, JobTemplates and CronJobs: Volcano's examples pass unchanged (the CronJob with
the defaults its CRD applies); each broken rule is refused naming its field and rule, nothing else."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from vc_proto import codec
from vc_proto.cronjob import CronJob
from vc_proto.flow import JobFlow, JobTemplate
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec
from vc_validation import StaticContext, review
from vc_validation.jobflows import find_cycle

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "volcano"
CTX = StaticContext()


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]


def first(name: str) -> dict[str, Any]:
    return copy.deepcopy(documents(name)[0])


def violations(document: dict[str, Any], ctx: StaticContext = CTX) -> list[tuple[str, str]]:
    verdict = review("CREATE", codec.from_dict(document), None, ctx)
    return [(v.field, v.rule) for v in verdict.violations]


# -- Volcano's examples --------------------------------------------------------------------------------
@pytest.mark.parametrize("document", documents("jobflow-JobTemplate.yaml"), ids=lambda d: d["metadata"]["name"])
def test_volcanos_job_templates_are_accepted_unchanged(document: dict[str, Any]) -> None:
    verdict = review("CREATE", codec.from_dict(document), None, CTX)
    assert verdict.allowed, verdict.message
    assert isinstance(verdict.patched, JobTemplate) and codec.to_dict(verdict.patched) == document


def test_volcanos_job_flow_is_accepted_unchanged() -> None:
    (document,) = documents("jobflow-JobFlow.yaml")
    verdict = review("CREATE", codec.from_dict(document), None, CTX)
    assert verdict.allowed, verdict.message
    assert isinstance(verdict.patched, JobFlow) and codec.to_dict(verdict.patched) == document


def test_volcanos_cronjob_is_accepted_with_its_crd_defaults() -> None:
    document = first("cronjob.yaml")
    verdict = review("CREATE", codec.from_dict(document), None, CTX)
    assert verdict.allowed, verdict.message
    assert isinstance(verdict.patched, CronJob)
    spec = codec.to_dict(verdict.patched)["spec"]
    # What the example sets stays; what it leaves out gets the CRD's defaults.
    assert (spec["concurrencyPolicy"], spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (
        "Forbid",
        5,
        3,
    )
    assert spec["suspend"] is False and spec["startingDeadlineSeconds"] == 60
    assert spec["jobTemplate"] == document["spec"]["jobTemplate"]


def test_cronjob_defaults_fill_only_what_is_missing() -> None:
    document = first("cronjob.yaml")
    for key in ("concurrencyPolicy", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        del document["spec"][key]
    patched = review("CREATE", codec.from_dict(document), None, CTX).patched
    spec = codec.to_dict(patched)["spec"]
    assert (spec["concurrencyPolicy"], spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (
        "Allow",
        3,
        1,
    )


# -- JobFlow rules -------------------------------------------------------------------------------------
def flow(*flows: dict[str, Any], name: str = "test", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": name},
        "spec": {"flows": list(flows), **spec},
    }


def dep(name: str, *targets: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "dependsOn": {"targets": list(targets), **extra}}


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            flow({"name": "a"}, dep("b", "x")),
            [("spec.flows[1].dependsOn.targets", "flow-target-exists")],
            id="target-not-a-flow",
        ),
        pytest.param(flow(dep("a", "a")), [("spec.flows", "flow-dag")], id="self-dependency"),
        pytest.param(flow(dep("a", "c"), dep("b", "a"), dep("c", "b")), [("spec.flows", "flow-dag")], id="cycle"),
        pytest.param(flow({"name": "a"}, {"name": "a"}), [("spec.flows[1].name", "flow-name-unique")], id="duplicate"),
        pytest.param(flow({"name": ""}), [("spec.flows[0].name", "flow-name")], id="empty-name"),
        pytest.param(flow({"name": "Not_A_Name"}), [("spec.flows[0].name", "flow-name")], id="bad-name"),
        pytest.param(flow({"name": "t" * 60}), [("spec.flows[0].name", "flow-job-name")], id="job-name-too-long"),
        pytest.param(
            flow({"name": "a"}, jobRetainPolicy="keep"),
            [("spec.jobRetainPolicy", "job-retain-policy")],
            id="retain-policy",
        ),
        pytest.param(flow(*({"name": f"f{i}"} for i in range(129))), [("spec.flows", "flows-count")], id="too-many"),
        pytest.param(
            flow({"name": "a"}, dep("b", "a", probe={"tcpSocketList": [{"taskName": "t"}]})),
            [("spec.flows[1].dependsOn.probe.tcpSocketList[0].port", "probe-port")],
            id="tcp-port-required",
        ),
        pytest.param(
            flow({"name": "a"}, dep("b", "a", probe={"httpGetList": [{"port": 70000}]})),
            [("spec.flows[1].dependsOn.probe.httpGetList[0].port", "probe-port")],
            id="port-range",
        ),
        pytest.param(
            flow({"name": "a"}, dep("b", "a", probe={"taskStatusList": [{"phase": "P" * 64}]})),
            [("spec.flows[1].dependsOn.probe.taskStatusList[0].phase", "probe-phase")],
            id="phase-length",
        ),
        pytest.param(
            flow({"name": "a"}, dep("b", "a", probe={"tcpSocketList": [{"port": 1}] * 65})),
            [("spec.flows[1].dependsOn.probe.tcpSocketList", "probe-count")],
            id="probe-count",
        ),
        pytest.param(
            flow({"name": "a"}, name="Bad"),
            [("metadata.name", "jobflow-name"), ("spec.flows[0].name", "flow-job-name")],
            id="flow-object-name",
        ),
    ],
)
def test_jobflow_rules(document: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert violations(document) == expected


def test_a_well_formed_probe_and_diamond_are_accepted() -> None:
    probe = {
        "httpGetList": [{"taskName": "t", "path": "/ready", "port": 8080, "httpHeader": {"name": "a", "value": "b"}}],
        "tcpSocketList": [{"taskName": "t", "port": 0}],
        "taskStatusList": [{"taskName": "t", "phase": "Running"}],
    }
    document = flow(
        {"name": "a"}, dep("b", "a", probe=probe), dep("c", "a"), dep("d", "b", "c"), jobRetainPolicy="retain"
    )
    assert violations(document) == []


def test_find_cycle_names_the_loop() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": [], "b": ["a"], "c": ["a", "b"]}) == []
    long_chain = {str(i): [str(i + 1)] for i in range(5000)} | {"5000": []}
    assert find_cycle(long_chain) == []  # iterative: no recursion limit


# -- JobTemplate rules ---------------------------------------------------------------------------------
def test_a_template_is_judged_as_the_vcjob_it_will_become() -> None:
    document = first("jobflow-JobTemplate.yaml")
    document["spec"]["tasks"][0]["replicas"] = -1
    document["spec"]["minAvailable"] = 5
    found = violations(document)
    assert ("spec.tasks[0].replicas", "replicas-non-negative") in found
    assert ("spec.minAvailable", "job-min-available") in found


def test_a_template_without_tasks_or_with_an_unusable_name_is_refused() -> None:
    document = first("jobflow-JobTemplate.yaml")
    document["spec"].pop("tasks")
    document["metadata"]["name"] = "x" * 64
    assert violations(document) == [("metadata.name", "jobtemplate-name"), ("spec.tasks", "tasks-required")]


def test_a_template_may_not_name_a_queue_its_namespace_may_not_use() -> None:
    queue = Queue(
        api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="default"), spec=QueueSpec(allowed_namespaces=["ops"])
    )
    document = first("jobflow-JobTemplate.yaml")
    assert violations(document, StaticContext(queues={"default": queue})) == [("spec.queue", "queue-namespace-allowed")]


# -- CronJob rules -------------------------------------------------------------------------------------
def cron(**spec: Any) -> dict[str, Any]:
    document = first("cronjob.yaml")
    document["spec"].update(spec)
    return document


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(cron(schedule=""), [("spec.schedule", "schedule-required")], id="schedule-empty"),
        pytest.param(
            cron(schedule="TZ=UTC */5 * * * *"), [("spec.schedule", "schedule-time-zone")], id="tz-in-schedule"
        ),
        pytest.param(cron(schedule="*/5 * * *"), [("spec.schedule", "schedule")], id="four-fields"),
        pytest.param(cron(schedule="61 * * * *"), [("spec.schedule", "schedule")], id="minute-61"),
        pytest.param(cron(timeZone=""), [("spec.timeZone", "time-zone")], id="zone-empty"),
        pytest.param(cron(timeZone="Local"), [("spec.timeZone", "time-zone")], id="zone-local"),
        pytest.param(cron(timeZone="Mars/Olympus"), [("spec.timeZone", "time-zone")], id="zone-unknown"),
        pytest.param(cron(timeZone="../etc/passwd"), [("spec.timeZone", "time-zone")], id="zone-path"),
        pytest.param(
            cron(concurrencyPolicy="Sometimes"), [("spec.concurrencyPolicy", "concurrency-policy")], id="policy"
        ),
        pytest.param(
            cron(startingDeadlineSeconds=-1), [("spec.startingDeadlineSeconds", "starting-deadline")], id="deadline"
        ),
        pytest.param(
            cron(successfulJobsHistoryLimit=-1),
            [("spec.successfulJobsHistoryLimit", "history-limit")],
            id="successful-limit",
        ),
        pytest.param(
            cron(failedJobsHistoryLimit=-2), [("spec.failedJobsHistoryLimit", "history-limit")], id="failed-limit"
        ),
        pytest.param(
            cron(jobTemplate={"spec": {}}), [("spec.jobTemplate.spec.tasks", "tasks-required")], id="no-tasks"
        ),
        pytest.param(cron(jobTemplate={}), [("spec.jobTemplate.spec", "job-spec-required")], id="no-job-spec"),
    ],
)
def test_cronjob_rules(document: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert violations(document) == expected


def test_cronjob_name_leaves_room_for_the_job_suffix() -> None:
    document = cron()
    document["metadata"]["name"] = "c" * 53
    assert violations(document) == [("metadata.name", "cronjob-name")]
    document["metadata"]["name"] = "c" * 52
    assert violations(document) == []


def test_cronjob_template_rules_name_the_template_path() -> None:
    document = cron()
    document["spec"]["jobTemplate"]["spec"]["tasks"][0]["replicas"] = 100_001
    assert ("spec.jobTemplate.spec.tasks[0].replicas", "replicas-limit") in violations(document)


def test_a_valid_time_zone_is_accepted() -> None:
    assert violations(cron(timeZone="Asia/Shanghai")) == []


def test_updates_are_judged_like_creates_and_deletes_always_pass() -> None:
    bad = codec.from_dict(cron(schedule="nope"))
    assert not review("UPDATE", bad, bad, CTX).allowed
    assert review("DELETE", None, bad, CTX).allowed


# -- the kube backend's webhook routes ---------------------------------------------------------------------
def admission_review(path: str, document: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    from vc_admission.webhook import handle_review

    body = {"request": {"uid": "u-1", "operation": operation, "namespace": "default", "object": document}}
    return handle_review(path, json.dumps(body).encode(), CTX)["response"]


def test_the_cronjob_webhook_defaults_what_volcanos_crd_would() -> None:
    document = first("cronjob.yaml")
    document["spec"].pop("successfulJobsHistoryLimit")
    response = admission_review("/cronjobs/mutate", document)
    patch = json.loads(base64.b64decode(response["patch"]))
    assert response["allowed"] and {op["path"]: op["value"] for op in patch} == {
        "/spec/suspend": False,
        "/spec/successfulJobsHistoryLimit": 3,
    }


def test_the_jobflow_webhook_refuses_a_cycle_and_the_template_webhook_a_bad_spec() -> None:
    flow = first("jobflow-JobFlow.yaml")
    flow["spec"]["flows"][0]["dependsOn"] = {"targets": ["e"]}
    refused = admission_review("/jobflows/validate", flow)
    assert not refused["allowed"] and "jobflow Flow is not DAG" in refused["status"]["message"]
    template = first("jobflow-JobTemplate.yaml")
    template["spec"]["tasks"][0]["replicas"] = -1
    bad = admission_review("/jobtemplates/validate", template, operation="UPDATE")
    assert not bad["allowed"] and "spec.tasks[0].replicas" in bad["status"]["message"]
    assert admission_review("/jobflows/validate", first("jobflow-JobFlow.yaml"))["allowed"]
    assert admission_review("/cronjobs/validate", first("cronjob.yaml"))["allowed"]
