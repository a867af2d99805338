"""Fuzzed input on the bus against the whole embedded system (a real nats-server, every service a process):

- messages on every subject a service subscribes to: admission's write API, node-sim's control subject,
  and the events stream (which vcctl and the dashboard read back);
- values written straight into every bucket, past admission: each kind's bucket, the leases, the
  scheduler's ledger, the job controller's delays.

A service skips and logs what it cannot use (`tephra_decode_errors_total`), and never crashes, loops or
stops serving good input: afterwards every process is still the one started, ready, and a gang job
submitted through vcctl completes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from nats.errors import MaxPayloadError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import APIError, BucketNotFoundError

from tests.fuzz.aftermath import each, good_work_is_still_done, metric
from tests.fuzz.budget import EXAMPLES, TIMEOUT_S, Tally, draw
from tests.fuzz.surfaces import (
    BUCKETS,
    DELAYS_BUCKET,
    LEDGER_BUCKET,
    NAMESPACE,
    Message,
    Put,
    bus_messages,
    kv_puts,
    materialize,
)
from tests.support.services import ServiceProcess, eventually
from tests.support.system import System, start_system
from vc_bus.connection import connect
from vc_proto import api, subjects

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(TIMEOUT_S + 300)]
_reply = msgspec.json.Decoder(api.WriteReply)
_control_reply = msgspec.json.Decoder(dict[str, object])


@pytest.fixture
async def system(tmp_path: Path) -> AsyncIterator[System]:
    running = await start_system(tmp_path, nodes=4)
    try:
        yield running
    finally:
        running.stop()


def _answer_to(message: Message, data: bytes, tally: Tally, payload: bytes) -> None:
    """Judge one answer: a reply that decodes and says what was wrong, never an internal error."""
    if message.subject == subjects.ADMISSION_WRITE:
        try:
            reply = _reply.decode(data)
        except msgspec.DecodeError as exc:
            tally.crash(f"admission's reply does not decode ({exc})", payload)
            return
        if reply.error is None:
            tally.add("write accepted")
        elif reply.error.code == api.INTERNAL or not reply.error.message:
            tally.crash(f"admission: {reply.error.code}: {reply.error.message}", payload)
        else:
            tally.add(f"write refused ({reply.error.code})")
        return
    try:
        answer = _control_reply.decode(data)
    except msgspec.DecodeError as exc:
        tally.crash(f"node-sim's reply does not decode ({exc})", payload)
        return
    if answer == {"ok": True}:
        tally.add("control done")
    elif isinstance(answer.get("error"), str) and answer["error"]:
        tally.add("control refused")
    else:
        tally.crash(f"node-sim answered {answer!r}", payload)


async def test_fuzzed_messages_on_every_subscribed_subject_are_answered_and_skipped(system: System) -> None:
    inputs = await asyncio.to_thread(draw, bus_messages)  # off the loop: a connection must keep answering pings
    tally = Tally("subjects the services subscribe to (admission write, node-sim control, events)")
    async with connect(system.url, name="fuzz") as nc:
        js = nc.jetstream()

        async def handle(message: Message) -> None:
            data = materialize(message.payload)
            try:
                if not message.request:
                    await js.publish(message.subject, data)
                    tally.add("event stored")
                    return
                reply = await nc.request(message.subject, data, timeout=60)
            except MaxPayloadError:
                tally.add("over the bus's max_payload (refused by the client)")
                return
            except APIError as exc:
                tally.add(f"refused by the stream ({exc.description})")
                return
            except NatsTimeout:
                tally.crash(f"{message.subject}: no answer within 60 s", data)
                return
            _answer_to(message, reply.data, tally, data)

        await each(inputs, handle)
        tally.finish(EXAMPLES)
        await good_work_is_still_done(system, nc)
    history = await asyncio.to_thread(system.vcctl, "job", "history", "-n", NAMESPACE, "-N", "fz-gang")
    assert history.returncode == 0 and "Traceback" not in history.stderr, history.stderr[-2000:]


async def _a_second_job_controller_skips_the_stored_garbage_delays(system: System) -> None:
    """A job controller reads the stored delays as it starts (a crash's successor, or a new instance
    taking its share): one started now meets the garbage there, skips it, and becomes ready."""
    second = system.service("job-controller-2", "vc-job-controller", ["--lease-ttl", "2"]).start()
    try:
        await second.wait_ready(timeout=60)

        async def skipped() -> bool:
            return await asyncio.to_thread(metric, second, "tephra_decode_errors_total", source=DELAYS_BUCKET) > 0

        await eventually(skipped, timeout=60, interval=0.5, what="the second job controller skipped a bad delay")
    finally:
        second.stop_quietly()


def _buckets(*kinds: str) -> tuple[str, ...]:
    return tuple(subjects.bucket(kind) for kind in kinds)


# Which buckets each service decodes as they change (its decode-error count for each must have grown).
# The job controller reads its delays bucket only when it starts or takes jobs over: checked apart.
WATCHED = {
    "admission": _buckets("Job", "Queue", "PodGroup"),
    "job-controller": _buckets("Job", "Pod", "PodGroup", "Command", "PriorityClass"),
    "queue-controller": _buckets("Queue", "PodGroup", "Command"),
    "podgroup-controller": _buckets("Pod"),
    "gc": _buckets("Job", "Pod", "PodGroup"),
    "node-sim": _buckets("Pod"),
    "scheduler": (*_buckets("Node", "Pod", "PodGroup", "Queue", "PriorityClass"), LEDGER_BUCKET),
}


async def test_fuzzed_values_in_every_bucket_are_skipped_and_good_work_goes_on(system: System) -> None:
    inputs = await asyncio.to_thread(draw, kv_puts)  # off the loop: a connection must keep answering pings
    tally = Tally("values written straight into every bucket (objects, leases, ledger, delays)")
    async with connect(system.url, name="fuzz") as nc:
        js = nc.jetstream()
        buckets = {}
        for bucket in BUCKETS:
            try:
                buckets[bucket.name] = await js.key_value(bucket.name)
            except BucketNotFoundError:  # made by its service on first use: made here as the service would
                buckets[bucket.name] = await js.create_key_value(bucket=bucket.name)

        async def handle(put: Put) -> None:
            data = materialize(put.value)
            try:
                await buckets[put.bucket].put(put.key, data)
                tally.add("stored")
            except MaxPayloadError:
                tally.add("over the bus's max_payload (refused by the client)")
            except APIError as exc:
                tally.add(f"refused by the server ({exc.description})")

        for bucket in BUCKETS:  # one sure undecodable value per bucket, so that a short slice checks every reader
            await buckets[bucket.name].put(bucket.keys[0], b"\xff")
        await each(inputs, handle)
        tally.finish(EXAMPLES)

        for service_name, sources in WATCHED.items():  # they met the garbage (and are still there: below)
            service = system.services[service_name]
            for source in sources:

                async def skipped(service: ServiceProcess = service, source: str = source) -> bool:
                    return await asyncio.to_thread(metric, service, "tephra_decode_errors_total", source=source) > 0

                try:
                    await eventually(skipped, timeout=60, interval=0.5)
                except AssertionError as exc:
                    raise AssertionError(f"{service_name} skipped nothing from {source}") from exc
        await _a_second_job_controller_skips_the_stored_garbage_delays(system)
        for bucket in BUCKETS:  # what an operator would do: the fuzzed keys go (they hold valid objects too)
            for key in bucket.keys:
                await buckets[bucket.name].delete(key)
        await good_work_is_still_done(system, nc)
