"""Deterministic names for everything the job controller creates.

Volcano formats names with `fmt.Sprintf` and breaks when a long job name pushes a pod, Service or
PodGroup name past Kubernetes' 63-character limit. Tephra keeps Volcano's names whenever they fit and
otherwise shortens the variable part with a hash, so the same inputs always give the same name and
two long names that share a prefix still differ. Fixed suffixes (`-<index>`, `-svc`, `-<uid>`) are
kept intact, because other code parses them (the task index is the last `-` segment of a pod name).
"""

from __future__ import annotations

import hashlib
from typing import Final

MAX_NAME_LENGTH: Final = 63
_HASH_LENGTH: Final = 8


def shorten(text: str, limit: int = MAX_NAME_LENGTH) -> str:
    """`text` itself when it fits in `limit`, else a prefix of it plus `-<8 hex of its sha256>`."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:_HASH_LENGTH]
    keep = max(limit - _HASH_LENGTH - 1, 0)
    # A prefix that ends in '-' would give '--'; names must also start alphanumeric, the job name does.
    prefix = text[:keep].rstrip("-.")
    return f"{prefix}-{digest}" if prefix else digest[:limit]


def with_suffix(base: str, suffix: str, limit: int = MAX_NAME_LENGTH) -> str:
    """`base + suffix`, shortening only `base` so the whole fits in `limit`."""
    return shorten(base, limit - len(suffix)) + suffix


def pod_name(job: str, task: str, index: int) -> str:
    """Volcano's `<job>-<task>-<index>` (PodNameFmt)."""
    return with_suffix(f"{job}-{task}", f"-{index}")


def podgroup_name(job: str, uid: str) -> str:
    """Volcano's `<job>-<jobUID>`."""
    return with_suffix(job, f"-{uid}")


def service_name(job: str) -> str:
    """The svc plugin's headless Service, also every pod's subdomain: `<job>`."""
    return shorten(job)


def network_policy_name(job: str) -> str:
    return shorten(job)


def hosts_configmap_name(job: str) -> str:
    """The svc plugin's ConfigMap `<job>-svc`."""
    return with_suffix(job, "-svc")


def ssh_secret_name(job: str) -> str:
    """The ssh plugin's Secret `<job>-ssh`."""
    return with_suffix(job, "-ssh")


def node_port_service_name(job: str) -> str:
    """Tephra's NodePort Service for the svc plugin's `--service-type` option: `<job>-np`."""
    return with_suffix(job, "-np")


def volume_name(job: str, claim: str) -> str:
    """A pod volume for a job volume. Volcano uses 12 random characters; Tephra hashes the claim name
    so that rebuilding a pod gives the same spec."""
    digest = hashlib.sha256(claim.encode()).hexdigest()[:12]
    return with_suffix(job, f"-{digest}")


def claim_name(job: str, uid: str, index: int) -> str:
    """The PersistentVolumeClaim for `volumes[index].volumeClaim`. Volcano writes `<job>-pvc-<12 random
    characters>` back into the job's spec; Tephra derives `<job>-pvc-<8 hex of sha256(uid/index)>`, so
    every pass (and pod) finds the same name without writing the spec, and a job recreated under the
    same name (another uid) never meets its predecessor's claim while gc removes it."""
    digest = hashlib.sha256(f"{uid}/{index}".encode()).hexdigest()[:_HASH_LENGTH]
    return with_suffix(job, f"-pvc-{digest}")


def task_index_of(pod: str) -> str:
    """Volcano's GetPodIndexUnderTask: the last `-` segment when the name has at least three."""
    parts = pod.split("-")
    return parts[-1] if len(parts) >= 3 else ""


def host_name(*, job: str, task: str, index: int, hostname: str | None, subdomain: str | None) -> str:
    """Volcano's MakeDomainName: `<hostname or pod name>.<subdomain or job>`."""
    host = hostname or pod_name(job, task, index)
    return f"{host}.{subdomain or service_name(job)}"
