"""Nothing a client sends takes Tephra down.

Each test sends what a careless or hostile client could (garbage on a subject, garbage values in the
buckets, objects that skipped admission) to real service processes on a real nats-server, then checks
that every affected service is still up and still serves good input.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import msgspec
import pytest
from nats.aio.client import Client
from nats.js.errors import BucketNotFoundError
from prometheus_client import REGISTRY

from tests.support.services import ServiceProcess, eventually
from tests.support.system import System, start_system
from vc_bus.connection import connect
from vc_bus.decoding import CorruptObject
from vc_bus.events import EventPublisher, ensure_events_stream, follow
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_cli.up import ensure_default_queues
from vc_core.errors import NotFound
from vc_core.store import WatchOp
from vc_job_controller.delays import BUCKET as DELAYS_BUCKET
from vc_proto import api, codec, subjects
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.core import CORE_V1, Container, Node, Pod, PodSpec, ResourceRequirements
from vc_proto.events import DomainEvent
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import PodGroup
from vc_proto.selectors import pods_bound_to
from vc_runtime.informer import Informer

pytestmark = [pytest.mark.nats, pytest.mark.integration]
_reply = msgspec.json.Decoder(api.WriteReply)
VCCTL = str(Path(sys.executable).parent / "vcctl")


def vcctl(server: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VC_SERVER": server}
    return subprocess.run([VCCTL, *args], capture_output=True, text=True, env=env, input=stdin, timeout=60)


def metric(service: ServiceProcess, name: str, **labels: str) -> float:
    """One sample from the service's /metrics (0 when absent)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{service.health_port}/metrics", timeout=2) as response:
        text = response.read().decode()
    wanted = {f'{k}="{v}"' for k, v in labels.items()}
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{name}\{{(.*)\}} (\S+)$", line)
        if match and wanted <= set(match.group(1).split(",")):
            total += float(match.group(2))
    return total


def assert_alive(*services: ServiceProcess) -> None:
    for service in services:
        died = f"{service.binary} died: {service.log_text()[-3000:]}"
        assert service.proc is not None and service.proc.poll() is None, died
        assert service.ready(), f"{service.binary} is not ready: {service.log_text()[-3000:]}"


