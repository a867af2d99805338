"""The client API's events against a real nats-server: resumed across a restart with nothing lost or
repeated, selected by namespace, job, kind and queue, read after a cursor exactly once, refused when
the cursor's history is no longer kept, and held by the server to a tenant's namespaces."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from nats.aio.client import Client

from tests.support.secure import session_bus
from tests.support.services import ServiceProcess
from tests.support.system import BIN
from tests.support.waiting import eventually
from vc_bus.connection import connect
from vc_bus.events import EventPublisher, ensure_events_stream
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_cli.sdk import Cursor, CursorExpired, Event, ReadRefused, TephraClient, open_client
from vc_core.errors import InvalidObject
from vc_proto import subjects
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec
from vc_proto.events import DomainEvent
from vc_proto.meta import ObjectMeta
from vc_security.credentials import write_private

pytestmark = [pytest.mark.nats]


def fact(
    i: int,
    *,
    namespace: str = "team-a",
    job: str | None = "train",
    kind: str = "Pod",
    queue: str | None = None,
    name: str | None = None,
) -> DomainEvent:
    return DomainEvent(
        id=f"{namespace}-{job}-{kind}-{i}",
        occurred_at="2026-01-01T00:00:00Z",
        source="test",
        kind=kind,
        namespace=namespace if kind != "Queue" else None,
        name=name or f"{job}-w-{i}",
        reason="PodStarted",
        job=job,
        queue=queue,
    )


def admin_creds() -> str:
    return str(session_bus().auth.creds_path("admin"))


async def read(client: TephraClient, count: int | None = None, **filters: object) -> list[Event]:
    """Events until caught up (`count` None), or the first `count` of a live read."""
    got: list[Event] = []
    async for item in client.events(live=count is not None, **filters):  # type: ignore[arg-type]
        got.append(item)
        if count is not None and len(got) == count:
            break
    return got


def ids(events: list[Event]) -> list[str]:
    return [e.event.id for e in events]


@pytest.fixture
async def harness(nats_server: NatsServer) -> AsyncIterator[Client]:
    async with connect(nats_server.url, name="harness") as nc:
        await ensure_events_stream(nc)
        yield nc


@pytest.fixture
async def admin(nats_server: NatsServer) -> AsyncIterator[TephraClient]:
    async with open_client(nats_server.url, creds=admin_creds()) as client:
        yield client


async def test_a_live_read_resumes_across_a_server_restart_with_nothing_lost_or_repeated(tmp_path: Path) -> None:
    server = session_bus().server(tmp_path / "nats")
    server.start()
    try:
        async with connect(server.url, name="pub") as pub, open_client(server.url, creds=admin_creds()) as client:
            await ensure_events_stream(pub)
            publisher = EventPublisher(pub)
            received: list[Event] = []

            async def reader() -> None:
                async for item in client.events(namespace="team-a"):
                    received.append(item)
                    if len(received) == 40:
                        return

            async def publish(first: int) -> None:  # singles and batches of 3 (a batch is one message)
                if first % 2:
                    await publisher.publish(fact(first))
                else:
                    await publisher.publish_batch([fact(first), fact(first, job="eval"), fact(first, job="serve")])

            async with asyncio.TaskGroup() as tg:
                tg.create_task(reader(), name="reader")
                for i in range(10):
                    await publish(i)
                await eventually(lambda: len(received) >= 20, timeout=10, interval=0.05, what="20 events read")
                server.restart()
                for i in range(10, 20):
                    await eventually(lambda i=i: _published(publish(i)), timeout=15, what=f"event {i} published")
    finally:
        server.stop()
    expected = []
    for i in range(20):
        jobs = ["train"] if i % 2 else ["train", "eval", "serve"]
        expected += [fact(i, job=job).id for job in jobs]
    assert ids(received) == expected
    assert [e.cursor for e in received] == sorted({e.cursor for e in received})  # ordered, none twice


async def _published(publishing: object) -> bool:
    try:
        await publishing  # type: ignore[misc]
    except Exception:
        return False
    return True


async def test_filters_select_the_namespace_the_job_the_kind_and_the_queue(
    harness: Client, admin: TephraClient
) -> None:
    publisher = EventPublisher(harness)
    await NatsStore(harness).create(
        Job(
            api_version=BATCH_V1ALPHA1,
            metadata=ObjectMeta(name="looked-up", namespace="team-b"),
            spec=JobSpec(queue="q1"),
        )
    )
    for event in [
        fact(0, kind="Job", name="train", queue="q1"),  # the job controller says the queue
        fact(1),  # the scheduler does not: the same job's queue, seen before
        fact(2, namespace="team-b", job="other", queue="q2"),
        fact(3, namespace="team-b", job="looked-up"),  # never said: the Job object's spec.queue
        fact(4, kind="Queue", job=None, name="q1"),
        fact(5, kind="Queue", job=None, name="q2"),
        fact(6, namespace="team-b", job="train", kind="Job", name="train", queue="q2"),
    ]:
        await publisher.publish(event)

    assert ids(await read(admin, namespace="team-a")) == [fact(0, kind="Job", name="train").id, fact(1).id]
    assert ids(await read(admin, namespace="team-b", job="train")) == [fact(6, namespace="team-b", kind="Job").id]
    assert ids(await read(admin, kinds=["Job"])) == [fact(0, kind="Job").id, fact(6, namespace="team-b", kind="Job").id]
    in_q1 = await read(admin, queue="q1")
    assert ids(in_q1) == [
        fact(0, kind="Job").id,
        fact(1).id,
        fact(3, namespace="team-b", job="looked-up").id,
        fact(4, kind="Queue", job=None).id,
    ]
    with pytest.raises(InvalidObject, match="job: a job is named within a namespace"):
        client_events = admin.events(job="train")
        await anext(aiter(client_events))
    with pytest.raises(InvalidObject, match="kinds: 'Pods' is not one of"):
        admin.events(kinds=["Pods"])


async def test_a_read_since_a_cursor_sees_each_later_event_once_even_inside_a_batch(
    harness: Client, admin: TephraClient
) -> None:
    publisher = EventPublisher(harness)
    await publisher.publish(fact(0))
    await publisher.publish_batch([fact(1), fact(2), fact(3)])
    await publisher.publish(fact(4))
    everything = await read(admin, namespace="team-a")
    assert [str(e.cursor) for e in everything] == ["1", "2", "2.1", "2.2", "3"]
    for position, item in enumerate(everything):
        after = await read(admin, namespace="team-a", since=str(item.cursor))
        assert ids(after) == ids(everything[position + 1 :])


async def test_a_cursor_older_than_what_is_kept_is_refused_naming_the_oldest(
    harness: Client, admin: TephraClient
) -> None:
    publisher = EventPublisher(harness)
    for i in range(6):
        await publisher.publish(fact(i))
    js = harness.jetstream()
    for sequence in (1, 2, 3):  # what the stream's age and size limits would have dropped
        await js.delete_msg(subjects.EVENTS_STREAM, sequence)
    with pytest.raises(CursorExpired, match=r"after cursor 2 is no longer kept .*oldest event kept is at 4") as caught:
        await read(admin, namespace="team-a", since=2)
    assert caught.value.oldest == 4
    assert ids(await read(admin, namespace="team-a", since=Cursor(3))) == [fact(i).id for i in (3, 4, 5)]


async def test_a_tenant_reads_its_own_namespaces_only_whatever_the_cursor(tmp_path: Path) -> None:
    bus = session_bus().fork(tmp_path / "auth")
    alice = bus.auth.add_tenant("alice", ["team-a"])
    write_private(tmp_path / "alice.creds", alice.encode())
    server = bus.server(tmp_path / "nats")
    server.start()
    # A tenant's reads go through consumers admission makes for it (vc_security.consumer_requests).
    identities = ["--identities", str(bus.auth.registry_path)]
    admission = ServiceProcess(
        "vc-admission", server.url, [*bus.identity_args("vc-admission"), *identities], tmp_path / "admission.log"
    )
    try:
        async with connect(server.url, name="harness") as nc:
            await ensure_events_stream(nc)
            await NatsStore(nc).ensure()  # the buckets, as the services make them
            publisher = EventPublisher(nc)
            for i in range(3):
                await publisher.publish(fact(i, namespace="team-b"))
                await publisher.publish(fact(i, namespace="team-a"))
        await admission.start().wait_ready(timeout=60)
        async with open_client(server.url, creds=str(tmp_path / "alice.creds")) as client:
            assert client.identity == "alice"
            own = await read(client, namespace="team-a")
            assert ids(own) == [fact(i, namespace="team-a").id for i in range(3)]
            async with asyncio.timeout(10):  # refused at once, not after a request's timeout
                with pytest.raises(ReadRefused, match="'alice': it may not read the history in namespace 'team-b'"):
                    await read(client, namespace="team-b")
                with pytest.raises(ReadRefused, match="across all namespaces"):
                    await read(client)
                with pytest.raises(ReadRefused, match="list Jobs in namespace 'team-b'"):
                    await client.jobs(namespace="team-b")
            # A cursor is a position, not a grant: from before team-b's last event, alice reads on in team-a.
            after = await read(client, namespace="team-a", since=own[0].cursor.sequence - 1)
            assert ids(after) == [fact(i, namespace="team-a").id for i in range(3)]
            assert ids(await read(client, namespace="team-a", since=own[0].cursor)) == ids(own[1:])
        env = {**os.environ, "VC_SERVER": server.url, "VC_NATS__CREDS": str(tmp_path / "alice.creds")}
        vcctl = [str(BIN / "vcctl"), "events", "-o", "json"]
        mine = await asyncio.to_thread(
            subprocess.run, [*vcctl, "-n", "team-a"], capture_output=True, text=True, env=env
        )
        assert [json.loads(line)["id"] for line in mine.stdout.splitlines()] == ids(own)
        refused = await asyncio.to_thread(
            subprocess.run, [*vcctl, "-n", "team-b"], capture_output=True, text=True, env=env
        )
        assert refused.returncode == 1 and refused.stdout == ""
        assert "NATS refused identity 'alice': it may not read the history in namespace 'team-b'" in refused.stderr
    finally:
        admission.stop_quietly()
        server.stop()


def job_object(name: str, queue: str, labels: dict[str, str] | None = None) -> Job:
    return Job(
        api_version=BATCH_V1ALPHA1,
        metadata=ObjectMeta(name=name, namespace="team-a", labels=labels),
        spec=JobSpec(queue=queue),
    )


async def test_jobs_and_watch_select_by_queue_and_labels_as_vcctl_does(harness: Client, admin: TephraClient) -> None:
    store = NatsStore(harness)
    await store.ensure()
    train = await store.create(job_object("train", "q1", {"app": "train"}))
    await store.create(job_object("serve", "q1", {"app": "serve"}))
    await store.create(job_object("other", "q2", {"app": "train"}))
    assert sorted(j.metadata.name or "" for j in await admin.jobs(namespace="team-a", queue="q1")) == ["serve", "train"]
    selected = await admin.jobs(namespace="team-a", queue="q1", selector="app=train")
    assert [j.metadata.name for j in selected] == ["train"]
    with pytest.raises(InvalidObject, match="selector"):
        await admin.jobs(selector="app in (")

    seen: list[tuple[str, str]] = []
    changes = admin.watch(namespace="team-a", selector="app=train")
    async for change in changes:
        seen.append((change.op.value, change.name))
        if change.op.value == "SYNCED":
            # No longer selected: the watch says it is gone from its view.
            relabelled = msgspec.structs.replace(train.metadata, labels={"app": "done"})
            await store.update(msgspec.structs.replace(train, metadata=relabelled))
        if change.op.value == "DELETE":
            break
    await changes.aclose()  # type: ignore[attr-defined]
    assert sorted(seen[:2]) == [("PUT", "other"), ("PUT", "train")]
    assert seen[2:] == [("SYNCED", ""), ("DELETE", "train")]


async def test_vcctl_events_watch_prints_events_as_they_come_across_a_server_restart(tmp_path: Path) -> None:
    server = session_bus().server(tmp_path / "nats")
    server.start()
    env = {**os.environ, "VC_SERVER": server.url, **session_bus().admin_env()}
    lines: list[str] = []
    try:
        async with connect(server.url, name="pub") as pub:
            await ensure_events_stream(pub)
            publisher = EventPublisher(pub)
            await publisher.publish(fact(0))
            watch = await asyncio.create_subprocess_exec(
                str(BIN / "vcctl"), "events", "-w", "-n", "team-a", "-o", "json",
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            )  # fmt: skip
            assert watch.stdout is not None
            try:
                lines.append((await asyncio.wait_for(watch.stdout.readline(), 30)).decode())
                await publisher.publish_batch([fact(1), fact(2)])
                lines += [(await asyncio.wait_for(watch.stdout.readline(), 30)).decode() for _ in range(2)]
                server.restart()
                await eventually(lambda: _published(publisher.publish(fact(3))), timeout=15, what="published again")
                lines.append((await asyncio.wait_for(watch.stdout.readline(), 30)).decode())
            finally:
                watch.terminate()
                await watch.wait()
    finally:
        server.stop()
    printed = [json.loads(line) for line in lines]
    assert [e["id"] for e in printed] == [fact(i).id for i in range(4)]
    assert [e["cursor"] for e in printed] == ["1", "2", "2.1", "3"]
