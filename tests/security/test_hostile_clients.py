"""Hostile clients against the whole embedded system on a closed bus: tenants `alice`
(team-a) and `bob` (team-b) with credentials made as `vcctl user create` makes them.

- reading the secrets bucket (every MPI job's ssh private key) is refused by the server;
- deleting another tenant's job through the write API is refused, whether alice borrows bob's write
  subject (the server) or asks on her own with bob's namespace (admission); so is deleting a queue;
- `vcctl apply` of a Secret named like a job's ssh Secret is refused, for a tenant and for the admin;
- publishing on a service's subjects (a KV bucket, node-sim's control, the history) is refused;
- the request's own `user` claim changes nothing;
- a tenant reads its own namespaces only: vcctl says what the server refused, and a raw client that
  names one namespace in the subject and asks for more in the body is refused too;
- a plain pod naming a queue its namespace may not use is refused, and gets no PodGroup when written
  past admission.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import nats.errors
import nats.js.errors
import pytest
import yaml

from tests.security.bus import probe
from tests.support.secure import session_bus
from tests.support.services import eventually
from tests.support.system import BIN, System, seed
from vc_bus.connection import connect
from vc_core.errors import NotFound
from vc_proto import api, subjects
from vc_proto.batch import Job
from vc_proto.core import Pod, Secret
from vc_proto.scheduling import PodGroup, Queue
from vc_security.credentials import ClientCredentials, write_private

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(240)]
_reply = msgspec.json.Decoder(api.WriteReply)


class Tenants(System):
    """The system, with tenants alice (team-a) and bob (team-b) known to the server and to admission."""

    def __init__(self, root: Path) -> None:
        bus = session_bus().fork(root / "auth")
        self.people: dict[str, ClientCredentials] = {}
        for name in ("alice", "bob"):
            self.people[name] = bus.auth.add_tenant(name, [f"team-{name[0]}"])
            write_private(root / f"{name}.creds", self.people[name].encode())
        super().__init__(root, nodes=4, bus=bus)

    def vcctl_as(self, who: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {"VC_SERVER": self.url, "VC_NATS__CREDS": str(self.root / f"{who}.creds"), "PATH": "/usr/bin:/bin"}
        return subprocess.run(
            [str(BIN / "vcctl"), *args], capture_output=True, text=True, env=env, input=stdin, timeout=60
        )


@pytest.fixture
async def tenants(tmp_path: Path) -> AsyncIterator[Tenants]:
    system = Tenants(tmp_path)
    try:
        await system.start()
        yield system
    finally:
        system.stop()


def job_in(namespace: str, name: str, base: str = "tensorflow-benchmark.yaml") -> str:
    document: dict[str, Any] = seed(base, durations={"ps": "1h", "worker": "1h", "mpimaster": "1h", "mpiworker": "1h"})
    document["metadata"].update(name=name, namespace=namespace)
    return yaml.safe_dump(document)


async def test_tenants_are_held_to_their_namespaces_and_tephras_objects(tenants: Tenants) -> None:
    # Each tenant runs a job in its own namespace; neither can write in the other's.
    assert tenants.vcctl_as("alice", "apply", "-f", "-", stdin=job_in("team-a", "a-job")).returncode == 0
    assert tenants.vcctl_as("bob", "apply", "-f", "-", stdin=job_in("team-b", "b-job")).returncode == 0
    refused = tenants.vcctl_as("alice", "apply", "-f", "-", stdin=job_in("team-b", "sneaky"))
    assert refused.returncode == 1 and "alice may not create a Job in namespace 'team-b'" in refused.stderr
    refused = tenants.vcctl_as("alice", "job", "delete", "-N", "b-job", "-n", "team-b")
    assert refused.returncode == 1 and "Forbidden" in refused.stderr
    refused = tenants.vcctl_as("alice", "queue", "delete", "-N", "default")
    assert refused.returncode == 1 and "Queues are an admin's to manage" in refused.stderr

    # The raw request of the issue, on alice's own subject, claiming to be the admin: refused.
    alice = tenants.people["alice"]
    delete = api.Delete(kind="Job", namespace="team-b", name="b-job", user="admin")
    async with connect(tenants.url, name="alice", credentials=alice) as nc:
        answer = _reply.decode(
            (await nc.request(subjects.admission_write_subject("alice"), msgspec.json.encode(delete), timeout=10)).data
        )
        assert answer.error is not None and answer.error.code == api.FORBIDDEN
        queue = api.Delete(kind="Queue", name="default")
        answer = _reply.decode(
            (await nc.request(subjects.admission_write_subject("alice"), msgspec.json.encode(queue), timeout=10)).data
        )
        assert answer.error is not None and answer.error.code == api.FORBIDDEN
        # On bob's subject (or the admin's, or the bare one) the server does not even deliver it.
        for subject in (
            subjects.admission_write_subject("bob"),
            subjects.admission_write_subject("admin"),
            subjects.ADMISSION_WRITE,
        ):
            with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
                await nc.request(subject, msgspec.json.encode(delete), timeout=1)
    assert (await tenants.job("b-job", "team-b")).metadata.name == "b-job"
    assert (await tenants.store_call(lambda s: s.get(Queue, None, "default"))).metadata.name == "default"


async def test_tenants_read_only_their_own_namespaces(tenants: Tenants) -> None:
    assert tenants.vcctl_as("alice", "apply", "-f", "-", stdin=job_in("team-a", "a-job")).returncode == 0
    assert tenants.vcctl_as("bob", "apply", "-f", "-", stdin=job_in("team-b", "b-job")).returncode == 0

    # Her own namespace, her history, the queues: read as before; "all namespaces" means all of hers.
    own = tenants.vcctl_as("alice", "job", "list", "-n", "team-a")
    assert own.returncode == 0 and "a-job" in own.stdout, own.stderr
    everywhere = tenants.vcctl_as("alice", "job", "list", "-A")
    assert everywhere.returncode == 0 and "a-job" in everywhere.stdout and "b-job" not in everywhere.stdout
    view = tenants.vcctl_as("alice", "job", "view", "-N", "a-job", "-n", "team-a")
    assert view.returncode == 0 and "a-job" in view.stdout, view.stderr
    queues = tenants.vcctl_as("alice", "queue", "list")
    assert queues.returncode == 0 and "default" in queues.stdout, queues.stderr

    # Bob's: refused by the server, and vcctl says what and why at once (not a timeout).
    for args, what in (
        (("job", "list", "-n", "team-b"), "list Jobs in namespace 'team-b'"),
        (("pod", "list", "-n", "team-b"), "list Pods in namespace 'team-b'"),
        (("job", "view", "-N", "b-job", "-n", "team-b"), "read Job team-b/b-job"),
        (("job", "history", "-N", "b-job", "-n", "team-b"), "read the history in namespace 'team-b'"),
    ):
        refused = tenants.vcctl_as("alice", *args)
        expected = f"NATS refused identity 'alice': it may not {what} (it reads namespaces team-a only"
        assert refused.returncode == 1 and expected in refused.stderr, (args, refused.stderr)

    # Past vcctl, as a hostile client: a consumer of her own (admission makes hers) and every read
    # that names no key in its subject are refused by the server.
    alice = tenants.people["alice"]
    create = "$JS.API.CONSUMER.CREATE.KV_vc-job.sneaky.$KV.vc-job.team-a.*"
    async with connect(tenants.url, name="alice", credentials=alice) as nc:
        for subject, body in (
            (create, {"stream_name": "KV_vc-job", "config": {"name": "sneaky", "filter_subject": "$KV.vc-job.>"}}),
            ("$JS.API.STREAM.MSG.GET.KV_vc-job", {"last_by_subj": "$KV.vc-job.team-b.b-job"}),
            ("$JS.API.CONSUMER.CREATE.KV_vc-job", {"stream_name": "KV_vc-job", "config": {"ack_policy": "none"}}),
            ("$JS.API.DIRECT.GET.KV_vc-job", {"last_by_subj": "$KV.vc-job.team-b.b-job"}),
        ):
            with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
                await nc.request(subject, msgspec.json.encode(body), timeout=1)


async def test_a_tenants_consumers_deliver_to_its_own_inbox_only(tenants: Tenants) -> None:
    """nats-server checks no consumer's deliver subject: a tenant creates none, admission makes them."""
    assert tenants.vcctl_as("alice", "apply", "-f", "-", stdin=job_in("team-a", "a-job")).returncode == 0
    alice, admin = tenants.people["alice"], tenants.bus.credentials("admin")
    bobs_requests = subjects.admission_write_subject("bob")
    own_keys = "$KV.vc-job.team-a.>"
    hijack = {
        "stream_name": "KV_vc-job",
        "config": {
            "name": "hijack",
            "deliver_subject": bobs_requests,
            "filter_subject": own_keys,
            "ack_policy": "none",
        },
    }
    async with connect(tenants.url, name="alice", credentials=alice) as nc:
        # Her own keys pushed to a service's request subject: the server refuses the create itself.
        with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
            await nc.request(f"$JS.API.CONSUMER.CREATE.KV_vc-job.hijack.{own_keys}", json.dumps(hijack).encode(), 1)

        async def ask(**request: object) -> dict[str, Any]:
            body = {"stream": "KV_vc-job", "filter_subject": own_keys, **request}
            reply = await nc.request(subjects.admission_consumers_subject("alice"), json.dumps(body).encode(), 10)
            answer: dict[str, Any] = json.loads(reply.data)
            return answer

        # Admission makes hers, delivering to her own inbox only, within her namespaces only.
        refused = await ask(deliver_inbox=bobs_requests)
        assert refused["error"]["code"] == 400 and "deliver_inbox: " in refused["error"]["message"], refused
        refused = await ask(deliver_inbox="_INBOX.alice.x", filter_subject="$KV.vc-job.team-b.>")
        assert refused["error"]["code"] == 403 and "filter_subject: " in refused["error"]["message"], refused
        inbox = nc.new_inbox()
        delivered = await nc.subscribe(inbox)
        granted = await ask(deliver_inbox=inbox)
        assert granted.get("pending") == 1, granted
        message = await delivered.next_msg(timeout=10)
        assert message.subject == "$KV.vc-job.team-a.a-job"
    async with connect(tenants.url, name="admin", credentials=admin) as nc:
        with pytest.raises(nats.js.errors.NotFoundError):
            await nc.jetstream().consumer_info("KV_vc-job", "hijack")

    # vcctl reads through admission's consumers: a watch sees a new job arrive.
    env = {"VC_SERVER": tenants.url, "VC_NATS__CREDS": str(tenants.root / "alice.creds"), "PATH": "/usr/bin:/bin"}
    watch = await asyncio.create_subprocess_exec(
        str(BIN / "vcctl"), "job", "list", "-w", "-n", "team-a", stdout=asyncio.subprocess.PIPE, env=env
    )
    try:
        assert watch.stdout is not None
        stdout = watch.stdout

        async def shown(name: str) -> None:
            while name not in (await asyncio.wait_for(stdout.readline(), 30)).decode():
                pass

        await shown("a-job")
        applied = tenants.vcctl_as("alice", "apply", "-f", "-", stdin=job_in("team-a", "b-job"))
        assert applied.returncode == 0, applied.stderr
        await shown("b-job")
    finally:
        watch.kill()
        await watch.wait()
    history = tenants.vcctl_as("alice", "events", "-n", "team-a")
    assert history.returncode == 0 and "a-job" in history.stdout, history.stderr