@pytest.fixture
async def admission(nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[ServiceProcess]:
    await ensure_default_queues(nats_server.url)
    service = ServiceProcess("vc-admission", nats_server.url, [], tmp_path / "admission.log").start()
    await service.wait_ready()
    yield service
    service.stop_quietly()


async def write(nc: Client, payload: bytes) -> api.WriteReply:
    return _reply.decode((await nc.request(subjects.ADMISSION_WRITE, payload, timeout=10)).data)


QUEUE = (
    b'{"operation":"create","object":{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",'
    b'"metadata":{"name":"q1"}}}'
)


async def test_one_byte_on_the_admission_subject_is_refused_and_admission_keeps_serving(
    admission: ServiceProcess, nc: Client
) -> None:
    garbage = [b"\xff", b"[", b"", b'{"operation":"create","object":' + b"[" * 5000 + b"]" * 5000 + b"}"]
    for payload in garbage:
        await nc.publish(subjects.ADMISSION_WRITE, payload)  # no reply subject: nobody to answer
    for payload in garbage:
        reply = await write(nc, payload)
        assert reply.error is not None and reply.error.code == api.INVALID, reply
        assert reply.error.message.startswith("malformed write request")
    assert_alive(admission)
    created = await write(nc, QUEUE)
    assert created.error is None and b'"q1"' in bytes(created.object)
    labels = {"source": subjects.ADMISSION_WRITE, "kind": "WriteRequest"}
    assert metric(admission, "tephra_decode_errors_total", **labels) == 2 * len(garbage)


# -- one bad store entry must not crash-loop anything --------------------------------------------------

GARBAGE_JOBS = {
    "default.garbage": b"\xff",
    "default.a-pod": b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a-pod","namespace":"default"}}',
    "default.elsewhere": b'{"kind":"Job","apiVersion":"batch.volcano.sh/v1alpha1","metadata":{"name":"x"}}',
}
BAD_POD = b'{"kind":"Pod","apiVersion":"v1","metadata":5}'
DEEP_POD = b'{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"name":"a","livenessProbe":{"a":%s}}]}}' % (
    b"[" * 3000 + b"]" * 3000
)


async def put_raw(nc: Client, kind: str, key: str, value: bytes) -> int:
    """What any client on the bus can do: write bytes straight into a bucket, past admission."""
    kv = await nc.jetstream().key_value(subjects.bucket(kind))
    return await kv.put(key, value)


def a_job(name: str) -> Job:
    return Job(api_version=BATCH_V1ALPHA1, metadata=ObjectMeta(name=name, namespace="default"))


def skipped(kind: str) -> float:
    labels = {"source": subjects.bucket(kind), "kind": kind}
    return REGISTRY.get_sample_value("tephra_decode_errors_total", labels) or 0.0


async def test_bad_values_are_skipped_by_watch_and_list_and_get_raises_corrupt_object(
    nats_store: NatsStore, nc: Client
) -> None:
    await nats_store.create(a_job("good"))
    for key, value in GARBAGE_JOBS.items():
        await put_raw(nc, "Job", key, value)
    before = skipped("Job")
    jobs, _ = await nats_store.list(Job)
    assert [j.metadata.name for j in jobs] == ["good"]
    assert skipped("Job") == before + len(GARBAGE_JOBS)
    with pytest.raises(CorruptObject, match=r"default\.garbage"):
        await nats_store.get(Job, "default", "garbage")
    with pytest.raises(CorruptObject, match="it is a Pod"):
        await nats_store.get(Job, "default", "a-pod")

    seen: list[str] = []

    async def watch() -> None:
        async for event in nats_store.watch(Job):
            if event.op is WatchOp.PUT:
                seen.append(event.name)
                if event.name == "later":
                    return

    async with asyncio.timeout(20), asyncio.TaskGroup() as tg:
        tg.create_task(watch())
        await put_raw(nc, "Job", "default.live-garbage", b"{")
        await nats_store.create(a_job("later"))
    assert seen == ["good", "later"]

    with pytest.raises(CorruptObject):  # a precondition cannot hold on a value that is not an object
        await nats_store.delete(Job, "default", "garbage", uid="some-uid")
    await nats_store.delete(Job, "default", "garbage")  # no precondition: the bad value goes
    with pytest.raises(NotFound):
        await nats_store.get(Job, "default", "garbage")


async def test_a_selected_watch_lets_what_its_selector_cannot_read_through_to_be_reported(
    nats_store: NatsStore, nc: Client
) -> None:
    """A selector reads a few fields; bytes it cannot read (not JSON, deeply nested) go on to the decoder,
    which reports them, and the watch goes on (a selector that raised would have stuck it for ever)."""
    container = [Container(name="c", image="busybox")]
    created = await nats_store.create(
        Pod(
            api_version=CORE_V1,
            metadata=ObjectMeta(name="good", namespace="default"),
            spec=PodSpec(containers=container),
        )
    )
    await nats_store.bind(created, "n1")
    before = skipped("Pod")
    await put_raw(nc, "Pod", "default.deep", DEEP_POD)
    await put_raw(nc, "Pod", "default.not-json", b"\xff")
    seen = []
    async with asyncio.timeout(20):
        async for event in nats_store.watch(Pod, select=pods_bound_to({"n1"})):
            if event.op is WatchOp.SYNCED:
                break
            if event.op is WatchOp.PUT:
                seen.append(event.name)
    assert seen == ["good"]
    assert skipped("Pod") == before + 2


async def test_an_informer_survives_a_handler_that_chokes_on_one_object(nats_store: NatsStore) -> None:
    def on_change(old: Job | None, new: Job | None) -> None:
        if new is not None and new.metadata.name == "poison":
            raise ValueError("this handler cannot digest it")

    informer = Informer(nats_store, Job, on_change=on_change)
    stop = asyncio.Event()
    labels = {"source": "informer:Job", "kind": "Job"}
    before = REGISTRY.get_sample_value("tephra_decode_errors_total", labels) or 0.0
    async with asyncio.TaskGroup() as tg:
        tg.create_task(informer.run(stop))
        await nats_store.create(a_job("poison"))
        await nats_store.create(a_job("after"))

        async def has_after() -> bool:
            return informer.get("default", "after") is not None

        await eventually(has_after, timeout=10)
        stop.set()
    assert REGISTRY.get_sample_value("tephra_decode_errors_total", labels) == before + 1


async def test_garbage_on_an_event_subject_is_skipped_and_history_ends(nats_server: NatsServer, nc: Client) -> None:
    await ensure_events_stream(nc)
    publisher = EventPublisher(nc)
    subject = subjects.event_subject("job", "default", "train")
    js = nc.jetstream()
    await js.publish(subject, b"\xff")
    for i in range(3):
        await publisher.publish(
            DomainEvent(
                id=f"e{i}",
                occurred_at="2030-01-01T00:00:00Z",
                source="test",
                kind="Job",
                namespace="default",
                name="train",
                job="train",
                reason=f"Step{i}",
            )
        )
    await js.publish(subject, b'{"id": 5}')  # the last message is garbage too
    async with asyncio.timeout(20):
        events = [
            s.event.reason
            async for s in follow(nc, subjects.event_filter("job", "default", "train"), stop_when_caught_up=True)
        ]
    assert events == ["Step0", "Step1", "Step2"]
    result = await asyncio.to_thread(vcctl, nats_server.url, "job", "history", "-N", "train")
    assert result.returncode == 0, result.stderr
    assert [line.split()[3] for line in result.stdout.splitlines()] == ["Step0", "Step1", "Step2"]
    assert result.stderr.count("warning: decode.skipped") == 2 and "Traceback" not in result.stderr


def small_job(name: str, *, replicas: int = 1, duration: str = "1s") -> dict[str, object]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    template = {
        "metadata": {"annotations": {"sim.tephra.dev/duration": duration}},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    tasks = [{"name": "work", "replicas": replicas, "template": template}]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"schedulerName": "volcano", "tasks": tasks},
    }


