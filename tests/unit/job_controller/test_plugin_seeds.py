"""The seeds' TensorFlow and MPI jobs end to end through `decide`: hostfiles, env, ssh, ports."""

from __future__ import annotations

import base64
import json

from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import FAKE_KEYS, load_seed, podgroup, run, view, with_phase, with_spec
from vc_job_controller.logic import Request
from vc_job_controller.logic.plan import Plan
from vc_proto.batch import Job
from vc_proto.core import ConfigMap, Container, NetworkPolicy, Pod, Secret, Service

TF = "tensorflow-benchmark"
MPI = "lm-mpi-job"


def admitted(job: Job, plugins: dict[str, list[str]] | None = None) -> tuple[Plan, Plan]:
    """(the plan that initiates the job, the plan that creates its pods once its PodGroup is Inqueue)."""
    if plugins is not None:
        job = with_spec(job, plugins=plugins)
    init = run(view(job, {}, None), Request(event="OutOfSync"))
    assert init.status is not None
    started = replace(job, status=init.status)
    return init, run(view(started, {}, podgroup(started, "Inqueue")))


def written(plan: Plan, kind: type) -> list:  # type: ignore[type-arg]
    return [w.obj for w in plan.objects_to_write if isinstance(w.obj, kind)]


def created(plan: Plan, name: str) -> Pod:
    return next(p for p in plan.pods_to_create if p.metadata.name == name)


def main_container(pod: Pod) -> Container:
    assert pod.spec is not None and pod.spec.containers
    return pod.spec.containers[0]


def env_of(pod: Pod) -> dict[str, str | dict[str, object] | None]:
    return {e.name: e.value if e.value is not None else e.value_from for e in main_container(pod).env or []}


def test_tensorflow_seed_hostfiles() -> None:
    init, _ = admitted(load_seed("tensorflow-benchmark.yaml"))
    [configmap] = written(init, ConfigMap)
    assert configmap.metadata.name == f"{TF}-svc"
    assert configmap.data == {
        "ps.host": f"{TF}-ps-0.{TF}",
        "VC_PS_HOSTS": f"{TF}-ps-0.{TF}",
        "VC_PS_NUM": "1",
        "worker.host": f"{TF}-worker-0.{TF}\n{TF}-worker-1.{TF}",
        "VC_WORKER_HOSTS": f"{TF}-worker-0.{TF},{TF}-worker-1.{TF}",
        "VC_WORKER_NUM": "2",
    }
    [service] = written(init, Service)
    assert service.metadata.name == TF and service.spec is not None
    assert service.spec.cluster_ip == "None"
    assert service.spec.selector == {"volcano.sh/job-name": TF, "volcano.sh/job-namespace": "default"}
    [policy] = written(init, NetworkPolicy)
    assert policy.spec is not None and policy.spec.policy_types == ["Ingress"]
    assert init.status is not None and init.status.controlled_resources == {"plugin-env": "env", "plugin-svc": "svc"}


def test_tensorflow_seed_worker_pod_env_hostname_and_mount() -> None:
    _, pods_plan = admitted(load_seed("tensorflow-benchmark.yaml"))
    worker = created(pods_plan, f"{TF}-worker-1")
    env = env_of(worker)
    assert env["VK_TASK_INDEX"] == "1" and env["VC_TASK_INDEX"] == "1"
    assert env["VC_PS_HOSTS"] == {"configMapKeyRef": {"name": f"{TF}-svc", "key": "VC_PS_HOSTS"}}
    assert env["VC_WORKER_NUM"] == {"configMapKeyRef": {"name": f"{TF}-svc", "key": "VC_WORKER_NUM"}}
    assert worker.spec is not None
    assert (worker.spec.hostname, worker.spec.subdomain) == (f"{TF}-worker-1", TF)
    assert [(m.name, m.mount_path) for m in main_container(worker).volume_mounts or []] == [
        (f"{TF}-svc", "/etc/volcano")
    ]
    assert [v.config_map.name for v in worker.spec.volumes or [] if v.config_map] == [f"{TF}-svc"]
    # the seed's own command reads exactly these files
    command = " ".join(main_container(worker).command or [])
    assert "/etc/volcano/ps.host" in command and "/etc/volcano/worker.host" in command


