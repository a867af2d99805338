"""vc-flow-controller: vcjobs from JobFlows (by their JobTemplates) and from CronJobs (on their schedule)."""

from __future__ import annotations

from vc_flow_controller.app import FlowControllerApp, add_arguments
from vc_runtime.service import main_entry
from vc_runtime.settings import parse


def main() -> None:
    main_entry(FlowControllerApp, lambda: parse("flow-controller", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
