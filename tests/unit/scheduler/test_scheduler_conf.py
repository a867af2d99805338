"""Scheduler configuration: Volcano's YAML, the default, and errors for unknown names."""

from __future__ import annotations

from pathlib import Path

import pytest

from vc_sched_core.actions import in_tree_actions
from vc_sched_core.cycle import load_scheduler_conf
from vc_sched_core.framework.conf import DEFAULT_CONF_YAML, ConfError
from vc_sched_core.framework.interfaces import ExtensionPoint
from vc_sched_core.plugins import in_tree_plugins

DEPLOY_CONF = Path(__file__).resolve().parents[3] / "deploy" / "scheduler" / "volcano-scheduler.conf"


def test_every_name_in_the_deployed_conf_is_registered() -> None:
    conf = load_scheduler_conf(DEPLOY_CONF.read_text())
    assert set(conf.actions) <= set(in_tree_actions().names())
    assert set(conf.plugin_names()) <= set(in_tree_plugins().names())


def test_deployed_conf_is_volcanos_built_in_default() -> None:
    deployed = load_scheduler_conf(DEPLOY_CONF.read_text())
    assert deployed == load_scheduler_conf(None) == load_scheduler_conf(DEFAULT_CONF_YAML)
    assert deployed.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in t.plugins] for t in deployed.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
    ]


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        pytest.param(
            'actions: "enqueue, allocat"\ntiers: []', "actions", "failed to find Action allocat", id="unknown-action"
        ),
        pytest.param(
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: gangg',
            "tiers[0].plugins[0].name",
            "failed to find Plugin gangg",
            id="unknown-plugin",
        ),
        pytest.param(
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobReady: maybe',
            "tiers[0].plugins[0].enableJobReady",
            "true or false",
            id="bad-flag",
        ),
        pytest.param("actions: [allocate]", "actions", "comma separated", id="actions-not-a-string"),
        pytest.param(
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: proportion',
            "tiers[0]",
            "proportion and drf with hierarchy enabled conflicts",
            id="drf-hierarchy-with-proportion",
        ),
    ],
)
def test_bad_conf_names_the_field(text: str, field: str, message: str) -> None:
    with pytest.raises(ConfError) as caught:
        load_scheduler_conf(text)
    assert caught.value.field == field
    assert message in str(caught.value)


def test_enable_flags_default_on_and_unknown_plugin_arguments_are_kept_not_rejected() -> None:
    conf = load_scheduler_conf(
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n    enablePreemptable: false\n'
        "  - name: binpack\n    arguments: {binpack.weight: 10, no.such.key: 1}\n"
        "configurations:\n- name: allocate\n  arguments: {predicateErrorCacheEnable: false}\n"
    )
    gang, binpack = conf.tiers[0].plugins
    assert not gang.enabled(ExtensionPoint.PREEMPTABLE)
    assert gang.enabled(ExtensionPoint.RECLAIMABLE) and gang.enabled(ExtensionPoint.JOB_READY)
    assert binpack.arguments["no.such.key"] == 1
    assert conf.action_arguments("allocate") == {"predicateErrorCacheEnable": False}
