"""Each job plugin's hooks, called directly (pure: pods in, pods and effects out)."""

from __future__ import annotations

import base64
import json

import pytest
from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import DEPS, job, pod_spec_of, task, tasks_of, with_pod_spec, with_spec
from vc_job_controller.logic.pods import build_job_pod
from vc_job_controller.plugins import in_tree_plugins, load_plugins
from vc_job_controller.plugins.interface import JobPlugin, PluginError
from vc_job_controller.plugins.keys import generate_rsa_key_pair
from vc_proto.batch import Job
from vc_proto.core import ConfigMap, Container, ContainerPort, Pod, PodSpec, Secret, Service


def plugin(name: str, args: list[str] | None = None) -> JobPlugin:
    return in_tree_plugins()[name](args or [], DEPS)


def make_pod(j: Job, task_index: int, index: int) -> Pod:
    return build_job_pod(j, tasks_of(j)[task_index], index)


def spec_of_pod(pod: Pod) -> PodSpec:
    assert pod.spec is not None
    return pod.spec


def containers(pod: Pod) -> list[Container]:
    return spec_of_pod(pod).containers or []


def init_containers(pod: Pod) -> list[Container]:
    return spec_of_pod(pod).init_containers or []


def env_of(pod: Pod, container: int = 0) -> dict[str, str | None]:
    return {e.name: e.value for e in containers(pod)[container].env or []}


def with_init_container(j: Job) -> Job:
    init = [Container(name="init", image="busybox")]
    return with_spec(j, tasks=[with_pod_spec(t, init_containers=init) for t in tasks_of(j)])


# --- env ---------------------------------------------------------------------------------------------


def test_env_sets_both_index_variables_in_containers_and_init_containers() -> None:
    j = with_init_container(job([task("w", 3)]))
    pod = plugin("env").on_pod_create(make_pod(j, 0, 2), j)
    assert env_of(pod) == {"VK_TASK_INDEX": "2", "VC_TASK_INDEX": "2"}
    init = init_containers(pod)[0]
    assert {e.name: e.value for e in init.env or []} == {"VK_TASK_INDEX": "2", "VC_TASK_INDEX": "2"}


def test_env_refuses_arguments() -> None:
    with pytest.raises(PluginError, match="flag provided but not defined"):
        plugin("env", ["--index=1"])


# --- svc ---------------------------------------------------------------------------------------------


def test_svc_pinned_hostname_yields_one_host_and_dashes_become_underscores() -> None:
    j = job([task("param-server", 3)])
    j = with_spec(j, tasks=[with_pod_spec(tasks_of(j)[0], hostname="ps", subdomain="cluster")])
    configmap = plugin("svc").on_job_add(j, {}).writes[0].obj
    assert isinstance(configmap, ConfigMap)
    data = configmap.data
    assert data == {
        "param_server.host": "ps.cluster",
        "VC_PARAM_SERVER_HOSTS": "ps.cluster",
        "VC_PARAM_SERVER_NUM": "1",
    }


def test_svc_flags_publish_not_ready_disable_policy_and_no_env() -> None:
    j = job([task("w", 2)])
    svc = plugin("svc", ["--publish-not-ready-addresses", "--disable-network-policy", "--inject-hosts-env=false"])
    kinds = [type(w.obj).__name__ for w in svc.on_job_add(j, {}).writes]
    assert kinds == ["ConfigMap", "Service"]
    service = svc.on_job_add(j, {}).writes[1].obj
    assert isinstance(service, Service) and service.spec is not None and service.spec.publish_not_ready_addresses
    pod = svc.on_pod_create(make_pod(j, 0, 0), j)
    assert env_of(pod) == {}
    assert [r.kind for r in svc.on_job_delete(j, {"plugin-svc": "svc"}).deletes] == ["ConfigMap", "Service"]


