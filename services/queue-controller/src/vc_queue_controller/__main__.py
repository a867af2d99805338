"""vc-queue-controller: queue state (Open/Closing/Closed) from Commands, queue status, one writer per queue."""

from __future__ import annotations

from vc_queue_controller.app import QueueControllerApp, add_arguments
from vc_runtime.service import main_entry
from vc_runtime.settings import parse


def main() -> None:
    main_entry(QueueControllerApp, lambda: parse("queue-controller", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
