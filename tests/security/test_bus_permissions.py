"""The closed bus, checked against a real nats-server running the configuration `vcctl up` writes
(no test harness user): each identity x subject or bucket x allowed or refused, written out here by
hand (not derived from vc_security.identities, which it checks); strangers are refused at the door.
"""

from __future__ import annotations

import base64
import datetime
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.bus import probe, refused_connection
from vc_bus.server import NatsServer
from vc_security.authdir import AuthDir
from vc_security.cluster import AUTH_SECRET, TLS_SECRET, creds_secret, plan
from vc_security.credentials import ClientCredentials, decode_credentials
from vc_security.identities import SERVICE_GRANTS
from vc_security.natsconf import tls_block
from vc_security.nkey import new_user_key

pytestmark = [pytest.mark.nats, pytest.mark.integration]

W = {
    kind: f"$KV.vc-{kind}.{ns}.x"
    for kind, ns in (
        ("job", "team-a"),
        ("podgroup", "team-a"),
        ("pod", "team-a"),
        ("command", "team-a"),
        ("node", "_"),
        ("queue", "_"),
        ("secret", "team-a"),
        ("configmap", "team-a"),
        ("service", "team-a"),
        ("networkpolicy", "team-a"),
        ("priorityclass", "_"),
        ("jobflow", "team-a"),
        ("jobtemplate", "team-a"),
        ("cronjob", "team-a"),
        ("event", "team-a"),
        ("hypernode", "_"),
        ("resourcequota", "team-a"),
        ("poddisruptionbudget", "team-a"),
        ("persistentvolumeclaim", "team-a"),
        ("persistentvolume", "_"),
    )
}
GET = {kind: f"$JS.API.STREAM.MSG.GET.KV_vc-{kind}" for kind in W}
WATCH = {kind: f"$JS.API.CONSUMER.CREATE.KV_vc-{kind}" for kind in W}
CLUSTER_KINDS = {"node", "queue", "priorityclass", "hypernode", "persistentvolume"}
# Reads that name their keys in the subject: a consumer filtered to one namespace (or to all: "*"), and
# a direct get of one key. Tenants may make these only within their namespaces.
SCOPES = ("team-a", "team-b", "*")
WATCH_IN = {
    (kind, ns): f"$JS.API.CONSUMER.CREATE.KV_vc-{kind}.c1.$KV.vc-{kind}.{'_' if kind in CLUSTER_KINDS else ns}.*"
    for kind in W
    for ns in SCOPES
}
DIRECT_IN = {
    (kind, ns): f"$JS.API.DIRECT.GET.KV_vc-{kind}.$KV.vc-{kind}.{'_' if kind in CLUSTER_KINDS else ns}.x"
    for kind in W
    for ns in SCOPES[:2]
}
# A pod's read by name: its key is one per shard, the shard a wildcard (vc_proto.subjects.pod_name_filter).
POD_BY_NAME_IN = {ns: f"$JS.API.DIRECT.GET.KV_vc-pod.$KV.vc-pod.{ns}.*.x" for ns in SCOPES}
HISTORY_IN = {ns: f"$JS.API.CONSUMER.CREATE.VC_EVT.c1.vc.evt.job.{ns}.j1" for ns in SCOPES}
DIRECT_SECRET = "$JS.API.DIRECT.GET.KV_vc-secret.$KV.vc-secret.team-a.x-ssh"
CREATE_JOBS, DELETE_JOBS = "$JS.API.STREAM.CREATE.KV_vc-job", "$JS.API.STREAM.DELETE.KV_vc-job"
PURGE_SECRETS, UPDATE_HISTORY = "$JS.API.STREAM.PURGE.KV_vc-secret", "$JS.API.STREAM.UPDATE.VC_EVT"
LEASE = {
    g: f"$KV.vc-leases.{g}.i0"
    for g in ("scheduler", "job-controller", "gc", "queue-controller", "podgroup-controller", "flow-controller")
}
LEDGER, DELAYS = "$KV.vc-sched-ledger.x", "$KV.vc-job-delays.x"
EVENT, READ_HISTORY = "vc.evt.job.team-a.j1", "$JS.API.CONSUMER.CREATE.VC_EVT"
WRITE = {who: f"vc.rpc.admission.write.{who}" for who in ("alice", "bob", "admin")}
WRITE_BARE, WRITE_ANY = "vc.rpc.admission.write", "vc.rpc.admission.write.*"
# A tenant makes no consumer itself (nats-server would not check where it delivers): it asks admission.
CONSUMERS = {who: f"vc.rpc.admission.consumers.{who}" for who in ("alice", "bob", "admin")}
CONSUMERS_ANY = "vc.rpc.admission.consumers.*"
NODE_CONTROL = "vc.rpc.node-sim.control"
LOAN = "vc.rpc.scheduler.loan.*"  # scheduler instances ask each other for room on their nodes

