"""Small edits of frozen pods shared by the plugins (append env, mount a volume, open a port)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from msgspec.structs import replace

from vc_proto.core import Container, ContainerPort, EnvVar, Pod, PodSpec, Volume, VolumeMount
from vc_proto.vocabulary import TASK_SPEC_KEY

ContainerEdit = Callable[[Container], Container]


def spec_of(pod: Pod) -> PodSpec:
    return pod.spec or PodSpec()


def edit_containers(pod: Pod, edit: ContainerEdit, *, init: bool = True) -> Pod:
    """Apply `edit` to every container, and to every init container when `init`."""
    spec = spec_of(pod)
    containers = [edit(c) for c in spec.containers] if spec.containers is not None else None
    init_containers = spec.init_containers
    if init and init_containers is not None:
        init_containers = [edit(c) for c in init_containers]
    return replace(pod, spec=replace(spec, containers=containers, init_containers=init_containers))


def append_env(env: Sequence[EnvVar]) -> ContainerEdit:
    def edit(container: Container) -> Container:
        return replace(container, env=[*(container.env or []), *env])

    return edit


def append_mount(mount: VolumeMount) -> ContainerEdit:
    def edit(container: Container) -> Container:
        return replace(container, volume_mounts=[*(container.volume_mounts or []), mount])

    return edit


def open_port(port: int, name: str) -> ContainerEdit:
    """Add a named container port unless the container already exposes that number."""

    def edit(container: Container) -> Container:
        if any(p.container_port == port for p in container.ports or []):
            return container
        return replace(container, ports=[*(container.ports or []), ContainerPort(name=name, container_port=port)])

    return edit


def add_volume(pod: Pod, volume: Volume) -> Pod:
    spec = spec_of(pod)
    return replace(pod, spec=replace(spec, volumes=[*(spec.volumes or []), volume]))


def pod_task(pod: Pod, default: str = "default") -> str:
    """Volcano's GetTaskKey: the task-spec annotation, else `default`."""
    return (pod.metadata.annotations or {}).get(TASK_SPEC_KEY) or default
