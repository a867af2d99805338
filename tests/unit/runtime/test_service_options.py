"""Every service's real flags against its options class: each flag a field and each field a flag, no
default of argparse's own disagreeing with the class's, and argparse's type of each flag the field's."""

from __future__ import annotations

import argparse
import typing
from collections.abc import Callable

import msgspec
import pytest

from vc_admission.app import AdmissionOptions
from vc_admission.app import add_arguments as admission_arguments
from vc_core.errors import ConfigError
from vc_dashboard.app import DashboardOptions
from vc_dashboard.app import add_arguments as dashboard_arguments
from vc_flow_controller.app import FlowControllerOptions
from vc_flow_controller.app import add_arguments as flow_controller_arguments
from vc_gc.app import GcOptions
from vc_gc.app import add_arguments as gc_arguments
from vc_job_controller.app import JobControllerOptions
from vc_job_controller.app import add_arguments as job_controller_arguments
from vc_node_sim.app import NodeSimOptions
from vc_node_sim.app import add_arguments as node_sim_arguments
from vc_podgroup_controller.app import PodGroupControllerOptions
from vc_podgroup_controller.app import add_arguments as podgroup_controller_arguments
from vc_queue_controller.app import QueueControllerOptions
from vc_queue_controller.app import add_arguments as queue_controller_arguments
from vc_runtime.settings import options_of, parse
from vc_scheduler.app import SchedulerOptions
from vc_scheduler.app import add_arguments as scheduler_arguments

AddArguments = Callable[[argparse.ArgumentParser], None]
SERVICES: list[tuple[str, AddArguments, type[msgspec.Struct]]] = [
    ("admission", admission_arguments, AdmissionOptions),
    ("dashboard", dashboard_arguments, DashboardOptions),
    ("flow-controller", flow_controller_arguments, FlowControllerOptions),
    ("gc", gc_arguments, GcOptions),
    ("job-controller", job_controller_arguments, JobControllerOptions),
    ("node-sim", node_sim_arguments, NodeSimOptions),
    ("podgroup-controller", podgroup_controller_arguments, PodGroupControllerOptions),
    ("queue-controller", queue_controller_arguments, QueueControllerOptions),
    ("scheduler", scheduler_arguments, SchedulerOptions),
]
# The environment fallbacks of service flags: unset, every default is the class's.
FLAG_ENVIRONMENT = ("VC_DASHBOARD__HOST", "VC_DASHBOARD__PORT", "POD_NAMESPACE")
by_service = pytest.mark.parametrize(("service", "add_arguments", "options"), SERVICES, ids=[s[0] for s in SERVICES])


@pytest.fixture(autouse=True)
def _no_flag_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in FLAG_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@by_service
def test_the_flags_are_the_fields_and_the_defaults_the_classs(
    service: str, add_arguments: AddArguments, options: type[msgspec.Struct]
) -> None:
    settings = parse(service, [], add_arguments=add_arguments)
    assert sorted(settings.flags) == sorted(f.name for f in msgspec.structs.fields(options))
    assert options_of(settings, options) == options()


@by_service
def test_every_flag_given_reads_as_its_fields_type(
    service: str, add_arguments: AddArguments, options: type[msgspec.Struct]
) -> None:
    argv: list[str] = []
    expected: dict[str, object] = {}
    for field in msgspec.structs.fields(options):
        flag, value = "--" + field.name.replace("_", "-"), sample(field.type)
        argv += [flag] if value is True else [flag, str(value[0] if isinstance(value, tuple) else value)]
        expected[field.name] = value
    read = options_of(parse(service, argv, add_arguments=add_arguments), options)
    assert msgspec.structs.asdict(read) == expected


def sample(kind: object) -> object:
    """A value of the field's type other than any default here, and how it is given on the command line."""
    if typing.get_origin(kind) is typing.Annotated:  # a bounded field: its type within its bounds
        kind = typing.get_args(kind)[0]
    if kind is bool:
        return True
    if kind is int:
        return 7
    if kind is float:
        return 0.5
    if typing.get_origin(kind) is tuple:
        return ("x",)
    return "x"  # str, or str | None


def test_a_flag_without_a_field_fails_the_service_at_start() -> None:
    def drifted(parser: argparse.ArgumentParser) -> None:
        gc_arguments(parser)
        parser.add_argument("--resync-period", type=float)

    with pytest.raises(ConfigError, match="--resync-period: GcOptions has no field 'resync_period'"):
        options_of(parse("gc", [], add_arguments=drifted), GcOptions)


def test_a_bounded_flag_out_of_its_bounds_names_the_flag_and_the_bound() -> None:
    settings = parse("scheduler", ["--binds-per-cycle", "-1"], add_arguments=scheduler_arguments)
    with pytest.raises(ConfigError, match=r"--binds-per-cycle: expected `int` >= 0, got -1"):
        options_of(settings, SchedulerOptions)