ALL_KINDS = set(W)
USER_KINDS = {
    "job",
    "podgroup",
    "queue",
    "command",
    "pod",
    "node",
    "priorityclass",
    "jobflow",
    "jobtemplate",
    "cronjob",
    "event",
    "hypernode",
    "resourcequota",
    "poddisruptionbudget",
    "persistentvolumeclaim",
    "persistentvolume",
}
FLOW_KINDS = {"jobflow", "jobtemplate", "cronjob"}
PLUGIN_KINDS = {"secret", "configmap", "service", "networkpolicy"}
POLICY_KINDS = {"resourcequota", "poddisruptionbudget"}
VOLUME_KINDS = {"persistentvolumeclaim", "persistentvolume"}

# identity -> (kinds it writes, kinds it reads, the other subjects it may publish on, may subscribe on)
EXPECTED: dict[str, tuple[set[str], set[str], set[str], set[str]]] = {
    # It reads the history too: it makes the consumers tenants read through.
    "admission": (ALL_KINDS, ALL_KINDS, {CREATE_JOBS, EVENT, READ_HISTORY}, {WRITE_ANY, WRITE_BARE, CONSUMERS_ANY}),
    "job-controller": (
        # The claims of jobs' volumes[].volumeClaim.
        {"job", "podgroup", "pod", "command", "event", "persistentvolumeclaim"} | PLUGIN_KINDS,
        {"job", "podgroup", "pod", "queue", "command", "priorityclass", "event", "persistentvolumeclaim"}
        | PLUGIN_KINDS,
        {CREATE_JOBS, EVENT, LEASE["job-controller"], DELAYS},
        set(),
    ),
    "queue-controller": (
        {"queue", "command", "event"},
        {"queue", "podgroup", "command", "job", "event"},
        {CREATE_JOBS, EVENT, LEASE["queue-controller"]},
        set(),
    ),
    "podgroup-controller": (
        {"pod", "podgroup"},
        {"pod", "podgroup", "queue"},
        {CREATE_JOBS, EVENT, LEASE["podgroup-controller"]},
        set(),
    ),
    "gc": (
        {"job", "pod", "podgroup", "persistentvolumeclaim"} | PLUGIN_KINDS,
        {"job", "pod", "podgroup", "persistentvolumeclaim"} | PLUGIN_KINDS,
        {CREATE_JOBS, EVENT, LEASE["gc"]},
        set(),
    ),
    "scheduler": (
        {"pod", "podgroup", "queue", "event"},
        # ResourceQuotas gate enqueue, PodDisruptionBudgets spare preempt's victims; volumes: predicates.
        {"node", "pod", "podgroup", "queue", "priorityclass", "job", "event", "hypernode"}
        | POLICY_KINDS
        | VOLUME_KINDS,
        {CREATE_JOBS, EVENT, LEASE["scheduler"], LEDGER, LOAN},
        {LOAN},
    ),
    "flow-controller": (
        {"job"} | FLOW_KINDS,
        {"job", "queue"} | FLOW_KINDS,
        {CREATE_JOBS, EVENT, LEASE["flow-controller"]},
        set(),
    ),
    # HyperNodes: `--topology` builds racks and spines over the nodes it simulates.
    "node-sim": (
        {"pod", "node", "event", "hypernode"},
        {"pod", "node", "event", "hypernode"},
        {CREATE_JOBS, EVENT},
        {NODE_CONTROL},
    ),
    "dashboard": (set(), USER_KINDS, {CREATE_JOBS, READ_HISTORY}, set()),
    # Everything but Events: in kube mode the services write those to the apiserver themselves.
    "kube-relay": (ALL_KINDS - {"event"}, ALL_KINDS - {"event"}, {CREATE_JOBS}, set()),
    "admin": (set(), USER_KINDS, {WRITE["admin"], NODE_CONTROL, READ_HISTORY}, set()),
    "alice": (set(), USER_KINDS, {WRITE["alice"], CONSUMERS["alice"], READ_HISTORY}, set()),
    "bob": (set(), USER_KINDS, {WRITE["bob"], CONSUMERS["bob"], READ_HISTORY}, set()),
}
# The tenants read their own namespaces only (and cluster-scoped kinds whole); the others read all.
NAMESPACES_OF = {"alice": {"team-a"}, "bob": {"team-b"}}
PROBED_PUBLISH = sorted(
    {
        *W.values(),
        *GET.values(),
        *WATCH.values(),
        *WATCH_IN.values(),
        *DIRECT_IN.values(),
        *POD_BY_NAME_IN.values(),
        *HISTORY_IN.values(),
        DIRECT_SECRET,
        CREATE_JOBS,
        DELETE_JOBS,
        PURGE_SECRETS,
        UPDATE_HISTORY,
        *LEASE.values(),
        LEDGER,
        DELAYS,
        EVENT,
        READ_HISTORY,
        *WRITE.values(),
        *CONSUMERS.values(),
        WRITE_BARE,
        NODE_CONTROL,
        LOAN,
        ">",
        "$JS.API.>",
        "_INBOX.alice.x",
    }
)
PROBED_SUBSCRIBE = sorted(
    {
        WRITE_ANY,
        WRITE_BARE,
        CONSUMERS_ANY,
        NODE_CONTROL,
        LOAN,
        ">",
        "_INBOX.>",
        "_INBOX.alice.>",
        "$KV.vc-secret.>",
        "vc.evt.>",
    }
)


