"""The building blocks on their own: lifecycle policies (Volcano `validatePolicies`), the dependsOn DAG
(Volcano TestTopoSort), plugin arguments (Go `flag` semantics) and Kubernetes name formats."""

from __future__ import annotations

import pytest

from tests.unit.admission.admission_builders import policy, rules, task
from vc_proto.batch import DependsOn, LifecyclePolicy
from vc_validation.dependencies import has_cycle
from vc_validation.names import dns1123_label_errors, dns1123_subdomain_errors, qualified_name_errors
from vc_validation.plugins import PLUGIN_FLAGS, FlagError, parse_flags, with_dependencies
from vc_validation.policies import validate_policies

POLICY_CASES = [
    pytest.param([policy(event="PodFailed")], set(), id="single-event"),
    pytest.param([policy(events=["PodFailed", "PodEvicted"])], set(), id="event-list"),
    pytest.param(
        [policy(event="PodFailed", events=["PodFailed"])], set(), id="event-repeated-in-event-and-events-is-one"
    ),
    pytest.param([policy(exit_code=137), policy(exit_code=1)], set(), id="distinct-exit-codes"),
    pytest.param([policy(event="*")], set(), id="any-event-alone"),
    pytest.param([policy(event="PodFailed", exit_code=1)], {"policy-event-xor-exitcode"}, id="event-and-exit-code"),
    pytest.param([policy()], {"policy-event-xor-exitcode"}, id="neither-event-nor-exit-code"),
    pytest.param([policy(exit_code=0)], {"policy-exit-code"}, id="exit-code-zero"),
    pytest.param([policy(exit_code=3), policy(exit_code=3)], {"policy-duplicate-exit-code"}, id="duplicate-exit-code"),
    pytest.param(
        [policy(event="PodFailed"), policy(events=["PodFailed"])], {"policy-duplicate-event"}, id="duplicate-event"
    ),
    pytest.param([policy(event="*"), policy(event="TaskFailed")], {"policy-any-alone"}, id="any-with-other"),
    pytest.param([policy(event="PodRunning")], {"policy-event"}, id="internal-event-pod-running"),
    pytest.param([policy(event="CommandIssued")], {"policy-event"}, id="internal-event-command-issued"),
    pytest.param([policy("EnqueueJob", event="PodFailed")], {"policy-action"}, id="internal-action-enqueue"),
    pytest.param([policy("OpenQueue", event="PodFailed")], {"policy-action"}, id="internal-action-open-queue"),
    pytest.param([LifecyclePolicy(event="PodFailed")], {"policy-action"}, id="missing-action"),
    pytest.param([policy(event="JobUpdated")], set(), id="job-updated-accepted-like-volcano"),
    pytest.param([policy(event="PodPending", timeout="90s")], set(), id="timeout-seconds"),
    pytest.param([policy(event="PodPending", timeout="1.5h")], set(), id="timeout-fractional-hours"),
    pytest.param([policy(event="PodPending", timeout="5 minutes")], {"policy-timeout"}, id="timeout-prose"),
    pytest.param([policy(event="PodFailed")] * 65, {"policies-count"}, id="too-many-policies"),
    pytest.param([policy(events=["PodFailed"] * 17)], set(), id="repeated-events-collapse"),
]


@pytest.mark.parametrize(("policies", "expected_rules"), POLICY_CASES)
def test_policies(policies: list[LifecyclePolicy], expected_rules: set[str]) -> None:
    assert rules(list(validate_policies(policies, path="spec.policies"))) == expected_rules


def test_policy_messages_list_valid_choices() -> None:
    (found,) = validate_policies([policy("Explode", event="PodFailed")], path="spec.tasks[0].policies")
    assert found.field == "spec.tasks[0].policies[0].action"
    assert "invalid policy action 'Explode'" in found.message
    assert "valid actions are [AbortJob CompleteJob" in found.message