async def test_a_jobs_ssh_secret_is_neither_readable_nor_replaceable(tenants: Tenants) -> None:
    assert (
        tenants.vcctl_as("alice", "apply", "-f", "-", stdin=job_in("team-a", "mpi", "lm-mpi-job.yaml")).returncode == 0
    )

    async def has_key() -> bool:
        try:
            return bool(await tenants.store_call(lambda s: s.get(Secret, "team-a", "mpi-ssh")))
        except NotFound:
            return False

    await eventually(has_key, timeout=30, interval=0.2)
    original = await tenants.store_call(lambda s: s.get(Secret, "team-a", "mpi-ssh"))

    # Reading it from the bucket: the server refuses alice (and the admin, and the scheduler).
    for who in ("alice", "admin", "scheduler", "node-sim", "dashboard"):
        credentials = tenants.people.get(who) or tenants.bus.credentials(who)
        async with probe(tenants.url, credentials) as p:
            assert not await p.may_publish("$JS.API.STREAM.MSG.GET.KV_vc-secret"), who
            assert not await p.may_publish("$JS.API.CONSUMER.CREATE.KV_vc-secret"), who
            assert not await p.may_subscribe("$KV.vc-secret.>"), who

    # Replacing its key with `vcctl apply`: refused for the tenant and for the admin alike.
    forged = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "mpi-ssh", "namespace": "team-a"},
        "type": "Opaque",
        "data": {"id_rsa": base64.b64encode(b"attacker's key").decode()},
    }
    for result in (
        tenants.vcctl_as("alice", "apply", "-f", "-", stdin=yaml.safe_dump(forged)),
        tenants.vcctl("apply", "-f", "-", stdin=yaml.safe_dump(forged)),
    ):
        assert result.returncode == 1 and "Secret 'team-a/mpi-ssh' is managed by Tephra" in result.stderr, result.stderr
    deleted = tenants.vcctl_as(
        "alice",
        "apply",
        "-f",
        "-",
        stdin=yaml.safe_dump(
            {
                **forged,
                "metadata": {
                    "name": "mine",
                    "namespace": "team-a",
                    "labels": {"app.kubernetes.io/managed-by": "tephra"},
                },
            }
        ),
    )
    assert deleted.returncode == 1 and "managed by Tephra" in deleted.stderr
    after = await tenants.store_call(lambda s: s.get(Secret, "team-a", "mpi-ssh"))
    assert after.data == original.data
    assert (await tenants.store_call(lambda s: s.get(Job, "team-a", "mpi"))).metadata.name == "mpi"