DEEP_JOB = (
    b'{"kind":"Job","apiVersion":"batch.volcano.sh/v1alpha1","metadata":{"name":"deep","namespace":"default"},'
    b'"spec":{"tasks":[{"template":{"spec":{"containers":[{"name":"a","livenessProbe":{"a":%s}}]}}}]}}'
    % (b"[" * 3000 + b"]" * 3000)
)
# (bucket kind, key, value): garbage anyone on the bus could write. The scheduler's own cache is not
# under test here (a deeply nested value goes only where it does not watch).
STORE_GARBAGE = [
    *(("Job", key, value) for key, value in GARBAGE_JOBS.items()),
    ("Job", "default.deep", DEEP_JOB),
    ("Pod", "default.bad-pod", BAD_POD),
    ("Pod", "default.not-json", b"\xff"),
    ("PodGroup", "default.bad-pg", b"\xff"),
    ("Queue", "_.bad-queue", b"\xff"),
    ("Command", "default.bad-command", b'{"kind":"Command","apiVersion":"bus.volcano.sh/v1alpha1","metadata":[]}'),
    ("PriorityClass", "_.bad-pc", b"\xff"),
    ("Node", "_.node-1", b"\xff"),  # over one of node-sim's own nodes
]
# Which buckets each service reads through the store (so its decode-error count must grow).
WATCHED = {
    "admission": ("Job", "Queue", "PodGroup"),
    "job-controller": ("Job", "Pod", "PodGroup", "Command", "PriorityClass"),
    "queue-controller": ("Queue", "PodGroup", "Command"),
    "podgroup-controller": ("Pod",),
    "gc": ("Job", "Pod", "PodGroup"),
    "node-sim": ("Pod",),
}


async def put_garbage(url: str) -> None:
    async with connect(url, name="hostile") as nc:
        for kind, key, value in STORE_GARBAGE:
            await put_raw(nc, kind, key, value)
        await put_raw_delay(nc)
        await nc.jetstream().publish(subjects.event_subject("job", "default", "good"), b"\xff")


async def put_raw_delay(nc: Client) -> None:
    js = nc.jetstream()
    try:
        kv = await js.key_value(DELAYS_BUCKET)
    except BucketNotFoundError:
        kv = await js.create_key_value(bucket=DELAYS_BUCKET)
    await kv.put("default.good.p-0", b"\xff")
    await kv.put("nonsense", b"{}")