@pytest.mark.parametrize(
    ("edges", "cyclic"),
    [
        pytest.param({"t1": ["t2", "t3"], "t2": ["t3"], "t3": []}, False, id="chain-is-dag"),
        pytest.param({"t1": ["t2"], "t2": ["t1"], "t3": None}, True, id="two-cycle"),
        pytest.param({"t1": ["t2", "t3"], "t2": ["t2"], "t3": None}, True, id="self-loop"),
        pytest.param({"t1": ["t2", "t3"], "t2": None, "t3": ["t2"]}, False, id="diamond-is-dag"),
        pytest.param({"t1": ["t1", "t1"]}, True, id="repeated-self-dependency"),
        pytest.param({"t1": ["ghost"]}, False, id="unknown-names-ignored-by-cycle-check"),
    ],
)
def test_depends_on_cycles(edges: dict[str, list[str] | None], cyclic: bool) -> None:
    tasks = [task(name, depends_on=DependsOn(name=deps) if deps is not None else None) for name, deps in edges.items()]
    assert has_cycle(tasks) is cyclic


FLAGS = PLUGIN_FLAGS["pytorch"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param([], {}, id="no-args"),
        pytest.param(["--master=launcher"], {"master": "launcher"}, id="double-dash-equals"),
        pytest.param(["-master", "launcher"], {"master": "launcher"}, id="single-dash-separate-value"),
        pytest.param(["--port=0x10"], {"port": "0x10"}, id="go-int-with-base-prefix"),
        pytest.param(["--wait-master-enabled"], {"wait-master-enabled": "true"}, id="bare-bool"),
        pytest.param(["--wait-master-enabled=false"], {"wait-master-enabled": "false"}, id="bool-with-value"),
        pytest.param(["--master=a", "positional", "--bogus"], {"master": "a"}, id="stops-at-first-positional"),
        pytest.param(["--", "--bogus"], {}, id="double-dash-terminator"),
        pytest.param(["--bogus"], FlagError("flag provided but not defined: -bogus"), id="unknown-flag"),
        pytest.param(["--port"], FlagError("flag needs an argument: -port"), id="missing-value"),
        pytest.param(["--port=eight"], FlagError("invalid value 'eight' for flag -port: parse error"), id="bad-int"),
        pytest.param(
            ["--wait-master-enabled=maybe"],
            FlagError("invalid boolean value 'maybe' for -wait-master-enabled"),
            id="bad-bool",
        ),
        pytest.param(["---master=a"], FlagError("bad flag syntax: ---master=a"), id="three-dashes"),
        pytest.param(["--=a"], FlagError("bad flag syntax: --=a"), id="empty-flag-name"),
    ],
)
def test_plugin_flag_parsing(args: list[str], expected: dict[str, str] | FlagError) -> None:
    assert parse_flags(args, FLAGS) == expected


def test_plugin_dependencies_do_not_override_arguments() -> None:
    assert with_dependencies({"mpi": ["--port=23"], "ssh": ["--ssh-port=2222"]}) == {
        "mpi": ["--port=23"],
        "ssh": ["--ssh-port=2222"],
        "svc": [],
    }


@pytest.mark.parametrize(
    ("value", "label_ok", "subdomain_ok", "qualified_ok"),
    [
        pytest.param("worker", True, True, True, id="simple"),
        pytest.param("a.b", False, True, True, id="dotted"),
        pytest.param("Worker", False, False, True, id="uppercase"),
        pytest.param("-worker", False, False, False, id="leading-dash"),
        pytest.param("a_b", False, False, True, id="underscore"),
        pytest.param("a" * 63, True, True, True, id="63-chars"),
        pytest.param("a" * 64, False, True, False, id="64-chars"),
        pytest.param("", False, False, False, id="empty"),
    ],
)
def test_name_formats(value: str, label_ok: bool, subdomain_ok: bool, qualified_ok: bool) -> None:
    assert (not dns1123_label_errors(value), not dns1123_subdomain_errors(value), not qualified_name_errors(value)) == (
        label_ok,
        subdomain_ok,
        qualified_ok,
    )
