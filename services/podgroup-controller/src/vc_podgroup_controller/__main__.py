"""vc-podgroup-controller: PodGroups for plain pods that ask for the Volcano scheduler."""

from __future__ import annotations

from vc_podgroup_controller.app import PodGroupControllerApp, add_arguments
from vc_runtime.service import main_entry
from vc_runtime.settings import parse


def main() -> None:
    main_entry(PodGroupControllerApp, lambda: parse("podgroup-controller", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
