"""vc-gc: delete finished jobs after ttlSecondsAfterFinished, and dependents whose owner is gone."""

from __future__ import annotations

from vc_gc.app import GcApp, add_arguments
from vc_runtime.service import main_entry
from vc_runtime.settings import parse


def main() -> None:
    main_entry(GcApp, lambda: parse("gc", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
