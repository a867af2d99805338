"""ssh plugin (Volcano `plugins/ssh`): password-less ssh between the job's pods.

On job add: Secret `<job>-ssh` with `id_rsa` (PKCS#1 PEM), `id_rsa.pub`, `authorized_keys` and
`config` (no host-key checks; a `Host` entry per pod). On pod create: the Secret mounted at the key
path (default /root/.ssh) through `subPath: .ssh`, mode 0600 (0644 for a custom path).
Key generation is injected (`PluginDeps.ssh_keygen`) so the core stays pure and tests deterministic.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Final

from vc_job_controller.logic import names
from vc_job_controller.logic.ownership import owned_meta
from vc_job_controller.logic.plan import ObjectRef, ObjectWrite, WriteMode
from vc_job_controller.logic.view import replicas, task_name, tasks
from vc_job_controller.plugins.flags import Flag, parse_flags, require_int, require_text
from vc_job_controller.plugins.interface import (
    KeyGenerator,
    PluginDeps,
    PluginEffects,
    PluginError,
    SshKeyPair,
    controlled_key,
    mark_deleted,
)
from vc_job_controller.plugins.podedit import add_volume, append_mount, edit_containers
from vc_proto.batch import Job, JobSpec
from vc_proto.core import CORE_V1, KeyToPath, Pod, Secret, SecretVolumeSource, Volume, VolumeMount

NAME: Final = "ssh"
PRIVATE_KEY: Final = "id_rsa"
PUBLIC_KEY: Final = "id_rsa.pub"
AUTHORIZED_KEYS: Final = "authorized_keys"
CONFIG: Final = "config"
KEY_FILES: Final = (PRIVATE_KEY, PUBLIC_KEY, AUTHORIZED_KEYS, CONFIG)
ABSOLUTE_PATH: Final = "/root/.ssh"
RELATIVE_PATH: Final = ".ssh"
ROOT_MODE: Final = 0o600
NON_ROOT_MODE: Final = 0o644
FLAGS: Final = (
    Flag("ssh-key-file-path", ABSOLUTE_PATH),
    Flag("ssh-private-key", ""),
    Flag("ssh-public-key", ""),
    Flag("ssh-port", 22),
)


def generate_ssh_config(job: Job, port: int) -> str:
    """Volcano's generateSSHConfig."""
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    job_name = job.metadata.name or ""
    for task in tasks(job.spec or JobSpec()):
        pod_spec = task.template.spec if task.template else None
        hostname = pod_spec.hostname if pod_spec else None
        subdomain = (pod_spec.subdomain if pod_spec else None) or names.service_name(job_name)
        count = min(1, replicas(task)) if hostname else replicas(task)
        for index in range(count):
            host = hostname or names.pod_name(job_name, task_name(task), index)
            lines += [f"Host {host}", f"  HostName {host}.{subdomain}", f"  Port {port}"]
    return "\n".join(lines) + "\n"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class SshPlugin:
    name: Final = NAME

    def __init__(self, *, key_path: str, keys: SshKeyPair | None, port: int, keygen: KeyGenerator) -> None:
        self.key_path = key_path
        self.keys = keys
        self.port = port
        self.keygen = keygen

    def secret(self, job: Job) -> Secret:
        keys = self.keys or self.keygen()
        data = {
            PRIVATE_KEY: _b64(keys.private_key_pem),
            PUBLIC_KEY: _b64(keys.public_key),
            AUTHORIZED_KEYS: _b64(keys.public_key),
            CONFIG: _b64(generate_ssh_config(job, self.port).encode()),
        }
        name = names.ssh_secret_name(job.metadata.name or "")
        return Secret(api_version=CORE_V1, metadata=owned_meta(job, name), type="Opaque", data=data)

    def on_pod_create(self, pod: Pod, job: Job) -> Pod:
        secret = names.ssh_secret_name(job.metadata.name or "")
        items = [
            KeyToPath(key=k, path=f"{RELATIVE_PATH}/{k}") for k in (PRIVATE_KEY, PUBLIC_KEY, AUTHORIZED_KEYS, CONFIG)
        ]
        mode = ROOT_MODE if self.key_path == ABSOLUTE_PATH else NON_ROOT_MODE
        source = SecretVolumeSource(secret_name=secret, items=items, default_mode=mode)
        pod = add_volume(pod, Volume(name=secret, secret=source))
        mount = VolumeMount(name=secret, mount_path=self.key_path, sub_path=RELATIVE_PATH)
        return edit_containers(pod, append_mount(mount))

    def on_job_add(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        if controlled.get(controlled_key(NAME)) == NAME:
            return PluginEffects()
        # Create-if-absent, not Volcano's create-or-update: a retried decide must not swap the key
        # under pods that already mounted the first one.
        write = ObjectWrite(obj=self.secret(job), mode=WriteMode.CREATE_IF_ABSENT)
        return PluginEffects(writes=(write,), controlled_set={controlled_key(NAME): NAME})

    def on_job_delete(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        ref = ObjectRef(kind="Secret", name=names.ssh_secret_name(job.metadata.name or ""))
        return mark_deleted(NAME, controlled, deletes=(ref,))

    def on_job_update(self, job: Job) -> PluginEffects:
        # A Secret mounted through subPath never updates in running pods; Volcano leaves it too.
        return PluginEffects()


def _user_keys(private_key: str, public_key: str) -> SshKeyPair | None:
    if not private_key:
        if public_key:
            raise PluginError(NAME, "-ssh-public-key needs -ssh-private-key")
        return None
    if "PRIVATE KEY" not in private_key:
        raise PluginError(NAME, "-ssh-private-key is not a PEM private key")
    return SshKeyPair(private_key_pem=private_key.encode(), public_key=public_key.encode())


def build(args: Sequence[str], deps: PluginDeps) -> SshPlugin:
    values = parse_flags(NAME, args, FLAGS)
    key_path = require_text(NAME, "ssh-key-file-path", values["ssh-key-file-path"])
    if not key_path.startswith("/"):
        raise PluginError(NAME, f"-ssh-key-file-path={key_path} must be an absolute path")
    port = require_int(values["ssh-port"])
    # Volcano falls back to 22 for an out-of-range port; so does Tephra (validateSSHPort).
    port = port if 0 < port <= 65535 else 22
    keys = _user_keys(
        require_text(NAME, "ssh-private-key", values["ssh-private-key"]),
        require_text(NAME, "ssh-public-key", values["ssh-public-key"]),
    )
    return SshPlugin(key_path=key_path, keys=keys, port=port, keygen=deps.ssh_keygen)
