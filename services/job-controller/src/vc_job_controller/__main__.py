"""vc-job-controller: runs Volcano jobs through their whole life."""

from __future__ import annotations

from vc_job_controller.app import JobControllerApp, add_arguments
from vc_runtime.service import main_entry
from vc_runtime.settings import parse


def main() -> None:
    main_entry(JobControllerApp, lambda: parse("job-controller", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
