"""vc-scheduler: Volcano's scheduling sessions over Tephra's shared cache."""

from __future__ import annotations

from vc_runtime.service import main_entry
from vc_runtime.settings import parse
from vc_scheduler.app import SchedulerApp, add_arguments


def main() -> None:
    main_entry(SchedulerApp, lambda: parse("scheduler", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
