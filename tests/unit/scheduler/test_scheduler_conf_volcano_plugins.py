"""A scheduler conf naming Volcano plugins Tephra lacks loads without them, naming each; strict refuses."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from vc_core.errors import ConfigError
from vc_sched_core.cycle import load_scheduler_conf
from vc_sched_core.framework.conf import VOLCANO_PLUGINS_NOT_IN_TEPHRA, ConfError
from vc_sched_core.plugins import in_tree_plugins
from vc_sched_core.sim import main

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
CONF = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: tdm\n- plugins:\n  - name: numa-aware\n'


def test_volcano_plugins_tephra_lacks_are_left_out_and_named() -> None:
    conf = load_scheduler_conf(CONF)
    assert conf.plugin_names() == ["gang"]
    assert conf.skipped == ("tiers[0].plugins[1]: tdm", "tiers[1].plugins[0]: numa-aware")
    assert all("not implemented by Tephra" in w for w in conf.warnings()) and len(conf.warnings()) == 2


def test_strict_refuses_naming_the_field() -> None:
    with pytest.raises(ConfError) as raised:
        load_scheduler_conf(CONF, strict=True)
    assert raised.value.field == "tiers[0].plugins[1].name"
    assert "tdm" in str(raised.value)


def test_a_name_volcano_does_not_know_is_still_refused() -> None:
    with pytest.raises(ConfigError, match="failed to find Plugin nosuch"):
        load_scheduler_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: nosuch\n')


def test_the_lacking_list_and_the_in_tree_plugins_do_not_overlap() -> None:
    assert not VOLCANO_PLUGINS_NOT_IN_TEPHRA & set(in_tree_plugins().names())


def test_the_default_conf_skips_nothing() -> None:
    assert load_scheduler_conf().skipped == ()


def test_sim_cycle_warns_on_stderr_and_strict_exits_2(tmp_path: Path) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(CONF)
    argv = ["-f", str(SCENARIOS / "deadlock-4gpu.yaml"), "--conf", str(conf)]
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, stdout=out, stderr=err) == 0
    assert "warning: scheduler conf: tiers[0].plugins[1]: tdm" in err.getvalue()
    assert "numa-aware" in err.getvalue() and out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--strict-conf"], stdout=out, stderr=err) == 2
    assert "tiers[0].plugins[1].name" in err.getvalue() and out.getvalue() == ""


def test_the_scheduler_service_loads_with_a_warning_or_refuses_when_strict(tmp_path: Path) -> None:
    from structlog.testing import capture_logs

    from vc_runtime.settings import parse
    from vc_scheduler.app import SchedulerApp, add_arguments

    conf = tmp_path / "conf.yaml"
    conf.write_text(CONF)
    settings = parse("scheduler", ["--scheduler-conf", str(conf)], add_arguments=add_arguments)
    with capture_logs() as logs:
        app = SchedulerApp(settings)
    assert app.conf.plugin_names() == ["gang"]
    skipped = [entry["detail"] for entry in logs if entry["event"] == "scheduler_conf_plugin_skipped"]
    assert len(skipped) == 2 and "tdm" in skipped[0] and "numa-aware" in skipped[1]
    strict = parse("scheduler", ["--scheduler-conf", str(conf), "--strict-conf"], add_arguments=add_arguments)
    with pytest.raises(ConfigError, match="tdm"):
        SchedulerApp(strict)
