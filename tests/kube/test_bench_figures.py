"""bench-kube's figures from what it observed (pure: no apiserver; the numbers are made up, the arithmetic
is the bench's): the per-stage gang latencies, the unbound backlog, requests per pod with the server's time,
and the services' mean latencies and TLS handshakes; the apiserver profile by kind of work."""

from __future__ import annotations

from collections import Counter

from benchmarks.apiserver_profile import shares
from benchmarks.kube_bench import ApiserverReading, Binds, Stages, backlog, handshakes, latencies, per_pod


def observed() -> tuple[Binds, Stages]:
    """Two gangs of two: j0's pods seen at 2-3 s and bound at 5-6 s; j1 created later, bound at 9 s."""
    binds = Binds()
    binds.seen_at = {"j0-w-0": 2.0, "j0-w-1": 3.0, "j1-w-0": 4.0, "j1-w-1": 4.5}
    binds.bound_at = {"j0-w-0": 5.0, "j0-w-1": 6.0, "j1-w-0": 8.0, "j1-w-1": 9.0}
    stages = Stages(job_created={"j0": 0.0, "j1": 1.0, "j2": 1.5}, inqueue_at={"j0": 1.0, "j1": 3.0})
    return binds, stages


def test_each_stage_is_measured_per_whole_gang_from_its_last_pod() -> None:
    binds, stages = observed()
    # j0: Inqueue after 1 s, all pods 2 s later, bound 3 s after that; j1: 2, 1.5, 4.5. j2 never started.
    assert stages.report(binds) == (
        "job->Inqueue p50 2.0s p90 2.0s, Inqueue->pods p50 2.0s p90 2.0s, "
        "pods->bound p50 4.5s p90 4.5s, job->bound p50 8.0s p90 8.0s"
    )


def test_a_gang_not_wholly_bound_is_left_out_of_the_stages() -> None:
    binds, stages = observed()
    del binds.bound_at["j1-w-1"]
    assert stages.report(binds).startswith("job->Inqueue p50 1.0s")  # j0 alone


def test_the_backlog_is_the_most_pods_created_and_not_yet_bound_at_once() -> None:
    binds, _ = observed()
    assert backlog(binds) == "at most 4 pods created and unbound"  # all four seen before the first bind


def test_requests_per_pod_leave_watches_out_and_show_the_servers_time_per_request() -> None:
    before = ApiserverReading(Counter({("POST", "pods"): 10}), {("POST", "pods"): 1.0})
    after = ApiserverReading(
        Counter({("POST", "pods"): 30, ("POST", "pods/binding"): 20, ("WATCH", "pods"): 5}),
        {("POST", "pods"): 3.0, ("POST", "pods/binding"): 4.0},
    )
    assert per_pod(before, after, 20) == "2.00 req/pod [POST pods 1.00 (100 ms), POST pods/binding 1.00 (200 ms)]"


def test_service_latencies_are_means_over_the_phase_by_method() -> None:
    before = {
        "job-controller": {
            ("tephra_kube_request_seconds", 'method="POST"', "sum"): 10.0,
            ("tephra_kube_request_seconds", 'method="POST"', "count"): 100.0,
        }
    }
    after = {
        "job-controller": {
            ("tephra_kube_request_seconds", 'method="POST"', "sum"): 40.0,
            ("tephra_kube_request_seconds", 'method="POST"', "count"): 200.0,
            ("tephra_unrelated_seconds", "", "sum"): 5.0,
            ("tephra_unrelated_seconds", "", "count"): 5.0,
        },
        "kube-relay": {
            ("tephra_relay_kv_ack_seconds", "", "sum"): 2.0,
            ("tephra_relay_kv_ack_seconds", "", "count"): 1000.0,
        },
    }
    assert latencies(before, after) == "job-controller: apiserver POST 300 ms x100; kube-relay: relay KV ack 2 ms x1000"


def test_tls_handshakes_are_counted_over_the_phase_across_services() -> None:
    full, resumed = ('resumed="false"', "total"), ('resumed="true"', "total")
    name = "tephra_kube_tls_handshakes"
    before = {"scheduler": {(name, *full): 1.0, (name, *resumed): 10.0}}
    after = {
        "scheduler": {(name, *full): 1.0, (name, *resumed): 510.0},
        "job-controller": {(name, *full): 2.0, (name, *resumed): 300.0},  # started during the phase
    }
    assert handshakes(before, after) == "2 full, 800 resumed"
    assert handshakes(after, after) == ""  # none in the phase: nothing to print


def test_the_apiserver_profile_is_read_by_kind_of_work() -> None:
    vendor = "k8s.io/kubernetes/vendor/k8s.io"
    top = "\n".join(
        [
            "File: kube-apiserver",
            "      flat  flat%   sum%        cum   cum%",
            f"         0     0%     0%      0.65s  5.03%  {vendor}/apiserver/pkg/endpoints/handlers"
            ".PatchResource.func1",
            f"         0     0%     0%      5.41s 41.84%  {vendor}/apiserver/pkg/endpoints/handlers"
            ".(*patcher).patchResource.func2",
            f"         0     0%     0%      5.39s 41.69%  {vendor}/apiserver/pkg/endpoints/handlers"
            ".(*patcher).patchResource.func3",
            f"         0     0%     0%      2.26s 17.48%  {vendor}/apiextensions-apiserver/pkg/registry/customresource"
            ".(*StatusREST).Update",
            "     0.52s  4.02% 11.21%      1.64s 12.68%  runtime.gcBgMarkWorker.func2",
            "         0     0%     0%      0.10s  0.77%  example.com/unrelated.patchResourcesLater",
        ]
    )
    assert shares(top) == {"PATCH": 41.84, "custom-resource status writes": 17.48, "garbage collection": 12.68}
    assert shares("no profile here") == {}