def expected_publish(identity: str, subject: str) -> bool:
    writes, reads, others, _ = EXPECTED[identity]
    scope = NAMESPACES_OF.get(identity)
    if subject in W.values():
        return any(W[k] == subject for k in writes)
    if subject in GET.values():
        # A get that names no key in the subject: only for whoever reads every namespace of the kind.
        return any(GET[k] == subject and (scope is None or k in CLUSTER_KINDS) for k in reads)
    # Consumers: a tenant creates none, in its own namespaces or not (admission makes them for it).
    if subject in WATCH.values():
        return scope is None and any(WATCH[k] == subject for k in reads)
    for (kind, _), probed in WATCH_IN.items():
        if probed == subject:
            return scope is None and kind in reads
    if subject in HISTORY_IN.values():
        return scope is None and READ_HISTORY in others
    for (kind, ns), probed in DIRECT_IN.items():
        if probed == subject:
            return kind in reads and (scope is None or kind in CLUSTER_KINDS or ns in scope)
    for ns, probed in POD_BY_NAME_IN.items():
        if probed == subject:
            return "pod" in reads and (scope is None or ns in scope)
    if subject == DIRECT_SECRET:
        return "secret" in reads
    if subject == EVENT:
        return EVENT in others
    if subject == READ_HISTORY:
        return READ_HISTORY in others and scope is None
    return subject in others


def expected_subscribe(identity: str, subject: str) -> bool:
    return subject in EXPECTED[identity][3] or subject == f"_INBOX.{identity}.>"


@pytest.fixture(scope="module")
def closed(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[NatsServer, AuthDir, dict[str, ClientCredentials]]]:
    """The configuration `vcctl up` writes, with two tenants, and nothing else."""
    root = tmp_path_factory.mktemp("closed-bus")
    auth = AuthDir(root / "auth")
    auth.ensure("kube")  # the relay's file too, as a kube run leaves it: the nats configuration ignores it
    tenants = {name: auth.add_tenant(name, [f"team-{name[0]}"]) for name in ("alice", "bob")}
    server = NatsServer(root / "nats", security=auth.server_config("nats"), tls=True)
    server.start()
    try:
        yield server, auth, tenants
    finally:
        server.stop()


def credentials_of(auth: AuthDir, tenants: dict[str, ClientCredentials], identity: str) -> ClientCredentials:
    return tenants[identity] if identity in tenants else auth.credentials(identity)


# The relay runs with --backend kube only; the embedded bus does not admit it (see below).
ON_NATS = sorted(set(EXPECTED) - {"kube-relay"})


@pytest.mark.parametrize("identity", ON_NATS)
async def test_each_identity_may_publish_and_subscribe_on_exactly_its_subjects(
    closed: tuple[NatsServer, AuthDir, dict[str, ClientCredentials]], identity: str
) -> None:
    server, auth, tenants = closed
    wrong: list[str] = []
    async with probe(server.url, credentials_of(auth, tenants, identity)) as p:
        for subject in PROBED_PUBLISH:
            allowed, expected = await p.may_publish(subject), expected_publish(identity, subject)
            if allowed != expected:
                wrong.append(f"publish {subject}: {'allowed' if allowed else 'refused'}, expected the opposite")
        for subject in [*PROBED_SUBSCRIBE, f"_INBOX.{identity}.>"]:
            allowed, expected = await p.may_subscribe(subject), expected_subscribe(identity, subject)
            if allowed != expected:
                wrong.append(f"subscribe {subject}: {'allowed' if allowed else 'refused'}, expected the opposite")
    assert wrong == [], f"{identity}:\n" + "\n".join(wrong)


