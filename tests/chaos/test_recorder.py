"""The recorder against a real nats-server: every revision, in order, across a kill -9 and a rollback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.js.kv import KeyValue

from tests.chaos.checker import check
from tests.chaos.faults import wait_nats_ready
from tests.chaos.history import Change, History, Rollback, Survey
from tests.chaos.natsd import NatsTopology
from tests.chaos.recorder import Recorder, connect_to
from vc_bus.store import NatsStore

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.timeout(120)]


async def _setup(root: Path, sync: str = "always") -> tuple[NatsTopology, Recorder, History, KeyValue, Client]:
    topology = NatsTopology(root, servers=1, sync=sync)  # type: ignore[arg-type]
    topology.start()
    await wait_nats_ready(topology.url)
    writer = await connect_to([topology.url], "writer")
    await NatsStore(writer).ensure()  # the buckets, as a service creates them
    history = History()
    recorder = Recorder(topology.url, history)
    await recorder.install()
    return topology, recorder, history, await writer.jetstream().key_value("vc-job"), writer


def _job(name: str, phase: str) -> bytes:
    return json.dumps(
        {"metadata": {"name": name, "namespace": "default", "uid": f"u-{name}"}, "status": {"state": {"phase": phase}}}
    ).encode()


async def _recorded(recorder: Recorder, kind: str, revision: int) -> None:
    for _ in range(400):
        if recorder.last[kind] >= revision:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{kind} rev {revision} never recorded (at {recorder.last[kind]})")


async def test_every_revision_is_recorded_in_order_even_overwritten_at_once(tmp_path: Path) -> None:
    topology, recorder, history, kv, writer = await _setup(tmp_path)
    try:
        first = await kv.create("default.a", _job("a", "Pending"))
        revisions = [first]
        for phase in ("Running", "Running", "Completed"):  # overwritten faster than any watcher reads
            revisions.append(await kv.update("default.a", _job("a", phase), last=revisions[-1]))
        assert await kv.delete("default.a", last=revisions[-1])
        revisions.append(revisions[-1] + 1)  # the only writer: the delete marker is the next revision
        await _recorded(recorder, "Job", revisions[-1])
        changes = [c for c in history.changes() if c.kind == "Job"]
        assert [c.seq for c in changes] == revisions
        assert [c.previous for c in changes] == [0, *revisions[:-1]]
        assert [c.op for c in changes] == ["put"] * 4 + ["delete"]
        assert history.gaps == []
    finally:
        await writer.close()
        await recorder.close()
        topology.stop()


async def test_writes_right_after_a_restart_are_read_back_from_the_mirror(tmp_path: Path) -> None:
    topology, recorder, history, kv, writer = await _setup(tmp_path)
    try:
        revision = await kv.create("default.b", _job("b", "Pending"))
        await _recorded(recorder, "Job", revision)
        topology.nodes[0].kill()
        topology.nodes[0].start()
        await wait_nats_ready(topology.url)
        # A writer that is back before the recorder's listener: its copies are lost, the mirror has them.
        for phase in ("Running", "Completed"):
            revision = await _retrying(lambda p=phase, r=revision: kv.update("default.b", _job("b", p), last=r))
        await recorder.survey("kill -9")
        await recorder.final_check()
        assert [c.seq for c in history.changes() if c.kind == "Job"] == [revision - 2, revision - 1, revision]
        assert history.gaps == []
        assert check(history).violations == []  # the survey found what was recorded, nothing lost
    finally:
        await writer.close()
        await recorder.close()
        topology.stop()


async def test_a_rollback_is_recorded_and_the_store_surveyed(tmp_path: Path) -> None:
    topology, recorder, history, kv, writer = await _setup(tmp_path, sync="default")
    node = topology.nodes[0]
    try:
        kept = await kv.create("default.c", _job("c", "Pending"))
        await _recorded(recorder, "Job", kept)
        synced = await recorder.stream_heads()
        await asyncio.to_thread(node.snapshot, tmp_path / "copy")
        lost = await kv.update("default.c", _job("c", "Running"), last=kept)
        await _recorded(recorder, "Job", lost)
        node.kill()
        await asyncio.to_thread(node.restore, tmp_path / "copy")
        node.start()
        await wait_nats_ready(topology.url)
        await recorder.rolled_back(synced, "a crash")
        rollbacks = [r for r in history.records if isinstance(r, Rollback)]
        assert [(r.kind, r.kept, r.synced) for r in rollbacks] == [("Job", kept, kept)]
        surveys = [r for r in history.records if isinstance(r, Survey) and r.kind == "Job"]
        assert surveys[-1].newest == {"default.c": kept}
        again = await _retrying(lambda: kv.update("default.c", _job("c", "Completed"), last=kept))
        assert again == lost  # the lost revision number is used again, by another write
        await _recorded(recorder, "Job", again)
        changes = [c for c in history.changes() if c.kind == "Job"]
        assert [(c.seq, c.obj["status"]["state"]["phase"]) for c in changes if isinstance(c, Change) and c.obj] == [
            (kept, "Pending"),
            (lost, "Running"),
            (again, "Completed"),
        ]
        assert check(history).violations == []
    finally:
        await writer.close()
        await recorder.close()
        topology.stop()


async def _retrying(write):  # type: ignore[no-untyped-def]
    """The writer's connection may still be reconnecting after the restart."""
    for _ in range(100):
        try:
            return await write()
        except Exception:  # any transport error right after a restart: ask again
            await asyncio.sleep(0.1)
    return await write()