def test_svc_node_port_option_creates_an_external_service() -> None:
    j = job([task("master", 1), task("w", 2)])
    svc = plugin("svc", ["--service-type=NodePort", "--port=8080", "--node-port=30080", "--service-task=master"])
    services = [w.obj for w in svc.on_job_add(j, {}).writes if isinstance(w.obj, Service)]
    assert [s.metadata.name for s in services] == ["job", "job-nodeport"]
    external = services[1].spec
    assert external is not None and external.type == "NodePort"
    assert external.selector == {
        "volcano.sh/job-name": "job",
        "volcano.sh/job-namespace": "ns",
        "volcano.sh/task-spec": "master",
    }
    assert [(p.port, p.target_port, p.node_port) for p in external.ports or []] == [(8080, 8080, 30080)]
    deletes = svc.on_job_delete(j, {"plugin-svc": "svc"}).deletes
    assert ("Service", "job-nodeport") in {(r.kind, r.name) for r in deletes}


def test_svc_port_list_and_container_port_defaults() -> None:
    j = job([task("w", 1)])
    listed = plugin("svc", ["--service-type=LoadBalancer", "--ports=80,9090:30090"]).on_job_add(j, {})
    lb = [w.obj for w in listed.writes if isinstance(w.obj, Service)][1]
    assert lb.spec is not None
    assert [(p.port, p.node_port) for p in lb.spec.ports or []] == [(80, None), (9090, 30090)]
    t = tasks_of(j)[0]
    container = replace((pod_spec_of(t).containers or [])[0], ports=[ContainerPort(container_port=2222)])
    j2 = with_spec(j, tasks=[with_pod_spec(t, containers=[container])])
    defaulted = plugin("svc", ["--service-type=ClusterIP"]).on_job_add(j2, {})
    cluster = [w.obj for w in defaulted.writes if isinstance(w.obj, Service)][1]
    assert cluster.spec is not None and [p.port for p in cluster.spec.ports or []] == [2222]


def test_svc_service_type_without_any_port_is_an_error_at_job_add() -> None:
    with pytest.raises(PluginError, match="needs -port or -ports"):
        plugin("svc", ["--service-type=NodePort"]).on_job_add(job([task("w", 1)]), {})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--service-type=Headless"], "is not one of ClusterIP, NodePort, LoadBalancer"),
        (["--node-port=30000"], "need -service-type"),
        (["--service-type=NodePort", "--node-port=30001"], "-node-port needs -port"),
        (["--service-type=NodePort", "--port=80", "--node-port=80"], "outside 30000-32767"),
        (["--service-type=NodePort", "--ports=80:x"], "is not port\\[:nodePort\\]"),
        (["--service-type=NodePort", "--ports=70000"], "out of range"),
        (["--service-type=ClusterIP", "--ports=80:30080"], "node ports need"),
        (["--service-type=NodePort", "--ports=80", "--port=81"], "either -ports or -port"),
    ],
)
def test_svc_nonsense_exposure_is_refused(args: list[str], message: str) -> None:
    with pytest.raises(PluginError, match=message):
        plugin("svc", args)


# --- ssh ---------------------------------------------------------------------------------------------


def test_ssh_custom_path_port_and_user_keys() -> None:
    j = job([task("w", 1)])
    ssh = plugin(
        "ssh",
        [
            "--ssh-key-file-path=/home/u/.ssh",
            "--ssh-port=2022",
            "--ssh-private-key=-----BEGIN RSA PRIVATE KEY-----x",
            "--ssh-public-key=ssh-rsa K",
        ],
    )
    secret = ssh.on_job_add(j, {}).writes[0].obj
    assert isinstance(secret, Secret) and secret.data is not None
    assert base64.b64decode(secret.data["id_rsa.pub"]) == b"ssh-rsa K"
    assert "  Port 2022\n" in base64.b64decode(secret.data["config"]).decode()
    pod = ssh.on_pod_create(make_pod(j, 0, 0), j)
    volume = (spec_of_pod(pod).volumes or [])[-1]
    assert volume.secret is not None and volume.secret.default_mode == 0o644
    assert (containers(pod)[0].volume_mounts or [])[-1].mount_path == "/home/u/.ssh"