async def test_service_subjects_are_closed_to_users(tmp_path: Path) -> None:
    tenants = Tenants(tmp_path)  # the server alone: this is between the clients and it
    tenants.server.start()
    try:
        await _service_subjects_are_closed(tenants)
    finally:
        tenants.server.stop()


async def _service_subjects_are_closed(tenants: Tenants) -> None:
    for who in ("alice", "admin"):
        credentials = tenants.people.get(who) or tenants.bus.credentials(who)
        async with probe(tenants.url, credentials) as p:
            # Straight into the store, past admission: an invalid Pod, another tenant's job deleted.
            assert not await p.may_publish("$KV.vc-pod.team-a.bad-pod"), who
            assert not await p.may_publish("$KV.vc-job.team-b.b-job"), who
            # Forged history, a service's request subjects, someone else's replies.
            assert not await p.may_publish("vc.evt.job.team-b.b-job"), who
            assert not await p.may_subscribe(subjects.ADMISSION_WRITE_ANY), who
            assert not await p.may_subscribe("_INBOX.>"), who
            # Only the admin may make a simulated node (Not)Ready.
            assert await p.may_publish(subjects.NODE_SIM_CONTROL) == (who == "admin"), who


def plain_pod(name: str, namespace: str, queue: str | None) -> dict[str, Any]:
    annotations = {"scheduling.volcano.sh/queue-name": queue} if queue else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }


async def test_a_plain_pod_cannot_draw_on_a_queue_its_namespace_may_not_use(tenants: Tenants) -> None:
    team_a = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "team-a"},
        "spec": {"weight": 1, "allowedNamespaces": ["team-a"]},
    }
    tenants.submit(team_a)

    # Through admission: refused with the field and the rule, and nothing is stored.
    refused = tenants.vcctl_as("bob", "apply", "-f", "-", stdin=yaml.safe_dump(plain_pod("sneaky", "team-b", "team-a")))
    assert refused.returncode == 1
    assert (
        "metadata.annotations[scheduling.volcano.sh/queue-name]: namespace `team-b` is not allowed to submit "
        "to queue `team-a`" in refused.stderr
    ), refused.stderr
    with pytest.raises(NotFound):
        await tenants.store_call(lambda s: s.get(Pod, "team-b", "sneaky"))
    # Her own queue, and bob's pod that names none (it goes to `default`): accepted.
    for who, document in (
        ("alice", plain_pod("mine", "team-a", "team-a")),
        ("bob", plain_pod("plain", "team-b", None)),
    ):
        accepted = tenants.vcctl_as(who, "apply", "-f", "-", stdin=yaml.safe_dump(document))
        assert accepted.returncode == 0, accepted.stderr

    # Past admission (a pod written straight into the store): the podgroup controller makes no PodGroup
    # in team-a for it, while the admitted pods get theirs.
    forged = msgspec.convert(plain_pod("forged", "team-b", "team-a"), Pod)
    forged = msgspec.structs.replace(forged, metadata=msgspec.structs.replace(forged.metadata, uid="forged-uid"))
    await tenants.store_call(lambda s: s.create(forged))

    async def grouped(namespace: str, name: str) -> bool:
        pod = await tenants.store_call(lambda s: s.get(Pod, namespace, name))
        return "scheduling.k8s.io/group-name" in (pod.metadata.annotations or {})

    for namespace, name in (("team-a", "mine"), ("team-b", "plain")):
        await eventually(lambda ns=namespace, n=name: grouped(ns, n), timeout=30, interval=0.2)
    podgroups = tenants.services["podgroup-controller"]
    await eventually(lambda: "team-b/forged" in podgroups.log_text(), timeout=30, interval=0.2, what="refused")
    assert not await grouped("team-b", "forged")
    groups, _ = await tenants.store_call(lambda s: s.list(PodGroup, "team-b"))
    assert groups and all(g.spec is None or g.spec.queue != "team-a" for g in groups)