async def wait_counted(system: System) -> None:
    """Each service has met the garbage in every bucket it reads (a condition, not a sleep)."""
    for name, kinds in WATCHED.items():
        service = system.services[name]
        for kind in kinds:

            async def counted(service: ServiceProcess = service, kind: str = kind) -> bool:
                source = subjects.bucket(kind)
                return await asyncio.to_thread(metric, service, "tephra_decode_errors_total", source=source) > 0

            await eventually(counted, timeout=30)


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_bad_store_entries_crash_no_service_and_a_good_job_still_completes(tmp_path: Path) -> None:
    system = await start_system(tmp_path, nodes=2)
    try:
        await put_garbage(system.url)
        await wait_counted(system)
        assert_alive(*system.services.values())
        for service in system.services.values():  # each replays the garbage on start: no crash loop
            service.kill()
            service.start()
        for service in system.services.values():
            await service.wait_ready(timeout=60)
        await wait_counted(system)
        assert_alive(*system.services.values())

        await system.apply(small_job("good", replicas=2))
        await system.wait_phase("good", "Completed", timeout=90)
        assert_alive(*system.services.values())
        listed = await asyncio.to_thread(system.vcctl, "job", "list")
        assert listed.returncode == 0 and "good" in listed.stdout and "Traceback" not in listed.stderr
        assert "warning: decode.skipped" in listed.stderr and "default.garbage" in listed.stderr
        pods = await asyncio.to_thread(system.vcctl, "pod", "list")
        assert pods.returncode == 0 and "good-work-0" in pods.stdout, pods.stderr
        removed = await asyncio.to_thread(system.vcctl, "job", "delete", "-N", "garbage")
        assert removed.returncode == 0, removed.stderr
        history = await asyncio.to_thread(system.vcctl, "job", "history", "-N", "good")
        assert history.returncode == 0 and "PhaseChanged" in history.stdout
    finally:
        system.stop()


# -- objects that skipped admission are not acted on ----------------------------------------------------


def bypassing_job(name: str, *, replicas: int, queue: str) -> Job:
    document = small_job(name, replicas=replicas, duration="2s")
    document["spec"]["queue"] = queue  # type: ignore[index]
    document["metadata"]["namespace"] = "default"  # type: ignore[index]
    job = codec.from_dict(document)
    assert isinstance(job, Job)
    return job


def pod_on(name: str, node: str | None, *, gpus: str | None = None, containers: bool = True) -> Pod:
    requests = {"cpu": "1", **({"nvidia.com/gpu": gpus} if gpus else {})}
    main = Container(name="main", resources=ResourceRequirements(requests=requests))
    scheduler = None if node else "volcano"
    spec = PodSpec(node_name=node, scheduler_name=scheduler, containers=[main] if containers else None)
    meta = ObjectMeta(name=name, namespace="default", annotations={"sim.tephra.dev/duration": "1h"})
    return Pod(api_version=CORE_V1, metadata=meta, spec=spec)


async def job_state(system: System, name: str) -> tuple[str | None, str | None, str | None]:
    job = await system.job(name)
    state = job.status.state if job.status else None
    return (state.phase, state.reason, state.message) if state else (None, None, None)


async def pod_status(system: System, name: str) -> tuple[str | None, str | None, str | None]:
    pod = await system.store_call(lambda s: s.get(Pod, "default", name))
    return (pod.status.phase, pod.status.reason, pod.status.message) if pod.status else (None, None, None)


async def wait_until(check: Callable[[], Awaitable[bool]], system: System) -> None:
    try:
        await eventually(check, timeout=60, interval=0.2)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{system.logs()}") from exc


