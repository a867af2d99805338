"""Every scenario file in tests/scenarios runs through the scheduler core and meets its `expect`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.scheduler.scheduler_scenarios import check, load_scenario, scenario_files


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: p.stem)
def test_scenario_meets_expectations(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.expect, f"{path.name} declares no expectations"
    problems = check(scenario, scenario.run())
    assert not problems, "\n".join(problems)


def test_every_action_and_plugin_appears_in_some_scenario() -> None:
    from vc_sched_core.actions import in_tree_actions
    from vc_sched_core.cycle import load_scheduler_conf
    from vc_sched_core.plugins import in_tree_plugins

    used_actions: set[str] = set()
    used_plugins: set[str] = set()
    for path in scenario_files():
        conf = load_scheduler_conf(load_scenario(path).conf_text)
        used_actions.update(conf.actions)
        used_plugins.update(conf.plugin_names())
    assert set(in_tree_plugins().names()) <= used_plugins
    assert set(in_tree_actions().names()) - {"shuffle"} <= used_actions