def test_tensorflow_plugin_on_the_seed_builds_tf_config() -> None:
    plugins: dict[str, list[str]] = {"env": [], "svc": [], "tensorflow": []}
    _, pods_plan = admitted(load_seed("tensorflow-benchmark.yaml"), plugins)
    config = json.loads(str(env_of(created(pods_plan, f"{TF}-worker-1"))["TF_CONFIG"]))
    assert config == {
        "cluster": {
            "ps": [f"{TF}-ps-0.{TF}:2222"],
            "worker": [f"{TF}-worker-0.{TF}:2222", f"{TF}-worker-1.{TF}:2222"],
        },
        "task": {"type": "worker", "index": 1},
    }
    ps_config = json.loads(str(env_of(created(pods_plan, f"{TF}-ps-0"))["TF_CONFIG"]))
    assert ps_config["task"] == {"type": "ps", "index": 0}


def test_mpi_seed_hostfile_for_the_masters_command() -> None:
    init, _ = admitted(load_seed("lm-mpi-job.yaml"))
    [configmap] = written(init, ConfigMap)
    assert configmap.data is not None
    assert configmap.data["mpiworker.host"] == "\n".join(f"{MPI}-mpiworker-{i}.{MPI}" for i in range(3))
    assert configmap.data["VC_MPIMASTER_NUM"] == "1"


def test_mpi_seed_ssh_secret_and_mount() -> None:
    init, pods_plan = admitted(load_seed("lm-mpi-job.yaml"))
    [secret] = written(init, Secret)
    assert secret.metadata.name == f"{MPI}-ssh" and secret.data is not None
    data = {k: base64.b64decode(v).decode() for k, v in secret.data.items()}
    assert data["id_rsa"] == FAKE_KEYS.private_key_pem.decode()
    assert data["id_rsa.pub"] == data["authorized_keys"] == FAKE_KEYS.public_key.decode()
    hosts = [f"{MPI}-mpimaster-0"] + [f"{MPI}-mpiworker-{i}" for i in range(3)]
    expected = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n" + "".join(
        f"Host {h}\n  HostName {h}.{MPI}\n  Port 22\n" for h in hosts
    )
    assert data["config"] == expected
    master = created(pods_plan, f"{MPI}-mpimaster-0")
    mounts = {(m.name, m.mount_path, m.sub_path) for m in main_container(master).volume_mounts or []}
    assert (f"{MPI}-ssh", "/root/.ssh", ".ssh") in mounts
    [secret_volume] = [v for v in master.spec.volumes or [] if v.secret]  # type: ignore[union-attr]
    assert secret_volume.secret is not None and secret_volume.secret.default_mode == 0o600
    assert [i.path for i in secret_volume.secret.items or []] == [
        ".ssh/id_rsa",
        ".ssh/id_rsa.pub",
        ".ssh/authorized_keys",
        ".ssh/config",
    ]


def test_mpi_plugin_on_the_seed_sets_mpi_host_on_the_master_only() -> None:
    plugins = {"ssh": [], "svc": [], "mpi": ["--master=mpimaster", "--worker=mpiworker"]}
    _, pods_plan = admitted(load_seed("lm-mpi-job.yaml"), plugins)
    master, worker = created(pods_plan, f"{MPI}-mpimaster-0"), created(pods_plan, f"{MPI}-mpiworker-0")
    assert env_of(master)["MPI_HOST"] == ",".join(f"{MPI}-mpiworker-{i}.{MPI}" for i in range(3))
    assert "MPI_HOST" not in env_of(worker)
    # the seed already exposes 22 as mpijob-port: not added twice
    assert [(p.name, p.container_port) for p in main_container(master).ports or []] == [("mpijob-port", 22)]


def test_every_kill_removes_plugin_objects_and_markers() -> None:
    init, _ = admitted(load_seed("lm-mpi-job.yaml"))
    running = with_phase(replace(load_seed("lm-mpi-job.yaml"), status=init.status), "Running")
    plan = run(view(running, {}, podgroup(running, "Running")), Request(action="RestartJob"))
    assert {(r.kind, r.name) for r in plan.objects_to_delete} == {
        ("Secret", f"{MPI}-ssh"),
        ("ConfigMap", f"{MPI}-svc"),
        ("Service", MPI),
        ("NetworkPolicy", MPI),
    }
    assert plan.status is not None and plan.status.controlled_resources is None