async def owned_podgroups(system: System, *uids: str | None) -> list[str]:
    groups, _ = await system.store_call(lambda s: s.list(PodGroup, "default"))
    return [g.metadata.name or "" for g in groups if any(o.uid in uids for o in g.metadata.owner_references or [])]


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_objects_that_skipped_admission_are_not_acted_on_and_nodes_never_overcommitted(tmp_path: Path) -> None:
    system = await start_system(tmp_path, nodes=2, node_gpu="1")
    try:
        store_create = lambda obj: system.store_call(lambda s: s.create(obj))  # noqa: E731  (straight into the store)
        bypass = await store_create(bypassing_job("bypass", replicas=-5, queue="nowhere"))
        await store_create(bypassing_job("early", replicas=1, queue="later"))
        await store_create(pod_on("greedy", "node-0", gpus="100"))
        await store_create(pod_on("holder", "node-1", gpus="1"))
        empty = await store_create(pod_on("empty", None, containers=False))

        async def refused(name: str, rule_text: str) -> bool:
            _, reason, message = await job_state(system, name)
            return reason == "Invalid" and rule_text in (message or "")

        await wait_until(lambda: refused("bypass", "'replicas' must be >= 0"), system)
        await wait_until(lambda: refused("early", 'queue.scheduling.volcano.sh "later" not found'), system)

        async def pod_reason(name: str, phase: str, reason: str | None) -> bool:
            status = await pod_status(system, name)
            return status[0] == phase and status[1] == reason

        await wait_until(lambda: pod_reason("greedy", "Failed", "OutOfnvidia.com/gpu"), system)
        _, _, message = await pod_status(system, "greedy")
        assert message == (
            "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu, requested: 100, used: 0, capacity: 1"
        )
        await wait_until(lambda: pod_reason("holder", "Running", None), system)
        await store_create(pod_on("second", "node-1", gpus="1"))  # the node's one GPU is taken
        await wait_until(lambda: pod_reason("second", "Failed", "OutOfnvidia.com/gpu"), system)
        assert "used: 1, capacity: 1" in ((await pod_status(system, "second"))[2] or "")

        pgc = system.services["podgroup-controller"]

        async def pgc_refused() -> bool:
            return await asyncio.to_thread(metric, pgc, "tephra_refused_objects_total", kind="Pod") > 0

        await wait_until(pgc_refused, system)

        created = await asyncio.to_thread(system.vcctl, "queue", "create", "-N", "later")  # now "early" may run
        assert created.returncode == 0, created.stderr
        await system.wait_phase("early", "Completed", timeout=90)
        await system.apply(small_job("good", replicas=2))
        await system.wait_phase("good", "Completed", timeout=90)

        assert await owned_podgroups(system, bypass.metadata.uid, empty.metadata.uid) == []
        assert (await job_state(system, "bypass"))[1] == "Invalid"
        history = await asyncio.to_thread(system.vcctl, "job", "history", "-N", "bypass")
        assert "Invalid" in history.stdout and "not acted on" in history.stdout
        assert_alive(*system.services.values())
    finally:
        system.stop()


# -- local input, quantities, durations, booleans ----------------------------------------------------

LAUGHS = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: lol\n  annotations:\n    a: &a [l, l, l, l, l, l, l, l, l]\n"
BILLION_LAUGHS = LAUGHS + "".join(
    f"    {x}: &{x} [{', '.join([f'*{p}'] * 9)}]\n" for p, x in zip("abcdefgh", "bcdefghi", strict=True)
)
TEN_MIB = "x" * (10 * 1024 * 1024)
HOSTILE_FILES = {
    "ten-mib.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: big, annotations: {a: " + TEN_MIB + "}}\n",
    "deep.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: deep}\nspec: " + "[" * 50_000 + "]" * 50_000 + "\n",
    "laughs.yaml": BILLION_LAUGHS,
    "list-key.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: k}\n? [1, 2]\n: 3\n",
}


async def test_vcctl_refuses_huge_deep_and_aliased_files_in_one_line(nats_server: NatsServer, tmp_path: Path) -> None:
    for name, content in HOSTILE_FILES.items():
        path = tmp_path / name
        path.write_text(content)
        result = await asyncio.to_thread(vcctl, nats_server.url, "apply", "-f", str(path))
        assert result.returncode == 2, (name, result.stderr[-2000:])
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, (name, result.stderr[-2000:])


def job_with(name: str, *, requests: dict[str, str], annotations: dict[str, str] | None = None) -> str:
    document = small_job(name)
    template = document["spec"]["tasks"][0]["template"]  # type: ignore[index]
    template["spec"]["containers"][0]["resources"]["requests"] = requests
    template["metadata"]["annotations"] = annotations or {}
    return json.dumps(document)


