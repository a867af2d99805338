"""Who may do what on NATS: one identity per service, an `admin`, and tenants. Pure.

Each identity's grant names the object kinds it reads and writes, the other buckets it keeps, the
history stream, and the request subjects it serves or asks on; `permissions()` turns a grant into
the exact NATS subjects the server allows it to publish and subscribe to. Why these and no more:

- Only admission writes what users submit: every user write is a request on
  `vc.rpc.admission.write.<identity>`, and a user may publish on its own such subject only, so
  admission learns who asks from the subject, which the server vouches for.
- Controllers write directly (as Kubernetes controllers do), each only the kinds it manages:
  node-sim writes Pods and Nodes, never Jobs; the scheduler binds Pods and writes PodGroup and Queue
  status; and so on. With `--backend kube` the services write to the apiserver, so on NATS only the
  relay writes object buckets.
- The secrets bucket is read by the job controller (its ssh Secrets), gc (deletes them), admission
  (a user's write of a Secret must be checked against what is stored) and the relay (fills it).
  Users, the dashboard, the scheduler and node-sim never see it.
- A tenant reads only its own namespaces (cluster-scoped kinds, Queues and Nodes, it reads whole). A
  get names its keys in the subject the server checks (`$JS.API.DIRECT.GET.<stream>.<key subject>`;
  the get by a key in the body, `STREAM.MSG.GET`, is the admin's and the services'). A tenant has no
  consumer API at all: nats-server checks neither a consumer's `deliver_subject` nor a pull request's
  reply subject against the creator's permissions, so a tenant able to make or pull from a consumer
  could have it deliver to any subject. It asks admission instead (`vc.rpc.admission.consumers.
  <identity>`), which creates a push consumer within the tenant's namespaces (`consumer_filters`) that
  delivers to the tenant's own inbox (vc_security.consumer_requests).
- Every reply comes back on the asker's own inbox prefix `_INBOX.<identity>`: nobody can subscribe
  to another identity's replies. Services that answer requests reply through `allow_responses`
  (one reply per request received), not through a publish grant on other inboxes.
- Services may look up (`STREAM.INFO`) and create the object buckets and the history stream (every
  service opens them all at start) and the buckets they keep, so whichever starts first makes them
  with the configured replicas; creating a stream that exists with another configuration fails, so
  this cannot alter one, and nobody may update, purge or delete a stream. Users may create nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final, Literal

from vc_proto import subjects
from vc_proto.kinds import KINDS

Backend = Literal["nats", "kube"]
Role = Literal["service", "admin", "tenant"]

ADMIN: Final = "admin"
SCHEDULER_LEDGER_BUCKET: Final = "vc-sched-ledger"  # vc_scheduler.ledger_kv.BUCKET
JOB_DELAYS_BUCKET: Final = "vc-job-delays"  # vc_job_controller.delays.BUCKET
MAX_IDENTITY_LENGTH: Final = 63
_IDENTITY = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

ALL_KINDS: Final = frozenset(KINDS)
# What a namespace's administrator sets and the scheduler honours: ResourceQuotas gate enqueue (the
# resourcequota plugin), PodDisruptionBudgets spare victims (the pdb plugin).
NAMESPACE_POLICIES: Final = frozenset({"ResourceQuota", "PodDisruptionBudget"})
# Storage: the job controller creates a job's claims (volumes[].volumeClaim); the scheduler's volume
# predicate reads claims and the volumes they are bound to; admins store volumes, tenants their claims.
VOLUMES: Final = frozenset({"PersistentVolumeClaim", "PersistentVolume"})
# What a person sees with vcctl: never Secrets, nor the ConfigMaps and Services other tenants' jobs use.
USER_READABLE: Final = (
    frozenset(
        {"Job", "PodGroup", "Queue", "Command", "Pod", "Node", "PriorityClass", "JobFlow", "JobTemplate", "CronJob"}
    )
    | {"Event", "HyperNode"}
    | NAMESPACE_POLICIES
    | VOLUMES
)
GC_DEPENDENTS: Final = frozenset(
    {"Pod", "PodGroup", "Service", "ConfigMap", "Secret", "NetworkPolicy", "PersistentVolumeClaim"}
)
JOB_PLUGIN_KINDS: Final = frozenset({"Service", "ConfigMap", "Secret", "NetworkPolicy"})
# The services that record Kubernetes Events (vc_runtime.event_recorder): they create them and read them
# back to count a repeat.
EVENTS: Final = frozenset({"Event"})
# What the kube relay mirrors into NATS (vc_kube.relay.MIRRORED_KINDS): every kind but Events, which
# the services write to the apiserver themselves in kube mode.
RELAYED: Final = ALL_KINDS - EVENTS


@dataclass(frozen=True, slots=True)
class Grant:
    role: Role
    reads: frozenset[str] = frozenset()  # object kinds
    writes: frozenset[str] = frozenset()  # object kinds, with --backend nats (kube: the apiserver)
    keeps: tuple[str, ...] = ()  # other buckets it reads and writes (all keys)
    lease_group: str | None = None  # its membership leases: `vc-leases`, keys `<group>.*`
    reads_history: bool = False
    writes_history: bool = False
    serves: tuple[str, ...] = ()  # subjects it subscribes to and answers (allow_responses)
    asks: tuple[str, ...] = ()  # request subjects it may publish on
    namespaces: frozenset[str] | None = None  # the namespaces it reads objects and history of; None: all


SERVICE_GRANTS: Final[dict[str, Grant]] = {
    "admission": Grant(
        "service",
        reads=ALL_KINDS,
        writes=ALL_KINDS,
        serves=(subjects.ADMISSION_WRITE_ANY, subjects.ADMISSION_WRITE, subjects.ADMISSION_CONSUMERS_ANY),
        reads_history=True,  # the consumers it makes for tenants (the history's included)
        writes_history=True,
    ),
    "job-controller": Grant(
        "service",
        reads=frozenset({"Job", "PodGroup", "Pod", "Queue", "Command", "PriorityClass", "PersistentVolumeClaim"})
        | JOB_PLUGIN_KINDS
        | EVENTS,
        writes=frozenset({"Job", "PodGroup", "Pod", "Command", "PersistentVolumeClaim"}) | JOB_PLUGIN_KINDS | EVENTS,
        keeps=(JOB_DELAYS_BUCKET,),
        lease_group="job-controller",
        writes_history=True,
    ),
    "queue-controller": Grant(
        "service",
        reads=frozenset({"Queue", "PodGroup", "Command", "Job"}) | EVENTS,
        writes=frozenset({"Queue", "Command"}) | EVENTS,
        lease_group="queue-controller",
        writes_history=True,
    ),
    "podgroup-controller": Grant(
        "service",
        reads=frozenset({"Pod", "PodGroup", "Queue"}),
        writes=frozenset({"Pod", "PodGroup"}),
        lease_group="podgroup-controller",
        writes_history=True,
    ),
    "flow-controller": Grant(
        "service",
        reads=frozenset({"JobFlow", "JobTemplate", "CronJob", "Job", "Queue"}),
        writes=frozenset({"JobFlow", "JobTemplate", "CronJob", "Job"}),
        lease_group="flow-controller",
        writes_history=True,
    ),
    "gc": Grant(
        "service",
        reads=frozenset({"Job"}) | GC_DEPENDENTS,
        writes=frozenset({"Job"}) | GC_DEPENDENTS,
        lease_group="gc",
        writes_history=True,
    ),
    "scheduler": Grant(
        "service",
        reads=frozenset({"Node", "Pod", "PodGroup", "Queue", "PriorityClass", "Job", "HyperNode"})
        | NAMESPACE_POLICIES
        | VOLUMES
        | EVENTS,
        writes=frozenset({"Pod", "PodGroup", "Queue"}) | EVENTS,
        keeps=(SCHEDULER_LEDGER_BUCKET,),
        # Instances lend each other room on the nodes they own (vc_scheduler/loans.py).
        serves=(subjects.SCHEDULER_LOAN_ANY,),
        asks=(subjects.SCHEDULER_LOAN_ANY,),
        lease_group="scheduler",
        writes_history=True,
    ),
    "node-sim": Grant(
        "service",
        # HyperNodes: `--topology` builds the racks and spines over the nodes it simulates.
        reads=frozenset({"Pod", "Node", "HyperNode"}) | EVENTS,
        writes=frozenset({"Pod", "Node", "HyperNode"}) | EVENTS,
        serves=(subjects.NODE_SIM_CONTROL,),
        writes_history=True,
    ),
    "dashboard": Grant("service", reads=USER_READABLE, reads_history=True),
    "kube-relay": Grant("service", reads=RELAYED, writes=RELAYED),
}
SERVICES: Final = tuple(SERVICE_GRANTS)
# Identities only one backend runs: the relay mirrors an apiserver, so `--backend nats` has no use for it
# (and it may read and write every kind, Secrets included).
KUBE_ONLY_SERVICES: Final = frozenset({"kube-relay"})


def services_for(backend: Backend) -> tuple[str, ...]:
    """The service identities `backend` runs: no identity is made that nothing uses."""
    return SERVICES if backend == "kube" else tuple(s for s in SERVICES if s not in KUBE_ONLY_SERVICES)


def admin_grant(backend: Backend = "nats") -> Grant:
    """The operator: every user-visible kind, the history, node-sim's control; writes through admission
    (with `--backend kube` vcctl writes to the apiserver with the user's kubeconfig instead)."""
    asks = (subjects.NODE_SIM_CONTROL,) + ((subjects.admission_write_subject(ADMIN),) if backend == "nats" else ())
    return Grant("admin", reads=USER_READABLE, reads_history=True, asks=asks)


def tenant_grant(name: str, namespaces: frozenset[str]) -> Grant:
    """A team's identity: what a person may read, in its own namespaces, and admission's write subject
    in its own name."""
    if not namespaces:
        raise ValueError(f"tenant {name!r} has no namespace to read")
    return Grant(
        "tenant",
        reads=USER_READABLE,
        reads_history=True,
        asks=(subjects.admission_write_subject(name), subjects.admission_consumers_subject(name)),
        namespaces=namespaces,
    )


def check_identity_name(name: str) -> None:
    """Identities are DNS labels (they are subject tokens), and no user may take a service's name."""
    if not name or len(name) > MAX_IDENTITY_LENGTH or not _IDENTITY.match(name):
        raise ValueError(f"identity {name!r} must be a lowercase DNS label (a-z, 0-9, '-') of at most 63 characters")


def inbox_prefix(identity: str) -> str:
    return f"_INBOX.{identity}"


@dataclass(frozen=True, slots=True)
class Permissions:
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    allow_responses: bool = False


@dataclass
class _Subjects:
    publish: list[str] = field(default_factory=list)
    subscribe: list[str] = field(default_factory=list)

    def pub(self, *items: str) -> None:
        self.publish.extend(s for s in items if s not in self.publish)


def all_streams() -> tuple[str, ...]:
    """Every stream Tephra creates: the object buckets, leases, the scheduler's ledger, the job
    controller's delayed actions, the history."""
    buckets = [subjects.bucket(k) for k in KINDS] + [subjects.LEASES_BUCKET, SCHEDULER_LEDGER_BUCKET, JOB_DELAYS_BUCKET]
    return (*(f"KV_{b}" for b in buckets), subjects.EVENTS_STREAM)


def consumer_filters(grant: Grant) -> dict[str, tuple[str, ...]]:
    """Each stream `grant` reads, and the subjects a consumer's filter on it must stay within: its own
    namespaces' keys for a reader held to some namespaces, else the whole stream."""
    streams: dict[str, tuple[str, ...]] = {}
    for kind in sorted(grant.reads):
        bucket = subjects.bucket(kind)
        if grant.namespaces is not None and KINDS[kind].namespaced:
            streams[f"KV_{bucket}"] = tuple(f"$KV.{bucket}.{ns}.>" for ns in sorted(grant.namespaces))
        else:
            streams[f"KV_{bucket}"] = (f"$KV.{bucket}.>",)
    if grant.reads_history:
        if grant.namespaces is not None:
            history = tuple(f"{subjects.EVENTS_PREFIX}.*.{ns}.>" for ns in sorted(grant.namespaces))
        else:
            history = (f"{subjects.EVENTS_PREFIX}.>",)
        streams[subjects.EVENTS_STREAM] = history
    return streams


def _read_stream(out: _Subjects, stream: str, *, consumers: bool) -> None:
    """Look `stream` up and, with `consumers`, create, pull from and delete any consumer on it."""
    api = "$JS.API"
    out.pub(f"{api}.STREAM.INFO.{stream}")
    if consumers:
        out.pub(
            f"{api}.CONSUMER.CREATE.{stream}",
            f"{api}.CONSUMER.CREATE.{stream}.>",
            f"{api}.CONSUMER.INFO.{stream}.*",
            f"{api}.CONSUMER.DELETE.{stream}.*",
            f"{api}.CONSUMER.MSG.NEXT.{stream}.*",
            f"$JS.ACK.{stream}.>",
        )


def _read_bucket(
    out: _Subjects, bucket: str, namespaces: frozenset[str] | None = None, *, consumers: bool = True
) -> None:
    """A KV get is a STREAM.MSG.GET (the key in the body) or, on a bucket that allows it, a DIRECT.GET
    (the key in the subject: the only get a reader held to `namespaces` may make)."""
    stream = f"KV_{bucket}"
    _read_stream(out, stream, consumers=consumers)
    if namespaces is None:
        out.pub(f"$JS.API.STREAM.MSG.GET.{stream}", f"$JS.API.DIRECT.GET.{stream}", f"$JS.API.DIRECT.GET.{stream}.>")
        return
    out.pub(*(f"$JS.API.DIRECT.GET.{stream}.$KV.{bucket}.{ns}.>" for ns in sorted(namespaces)))


def permissions(identity: str, grant: Grant, backend: Backend = "nats") -> Permissions:
    """The exact subjects `identity` may publish and subscribe to."""
    out = _Subjects()
    if grant.role == "service":
        out.pub(*(f"$JS.API.STREAM.INFO.{s}" for s in all_streams() if _service_creates(grant, s)))
        out.pub(*(f"$JS.API.STREAM.CREATE.{s}" for s in all_streams() if _service_creates(grant, s)))
    # A tenant's consumers are made by admission on its behalf (see the module docstring).
    consumers = grant.role != "tenant"
    for kind in sorted(grant.reads):
        namespaces = grant.namespaces if KINDS[kind].namespaced else None
        _read_bucket(out, subjects.bucket(kind), namespaces, consumers=consumers)
    writes = grant.writes if backend == "nats" or grant is SERVICE_GRANTS["kube-relay"] else frozenset()
    for kind in sorted(writes):
        out.pub(f"$KV.{subjects.bucket(kind)}.>")
    for bucket in grant.keeps:
        _read_bucket(out, bucket)
        out.pub(f"$KV.{bucket}.>")
    if grant.lease_group:
        _read_bucket(out, subjects.LEASES_BUCKET)
        out.pub(f"$KV.{subjects.LEASES_BUCKET}.{grant.lease_group}.>")
    if grant.reads_history:
        _read_stream(out, subjects.EVENTS_STREAM, consumers=consumers)
    if grant.writes_history:
        out.pub(f"{subjects.EVENTS_PREFIX}.>")
    out.pub(*grant.asks)
    out.subscribe.extend(grant.serves)
    out.subscribe.append(f"{inbox_prefix(identity)}.>")
    return Permissions(tuple(out.publish), tuple(out.subscribe), allow_responses=bool(grant.serves))


def _service_creates(grant: Grant, stream: str) -> bool:
    """Every service opens every object bucket and the history (vc_runtime does at start); the other
    buckets only where the service keeps them."""
    own = {f"KV_{b}" for b in grant.keeps}
    if grant.lease_group:
        own.add(f"KV_{subjects.LEASES_BUCKET}")
    others = {f"KV_{b}" for b in (subjects.LEASES_BUCKET, SCHEDULER_LEDGER_BUCKET, JOB_DELAYS_BUCKET)}
    return stream not in others or stream in own
