"""vc-dashboard: read-only web pages of queues, jobs, a job's history and nodes, live over server-sent events."""

from __future__ import annotations

from vc_dashboard.app import DashboardApp, add_arguments
from vc_runtime.service import main_entry
from vc_runtime.settings import parse


def main() -> None:
    main_entry(DashboardApp, lambda: parse("dashboard", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
