"""vc-scheduler: Volcano's scheduling sessions over Tephra's shared cache."""

from __future__ import annotations

import sys

from vc_runtime.service import main_entry
from vc_runtime.settings import parse
from vc_scheduler.app import SchedulerApp, add_arguments

# Cycles run in a worker thread while the event loop binds. Every syscall the loop makes (a socket
# send, even nats-py's urandom per request) lets go of the GIL, and getting it back from a busy cycle
# takes up to the switch interval: at CPython's default 5 ms the binds crawl while a cycle runs.
SWITCH_INTERVAL_S = 0.0005


def main() -> None:
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    main_entry(SchedulerApp, lambda: parse("scheduler", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
