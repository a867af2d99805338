"""Deterministic, 63-character-safe names."""

from __future__ import annotations

import pytest

from vc_job_controller.logic import names

UID = "9c571015-37c7-4a1a-9604-eaa2248613f2"


def test_short_names_are_volcanos() -> None:
    assert names.pod_name("tf", "worker", 3) == "tf-worker-3"
    assert names.podgroup_name("lm-mpi-job", UID) == f"lm-mpi-job-{UID}"
    assert names.hosts_configmap_name("tf") == "tf-svc"
    assert names.ssh_secret_name("tf") == "tf-ssh"
    assert names.service_name("tf") == "tf"


@pytest.mark.parametrize("length", [64, 100, 253])
def test_long_names_fit_and_are_deterministic(length: int) -> None:
    job = "a" * length
    for name in (
        names.pod_name(job, "worker", 12),
        names.podgroup_name(job, UID),
        names.hosts_configmap_name(job),
        names.ssh_secret_name(job),
        names.service_name(job),
        names.node_port_service_name(job),
    ):
        assert len(name) <= names.MAX_NAME_LENGTH
        assert name[0].isalnum() and name[-1].isalnum() and "--" not in name
    assert names.pod_name(job, "worker", 12) == names.pod_name(job, "worker", 12)


def test_suffixes_survive_shortening() -> None:
    job = "x" * 80
    assert names.pod_name(job, "worker", 7).endswith("-7")
    assert names.podgroup_name(job, UID).endswith(f"-{UID}")
    assert names.hosts_configmap_name(job).endswith("-svc")
    assert names.task_index_of(names.pod_name(job, "worker", 7)) == "7"


def test_names_sharing_a_long_prefix_still_differ() -> None:
    base = "p" * 70
    assert names.service_name(base + "-a") != names.service_name(base + "-b")


def test_shorten_strips_trailing_dashes_before_the_hash() -> None:
    text = "a" * 53 + "-" * 20
    short = names.shorten(text)
    assert len(short) <= 63 and "--" not in short


def test_task_index_of_needs_three_segments() -> None:
    assert names.task_index_of("job-task-4") == "4"
    assert names.task_index_of("pod-4") == ""


def test_host_name_prefers_template_hostname_and_subdomain() -> None:
    assert names.host_name(job="j", task="t", index=1, hostname=None, subdomain=None) == "j-t-1.j"
    assert names.host_name(job="j", task="t", index=1, hostname="h", subdomain="s") == "h.s"
