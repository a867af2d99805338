"""vc-admission: validates and defaults every object users submit; the embedded write API."""

from __future__ import annotations

from vc_admission.app import AdmissionApp, add_arguments
from vc_runtime.service import main_entry
from vc_runtime.settings import parse


def main() -> None:
    main_entry(AdmissionApp, lambda: parse("admission", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