async def test_a_tenants_text_cannot_drive_the_terminal_of_whoever_reads_it(tenants: Tenants) -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J\x1b[31mFAKE: job deleted\x1b[0m"
    document = yaml.safe_load(job_in("team-a", "title"))
    document["metadata"]["annotations"] = {"note": hostile}
    applied = tenants.vcctl_as("alice", "apply", "-f", "-", stdin=yaml.safe_dump(document))
    assert applied.returncode == 0, applied.stderr

    for args in (("describe", "job", "title", "-n", "team-a"), ("job", "list", "-n", "team-a")):
        shown = tenants.vcctl(*args)
        assert shown.returncode == 0 and "title" in shown.stdout, shown.stderr
        assert not {"\x1b", "\x07"} & set(shown.stdout + shown.stderr), args
    described = tenants.vcctl("describe", "job", "title", "-n", "team-a").stdout
    assert "\\x1b]0;owned\\x07\\x1b[2J" in described
    # -o json and -o yaml carry the exact value.
    for fmt, load in (("json", json.loads), ("yaml", yaml.safe_load)):
        out = tenants.vcctl("job", "view", "-N", "title", "-n", "team-a", "-o", fmt)
        assert load(out.stdout)["metadata"]["annotations"]["note"] == hostile, fmt
    # -o jsonpath prints values bare, as a table does: escaped the same way.
    picked = tenants.vcctl("job", "view", "-N", "title", "-n", "team-a", "-o", "jsonpath={.metadata.annotations.note}")
    assert picked.returncode == 0 and picked.stdout == hostile.encode("unicode_escape").decode(), picked
    # An error that names what the user typed.
    missing = tenants.vcctl("describe", "job", "no\x1b[2Jsuch", "-n", "team-a")
    assert missing.returncode == 1 and "\x1b" not in missing.stderr and "\\x1b[2J" in missing.stderr, missing.stderr
