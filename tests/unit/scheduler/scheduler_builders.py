"""Small builders for scheduler unit tests: snapshots from terse specs, sessions with fake plugins."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from vc_sched_core.framework.conf import SchedulerConf, load_conf
from vc_sched_core.framework.framework import open_session
from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs, PluginFactory
from vc_sched_core.framework.registry import Registry
from vc_sched_core.framework.session import Session
from vc_sched_core.plugins import in_tree_plugins
from vc_sched_core.snapshot import ClusterSnapshot, load_objects

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def node(name: str, cpu: str = "4", memory: str = "8Gi", **extra: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, **extra}},
    }


def podgroup(name: str, *, min_member: int = 1, phase: str = "Inqueue", queue: str = "default") -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, "queue": queue},
        "status": {"phase": phase},
    }


def pod(name: str, group: str, *, cpu: str = "1", node_name: str = "", phase: str = "Pending") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": {"scheduling.k8s.io/group-name": group}},
        "spec": spec,
        "status": {"phase": phase},
    }


def snapshot(*objects: Mapping[str, Any]) -> ClusterSnapshot:
    return load_objects(list(objects))


class FakePlugin:
    """Registers the given functions under its name; nothing else."""

    def __init__(self, name: str, fns: Mapping[ExtensionPoint, Callable[..., Any]]) -> None:
        self.name = name
        self.fns = fns

    def on_session_open(self, ssn: Session) -> None:
        for point, fn in self.fns.items():
            ssn.add_fn(point, self.name, fn)

    def on_session_close(self, ssn: Session) -> None:
        pass


def fake_registry(plugins: Mapping[str, Mapping[ExtensionPoint, Callable[..., Any]]]) -> Registry[PluginFactory]:
    def factory(name: str) -> PluginFactory:
        return lambda _args: FakePlugin(name, plugins[name])  # type: ignore[return-value]

    return Registry({name: factory(name) for name in plugins})


def fake_session(
    conf_yaml: str,
    plugins: Mapping[str, Mapping[ExtensionPoint, Callable[..., Any]]],
    snap: ClusterSnapshot | None = None,
) -> Session:
    registry = fake_registry(plugins)
    conf = load_conf(conf_yaml, known_actions=["allocate"], known_plugins=registry.names())
    ssn, _ = open_session(snap or snapshot(), conf, plugins=registry, now=NOW, uid="test")
    return ssn


def real_session(snap: ClusterSnapshot, conf: SchedulerConf) -> Session:
    ssn, _ = open_session(snap, conf, plugins=in_tree_plugins(), now=NOW, uid="test")
    return ssn


def args(**values: object) -> PluginArgs:
    return dict(values)
