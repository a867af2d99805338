"""Every NATS name in one place: KV buckets, keys, stream and subject names, RPC subjects."""

from __future__ import annotations

from typing import Final

CLUSTER_SCOPE: Final = "_"
EVENTS_STREAM: Final = "VC_EVT"
EVENTS_PREFIX: Final = "vc.evt"
LEASES_BUCKET: Final = "vc-leases"


def bucket(kind: str) -> str:
    """KV bucket holding every object of a kind, e.g. `vc-pod`."""
    return f"vc-{kind.lower()}"


def escape_token(name: str) -> str:
    """Object names are DNS subdomains and may hold `.`, a subject separator; `_` never occurs in them."""
    return name.replace(".", "_")


def unescape_token(token: str) -> str:
    return token.replace("_", ".")


def object_key(namespace: str | None, name: str) -> str:
    """KV key `<namespace>.<name>`; cluster-scoped objects use the namespace token `_`."""
    return f"{namespace or CLUSTER_SCOPE}.{escape_token(name)}"


def pod_key(namespace: str, shard: int, name: str) -> str:
    """KV key of a pod, `<namespace>.<shard>.<name>`: the shard of its PodGroup (vc_proto.pod_shards).
    Before the name, so that a consumer over some shards (`pod_shard_filter`) reading them from the start
    costs the server about what a read of the whole bucket does; with the shard last it cost 2.4 times
    as much at 100,000 pods, and more the more pods. The price: the server spends a third more on a
    create (its check that the name is free in every shard) and a quarter more on a read by name
    (docs/benchmarks.md, "Where a pod's shard goes in its key")."""
    return f"{namespace}.{shard}.{escape_token(name)}"


def pod_name_filter(namespace: str, name: str) -> str:
    """The keys a pod of this name may be under, one per shard: a name is held by one of them at most, so
    the newest entry among them is the name's (a wildcard last-by-subject read, or a create's check)."""
    return f"{namespace}.*.{escape_token(name)}"


def pod_shard_filter(shard: int) -> str:
    """The keys of every pod of one shard, in every namespace."""
    return f"*.{shard}.>"


def shard_of_pod_key(key: str) -> int | None:
    """The shard a pod's KV key names (`pod_key`); None for a key that names none."""
    parts = key.split(".", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() and len(parts[1]) <= 4 else None


def split_key(key: str) -> tuple[str | None, str]:
    """(namespace, name) of any kind's key: a pod's carries its shard between them."""
    namespace, _, rest = key.partition(".")
    return (None if namespace == CLUSTER_SCOPE else namespace), unescape_token(rest.rpartition(".")[2])


def is_token(text: str) -> bool:
    """Whether `text` can be one subject token: not empty, no separator, wildcard or whitespace (a
    subscription on anything else is refused by the server, or never answered)."""
    return bool(text) and not any(c in ".*>" or c.isspace() for c in text)


def namespace_filter(namespace: str | None) -> str:
    """KV key pattern for one namespace (a pod's key has a shard token more), or every key."""
    return ">" if namespace is None else f"{namespace}.>"


def event_subject(resource: str, namespace: str | None, name: str) -> str:
    """Domain events about one object: `vc.evt.<resource>.<namespace>.<name>`."""
    return f"{EVENTS_PREFIX}.{resource}.{namespace or CLUSTER_SCOPE}.{escape_token(name)}"


def event_filter(resource: str = "*", namespace: str | None = None, name: str | None = None) -> str:
    ns = "*" if namespace is None else namespace
    nm = "*" if name is None else escape_token(name)
    return f"{EVENTS_PREFIX}.{resource}.{ns}.{nm}"


def rpc_subject(service: str, operation: str) -> str:
    """Request/reply subjects: `vc.rpc.<service>.<operation>`."""
    return f"vc.rpc.{service}.{operation}"


ADMISSION_WRITE: Final = rpc_subject("admission", "write")
# Each caller writes on `vc.rpc.admission.write.<identity>`, the only one of them the NATS server lets
# it publish on: admission reads who asks from the subject (vc_security.identities).
ADMISSION_WRITE_ANY: Final = f"{ADMISSION_WRITE}.*"


def admission_write_subject(identity: str) -> str:
    return f"{ADMISSION_WRITE}.{identity}"


def caller_of(subject: str) -> str | None:
    """The identity a write request came from (the subject's last token), None on any other subject."""
    prefix = ADMISSION_WRITE + "."
    caller = subject[len(prefix) :] if subject.startswith(prefix) else ""
    return caller if caller and "." not in caller else None


# A tenant may not create JetStream consumers itself (nats-server does not check where a consumer
# delivers): it asks admission on `vc.rpc.admission.consumers.<identity>`, which makes one within the
# tenant's namespaces that delivers to the tenant's own inbox (vc_security.consumer_requests).
ADMISSION_CONSUMERS: Final = rpc_subject("admission", "consumers")
ADMISSION_CONSUMERS_ANY: Final = f"{ADMISSION_CONSUMERS}.*"


def admission_consumers_subject(identity: str) -> str:
    return f"{ADMISSION_CONSUMERS}.{identity}"


def consumer_asker_of(subject: str) -> str | None:
    """The identity a consumer request came from (the subject's last token), None on any other subject."""
    prefix = ADMISSION_CONSUMERS + "."
    asker = subject[len(prefix) :] if subject.startswith(prefix) else ""
    return asker if asker and "." not in asker else None


NODE_SIM_CONTROL: Final = rpc_subject("node-sim", "control")

# Scheduler instances lend each other room on the nodes they own: a borrower asks the node's owner on
# `vc.rpc.scheduler.loan.<owner instance>` (vc_scheduler/loans.py).
SCHEDULER_LOAN: Final = rpc_subject("scheduler", "loan")
SCHEDULER_LOAN_ANY: Final = f"{SCHEDULER_LOAN}.*"


def scheduler_loan_subject(instance: str) -> str:
    return f"{SCHEDULER_LOAN}.{escape_token(instance)}"
