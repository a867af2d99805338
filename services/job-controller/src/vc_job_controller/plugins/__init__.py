"""Job plugins (Volcano `pkg/controllers/job/plugins`): pure pod-spec mutators and object builders.

`in_tree_plugins()` returns the registry as a value (no import-time registration). `load_plugins`
builds a job's plugins from `spec.plugins`, in the order the user wrote them, raising PluginError for
an unknown name or nonsense arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vc_job_controller.plugins import env, hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow
from vc_job_controller.plugins.interface import (
    JobPlugin,
    PluginDeps,
    PluginEffects,
    PluginError,
    PluginFactory,
    SshKeyPair,
)

PluginRegistry = Mapping[str, PluginFactory]


def in_tree_plugins() -> dict[str, PluginFactory]:
    """Volcano's plugin names (pkg/controllers/job/plugins/factory.go)."""
    return {
        env.NAME: env.build,
        svc.NAME: svc.build,
        ssh.NAME: ssh.build,
        tensorflow.NAME: tensorflow.build,
        pytorch.NAME: pytorch.build,
        mpi.NAME: mpi.build,
        hcclrank.NAME: hcclrank.build,
        ray.NAME: ray.build,
    }


def load_plugins(
    requested: Mapping[str, Sequence[str]] | None, *, registry: PluginRegistry, deps: PluginDeps
) -> list[JobPlugin]:
    plugins: list[JobPlugin] = []
    for name, args in (requested or {}).items():
        factory = registry.get(name)
        if factory is None:
            raise PluginError(name, f"failed to get plugin {name} (known: {', '.join(sorted(registry))})")
        plugins.append(factory(list(args or []), deps))
    return plugins


__all__ = [
    "JobPlugin",
    "PluginDeps",
    "PluginEffects",
    "PluginError",
    "PluginFactory",
    "PluginRegistry",
    "SshKeyPair",
    "in_tree_plugins",
    "load_plugins",
]