def test_the_table_covers_every_service_identity() -> None:
    assert set(SERVICE_GRANTS) <= set(EXPECTED)


async def test_only_the_identities_that_need_it_may_read_the_secrets_bucket(
    closed: tuple[NatsServer, AuthDir, dict[str, ClientCredentials]],
) -> None:
    server, auth, tenants = closed
    readers = set()
    for identity in ON_NATS:
        async with probe(server.url, credentials_of(auth, tenants, identity)) as p:
            if await p.may_publish(GET["secret"]) or await p.may_publish(WATCH["secret"]):
                readers.add(identity)
    assert readers == {"admission", "job-controller", "gc"}


async def test_the_embedded_bus_does_not_admit_the_kube_relay(
    closed: tuple[NatsServer, AuthDir, dict[str, ClientCredentials]],
) -> None:
    """It may read and write every kind, Secrets included, and nothing uses it with --backend nats."""
    server, auth, _ = closed
    reason = await refused_connection(server.url, auth.credentials("kube-relay"), ca_pem=None)
    assert "Authorization Violation" in reason


async def test_strangers_are_refused_at_the_door(
    closed: tuple[NatsServer, AuthDir, dict[str, ClientCredentials]],
) -> None:
    server, auth, _ = closed
    ca = auth.ca_path.read_bytes()
    # No credentials at all.
    assert "Authorization Violation" in await refused_connection(server.url, None, ca_pem=ca)
    # A well-formed NKey the server does not know, and a known identity name with someone else's key.
    assert "Authorization Violation" in await refused_connection(
        server.url, ClientCredentials("admin", new_user_key()), ca_pem=ca
    )
    # The right key, but the client does not trust the server's certificate (its own CA, not ours).
    other_ca = AuthDir(Path(auth.root.parent / "other"))
    other_ca.ensure()
    admin_without_ca = ClientCredentials("admin", auth.credentials("admin").key)
    reason = await refused_connection(server.url, admin_without_ca, ca_pem=other_ca.ca_path.read_bytes())
    assert "CERTIFICATE_VERIFY_FAILED" in reason or "certificate verify failed" in reason
    # Nor the system's CAs.
    assert "certificate verify failed" in (await refused_connection(server.url, admin_without_ca, ca_pem=None)).lower()
    # And a genuine identity gets in.
    assert await refused_connection(server.url, auth.credentials("admin"), ca_pem=None) == ""


def test_the_server_speaks_only_tls(closed: tuple[NatsServer, AuthDir, dict[str, ClientCredentials]]) -> None:
    """A client that answers the INFO in plain text is not served (no PONG)."""
    server, _, _ = closed
    with socket.create_connection((server.host, server.port), timeout=5) as raw:
        info = raw.recv(4096).decode()
        assert info.startswith("INFO ") and '"tls_required":true' in info
        raw.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
        answer = b""
        try:
            while chunk := raw.recv(4096):
                answer += chunk
        except (ConnectionResetError, TimeoutError, ssl.SSLError):
            pass
    assert b"PONG" not in answer


async def test_on_a_cluster_only_the_relay_writes_objects_and_nobody_writes_through_admission(tmp_path: Path) -> None:
    """The configuration the cluster install's bootstrap makes (vc_security.cluster, --backend kube)."""
    made = plan({}, namespace="tephra-system", backend="kube", now=datetime.datetime.now(datetime.UTC))

    def raw(secret: str, key: str) -> bytes:
        return base64.b64decode(made.data[secret][key])

    for key in ("tls.crt", "tls.key"):
        (tmp_path / key).write_bytes(raw(TLS_SECRET, key))
    security = raw(AUTH_SECRET, "auth.conf").decode() + tls_block(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    server = NatsServer(tmp_path / "nats", security=security, tls=True)
    server.start()
    try:
        writers = set()
        for identity in (*SERVICE_GRANTS, "admin"):
            creds = decode_credentials(raw(creds_secret(identity), "creds.json"), source=identity)
            async with probe(server.url, creds) as p:
                if any([await p.may_publish(W[kind]) for kind in ALL_KINDS]):
                    writers.add(identity)
                # The services keep their own buckets and history either way.
                if identity == "scheduler":
                    assert await p.may_publish(LEDGER) and await p.may_publish(LEASE["scheduler"])
                # Users write with their own kubeconfig there: admission's NATS API is nobody's.
                assert not await p.may_publish(WRITE["admin"]), identity
        assert writers == {"kube-relay"}
    finally:
        server.stop()