def test_ssh_invalid_port_falls_back_to_22_like_volcano() -> None:
    secret = plugin("ssh", ["--ssh-port=99999"]).on_job_add(job([task("w", 1)]), {}).writes[0].obj
    assert isinstance(secret, Secret) and secret.data is not None
    assert "  Port 22\n" in base64.b64decode(secret.data["config"]).decode()


def test_ssh_is_added_once_and_never_rewritten() -> None:
    ssh = plugin("ssh")
    j = job([task("w", 1)])
    assert ssh.on_job_add(j, {"plugin-ssh": "ssh"}).writes == ()
    assert ssh.on_job_update(j).writes == ()
    assert [r.name for r in ssh.on_job_delete(j, {"plugin-ssh": "ssh"}).deletes] == ["job-ssh"]
    assert ssh.on_job_delete(j, {}).deletes == ()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ssh-key-file-path=relative"], "must be an absolute path"),
        (["--ssh-public-key=ssh-rsa K"], "needs -ssh-private-key"),
        (["--ssh-private-key=nonsense"], "not a PEM private key"),
    ],
)
def test_ssh_nonsense_is_refused(args: list[str], message: str) -> None:
    with pytest.raises(PluginError, match=message):
        plugin("ssh", args)


def test_real_key_generator_makes_an_rsa_pair() -> None:
    keys = generate_rsa_key_pair()
    assert keys.private_key_pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert keys.public_key.startswith(b"ssh-rsa ") and keys.public_key.endswith(b"\n")


# --- tensorflow, pytorch, mpi --------------------------------------------------------------------------


def test_tensorflow_skips_a_single_replica_job_and_names_roles() -> None:
    single = job([task("worker", 1)])
    assert env_of(plugin("tensorflow").on_pod_create(make_pod(single, 0, 0), single)) == {}
    j = job([task("chief", 1), task("trainer", 2), task("eval", 1)])
    tf = plugin("tensorflow", ["--worker=trainer", "--evaluator=eval", "--port=3333"])
    config = json.loads(env_of(tf.on_pod_create(make_pod(j, 2, 0), j))["TF_CONFIG"] or "")
    assert config == {
        "cluster": {
            "worker": ["job-trainer-0.job:3333", "job-trainer-1.job:3333"],
            "chief": ["job-chief-0.job:3333"],
            "evaluator": ["job-eval-0.job:3333"],
        },
        "task": {"type": "evaluator", "index": 0},
    }


def test_pytorch_env_ranks_ports_and_wait_container() -> None:
    j = job([task("master", 1), task("worker", 3)])
    torch = plugin("pytorch", ["--wait-master-enabled", "--port=29500"])
    master = torch.on_pod_create(make_pod(j, 0, 0), j)
    worker = torch.on_pod_create(make_pod(j, 1, 2), j)
    assert env_of(master) == {"MASTER_ADDR": "job-master-0.job", "MASTER_PORT": "29500", "WORLD_SIZE": "4", "RANK": "0"}
    assert env_of(worker)["RANK"] == "3"
    assert [(p.name, p.container_port) for p in containers(worker)[0].ports or []] == [("pytorchjob-port", 29500)]
    waiter = init_containers(worker)[0]
    assert waiter.name == "wait-for-master" and waiter.image == "busybox:1.36.1"
    assert "nc -z job-master-0.job 29500" in (waiter.command or [])[2]
    assert spec_of_pod(master).init_containers is None


def test_pytorch_without_master_task_does_nothing() -> None:
    j = job([task("worker", 2)])
    pod = make_pod(j, 0, 0)
    assert plugin("pytorch").on_pod_create(pod, j) == pod


def test_pytorch_refuses_a_nonsense_timeout() -> None:
    with pytest.raises(PluginError, match="wait-master-timeout"):
        plugin("pytorch", ["--wait-master-timeout=0"])


