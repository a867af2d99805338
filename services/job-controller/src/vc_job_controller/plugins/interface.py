"""The job-plugin contract (Volcano `pkg/controllers/job/plugins/interface`), pure.

Volcano's plugins call the API server from their hooks. Here a hook returns `PluginEffects`
(objects to write or delete, `status.controlledResources` entries to set or drop) and
`on_pod_create` returns the changed pod; the job controller's plan carries the effects out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from vc_job_controller.logic.plan import ObjectRef, ObjectWrite
from vc_proto.batch import Job
from vc_proto.core import Pod


class PluginError(Exception):
    """A plugin cannot work for this job: unknown name or nonsense arguments. Permanent."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(f"plugin {plugin}: {message}")
        self.plugin = plugin
        self.message = message


@dataclass(frozen=True, slots=True)
class SshKeyPair:
    private_key_pem: bytes
    # OpenSSH authorized_keys line, newline-terminated (what Go's ssh.MarshalAuthorizedKey gives).
    public_key: bytes


KeyGenerator = Callable[[], SshKeyPair]


@dataclass(frozen=True, slots=True)
class PluginDeps:
    """What plugins need from outside the pure world, injected (random key generation)."""

    ssh_keygen: KeyGenerator


@dataclass(frozen=True, slots=True)
class PluginEffects:
    writes: tuple[ObjectWrite, ...] = ()
    deletes: tuple[ObjectRef, ...] = ()
    controlled_set: Mapping[str, str] = field(default_factory=dict)
    controlled_removed: tuple[str, ...] = ()


NO_EFFECTS = PluginEffects()


class JobPlugin(Protocol):
    @property
    def name(self) -> str: ...

    def on_pod_create(self, pod: Pod, job: Job) -> Pod: ...

    def on_job_add(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects: ...

    def on_job_delete(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects: ...

    def on_job_update(self, job: Job) -> PluginEffects: ...


# Building a plugin parses its arguments and raises PluginError when they make no sense.
PluginFactory = Callable[[Sequence[str], PluginDeps], JobPlugin]


def controlled_key(plugin: str) -> str:
    """Volcano's `status.controlledResources["plugin-<name>"] = <name>` marker."""
    return f"plugin-{plugin}"


def mark_added(plugin: str, controlled: Mapping[str, str]) -> PluginEffects:
    """The whole OnJobAdd of plugins that create nothing (env, mpi, pytorch, tensorflow)."""
    if controlled.get(controlled_key(plugin)) == plugin:
        return NO_EFFECTS
    return PluginEffects(controlled_set={controlled_key(plugin): plugin})


def mark_deleted(plugin: str, controlled: Mapping[str, str], *, deletes: tuple[ObjectRef, ...] = ()) -> PluginEffects:
    """OnJobDelete: drop the marker and delete what the plugin made, only if it made it."""
    if controlled.get(controlled_key(plugin)) != plugin:
        return NO_EFFECTS
    return PluginEffects(deletes=deletes, controlled_removed=(controlled_key(plugin),))