@pytest.mark.parametrize(
    ("requests", "annotations", "field", "message"),
    [
        pytest.param({"cpu": "1e29"}, None, "requests[cpu]", "must be at most", id="cpu-1e29"),
        pytest.param(
            {"cpu": "1", "nvidia.com/gpu": "0.5"}, None, "requests[nvidia.com/gpu]", "must be an integer", id="half-gpu"
        ),
        pytest.param(
            {"cpu": "1"},
            {"sim.tephra.dev/duration": "-5s"},
            "annotations[sim.tephra.dev/duration]",
            "is negative",
            id="negative-duration",
        ),
    ],
)
async def test_admission_refuses_absurd_quantities_fractional_devices_and_negative_durations(
    admission: ServiceProcess,
    nats_server: NatsServer,
    requests: dict[str, str],
    annotations: dict[str, str] | None,
    field: str,
    message: str,
) -> None:
    document = job_with("absurd", requests=requests, annotations=annotations)
    result = await asyncio.to_thread(vcctl, nats_server.url, "job", "run", "-f", "-", stdin=document)
    assert result.returncode == 1 and field in result.stderr and message in result.stderr, result.stderr
    listed = await asyncio.to_thread(vcctl, nats_server.url, "job", "list")
    assert listed.stdout.strip() == "No resources found"
    assert_alive(admission)


@pytest.fixture
async def node_sim(nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[ServiceProcess]:
    args = ["--nodes", "2", "--start-delay", "0.1"]
    service = ServiceProcess("vc-node-sim", nats_server.url, args, tmp_path / "node-sim.log")
    service.start()
    await service.wait_ready()
    yield service
    service.stop_quietly()


def sim_pod(name: str, duration: str) -> Pod:
    meta = ObjectMeta(name=name, namespace="default", annotations={"sim.tephra.dev/duration": duration})
    spec = PodSpec(node_name="node-0", containers=[Container(name="main")])
    return Pod(api_version=CORE_V1, metadata=meta, spec=spec)


async def test_node_sim_fails_bad_durations_reads_ready_strictly_and_survives_bad_times(
    node_sim: ServiceProcess, nats_store: NatsStore, nc: Client
) -> None:
    async def status_of(name: str) -> tuple[str | None, str | None, str | None]:
        pod = await nats_store.get(Pod, "default", name)
        return (pod.status.phase, pod.status.reason, pod.status.message) if pod.status else (None, None, None)

    async def reached(name: str, phase: str) -> None:
        async def check() -> bool:
            return (await status_of(name))[0] == phase

        await eventually(check, timeout=20)

    await nats_store.create(sim_pod("negative", "-5s"))
    running = await nats_store.create(sim_pod("changed", "1h"))
    await reached("negative", "Failed")
    _, reason, message = await status_of("negative")
    assert reason == "Invalid" and "sim.tephra.dev/duration" in (message or "")
    await reached("changed", "Running")
    current = await nats_store.get(Pod, "default", "changed")
    await nats_store.update(
        msgspec.structs.replace(
            current, metadata=msgspec.structs.replace(current.metadata, annotations={"sim.tephra.dev/duration": "soon"})
        )
    )
    await reached("changed", "Failed")
    assert (await status_of("changed"))[1] == "Invalid" and running.metadata.uid

    async def control(payload: bytes) -> dict[str, object]:
        reply = await nc.request(subjects.NODE_SIM_CONTROL, payload, timeout=10)
        decoded: dict[str, object] = json.loads(reply.data)
        return decoded

    for garbage in (b"\xff", b'{"node": "node-1", "ready": "maybe"}', b'{"node": "node-1", "ready": 1}', b"[" * 5000):
        assert "error" in await control(garbage)
    assert await control(b'{"node": "node-1", "ready": "false"}') == {"ok": True}
    node = await nats_store.get(Node, None, "node-1")
    assert [c.status for c in (node.status.conditions if node.status else None) or [] if c.type == "Ready"] == ["False"]

    # Timestamps that are not times, on a node and on a running pod: node-sim serves on.
    assert node.status is not None
    bad_time = [msgspec.structs.replace(c, last_transition_time="yesterday") for c in node.status.conditions or []]
    status = msgspec.structs.replace(node.status, conditions=bad_time)
    await nats_store.update(msgspec.structs.replace(node, status=status))
    assert await control(b'{"node": "node-1", "ready": "false"}') == {"ok": True}
    await nats_store.create(sim_pod("doomed", "1h"))
    await reached("doomed", "Running")
    doomed = await nats_store.get(Pod, "default", "doomed")
    await nats_store.update(
        msgspec.structs.replace(
            doomed, metadata=msgspec.structs.replace(doomed.metadata, deletion_timestamp="not a time")
        )
    )
    await nats_store.create(sim_pod("fine", "1s"))
    await reached("fine", "Succeeded")
    assert_alive(node_sim)
    assert await asyncio.to_thread(metric, node_sim, "tephra_decode_errors_total", source="node-sim:plan") > 0