def test_mpi_ports_on_init_containers_and_missing_worker_task() -> None:
    j = with_init_container(job([task("master", 1), task("worker", 2)]))
    mpi = plugin("mpi", ["--port=2222"])
    worker = mpi.on_pod_create(make_pod(j, 1, 0), j)
    init = init_containers(worker)[0]
    assert [(p.name, p.container_port) for p in init.ports or []] == [("mpijob-port", 2222)]
    lonely = job([task("master", 1)])
    pod = make_pod(lonely, 0, 0)
    assert mpi.on_pod_create(pod, lonely) == pod


@pytest.mark.parametrize("name", ["tensorflow", "mpi", "pytorch"])
def test_framework_plugins_refuse_a_bad_port(name: str) -> None:
    with pytest.raises(PluginError, match="is not a port"):
        plugin(name, ["--port=0"])


# --- registry ----------------------------------------------------------------------------------------


def test_registry_has_volcanos_names() -> None:
    assert set(in_tree_plugins()) == {"env", "svc", "ssh", "tensorflow", "pytorch", "mpi", "hcclrank", "ray"}


def test_unknown_plugin_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(PluginError, match="failed to get plugin horovod"):
        load_plugins({"horovod": []}, registry=in_tree_plugins(), deps=DEPS)


def test_plugins_load_in_the_order_written() -> None:
    loaded = load_plugins({"svc": [], "env": [], "ssh": []}, registry=in_tree_plugins(), deps=DEPS)
    assert [p.name for p in loaded] == ["svc", "env", "ssh"]


def test_svc_service_task_must_exist() -> None:
    svc = plugin("svc", ["--service-type=NodePort", "--port=80", "--service-task=ghost"])
    with pytest.raises(PluginError, match="-service-task=ghost names no task"):
        svc.on_job_add(job([task("w", 1)]), {})


def test_hcclrank_ranks_master_then_workers_or_follows_rank_env() -> None:
    j = job([task("master", 2), task("worker", 3), task("other", 1)])
    hccl = plugin("hcclrank")
    ranks = [
        (hccl.on_pod_create(make_pod(j, t, i), j).metadata.annotations or {}).get("hccl/rankIndex")
        for t, i in ((0, 1), (1, 0), (1, 2), (2, 0))
    ]
    assert ranks == ["1", "2", "4", None]
    torch_then_hccl = load_plugins({"pytorch": [], "hcclrank": []}, registry=in_tree_plugins(), deps=DEPS)
    pod = make_pod(j, 1, 0)
    for p in torch_then_hccl:
        pod = p.on_pod_create(pod, j)
    assert (pod.metadata.annotations or {})["hccl/rankIndex"] == "1"  # pytorch wrote RANK = index + 1


def test_ray_head_and_worker_commands_ports_and_head_service() -> None:
    j = job([task("head", 1), task("worker", 2)])
    ray = plugin("ray", ["--port=7000"])
    head = ray.on_pod_create(make_pod(j, 0, 0), j)
    worker = ray.on_pod_create(make_pod(j, 1, 1), j)
    head_command = (containers(head)[0].command or [])[2]
    assert head_command == (
        "ray start --head --block --dashboard-host=0.0.0.0 --port=7000 --dashboard-port=8265"
        " --ray-client-server-port=10001"
    )
    assert [(p.name, p.container_port) for p in containers(head)[0].ports or []] == [
        ("gcs", 7000),
        ("dashboard", 8265),
        ("client-server", 10001),
    ]
    assert containers(worker)[0].command == ["sh", "-c", "ray start --block --address=job-head-0.job:7000"]
    service = ray.on_job_add(j, {}).writes[0].obj
    assert isinstance(service, Service) and service.metadata.name == "job-head-svc" and service.spec is not None
    assert service.spec.selector == {
        "volcano.sh/job-name": "job",
        "volcano.sh/job-namespace": "ns",
        "volcano.sh/task-spec": "head",
    }
    assert [r.name for r in ray.on_job_delete(j, {"plugin-ray": "ray"}).deletes] == ["job-head-svc"]


def test_ray_without_head_task_is_an_error() -> None:
    j = job([task("worker", 1)])
    with pytest.raises(PluginError, match="doesn't have head task head"):
        plugin("ray").on_pod_create(make_pod(j, 0, 0), j)
