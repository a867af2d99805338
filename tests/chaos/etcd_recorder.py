"""Records every acknowledged write in kube mode from etcd itself, for the same history checker.

In kube mode the apiserver is the store: admission and every service write to it, and the NATS
buckets are only the relay's mirror (a 410 re-list or a relay restart mirrors the end state of a
gap, not each revision in it). So the history is read where every write lands: one etcd watch over
the apiserver's `/registry/` prefix, from before the first object of a recorded kind exists, with
each event's previous value. etcd keeps every revision until the apiserver compacts (every 5
minutes), so the watch resumes without a hole after an etcd or apiserver restart; a compaction in
between is recorded as a gap.

A `Change.seq` is the etcd revision, which is the resourceVersion the apiserver (and so admission)
answered with: the checker matches acknowledged creations to recorded ones exactly. Objects are JSON
in etcd because kubed.py starts the apiserver with `--storage-media-type application/json`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from tests.chaos import facts
from tests.chaos.history import Change, Gap, History, Record, Survey
from vc_proto.subjects import object_key

PREFIX = "/registry/"
# etcd path under PREFIX -> (recorded kind, namespaced)
PATHS = {
    "minions/": ("Node", False),
    "pods/": ("Pod", True),
    "batch.volcano.sh/jobs/": ("Job", True),
    "scheduling.volcano.sh/podgroups/": ("PodGroup", True),
    "scheduling.volcano.sh/queues/": ("Queue", False),
}
RETRY_S = 0.2


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def kind_and_key(etcd_key: str) -> tuple[str, str] | None:
    """("Pod", "default.p-0") for "/registry/pods/default/p-0"; None for kinds not recorded."""
    if not etcd_key.startswith(PREFIX):
        return None
    rest = etcd_key[len(PREFIX) :]
    for path, (kind, namespaced) in PATHS.items():
        if rest.startswith(path):
            parts = rest[len(path) :].split("/")
            if namespaced and len(parts) == 2:
                return kind, object_key(parts[0], parts[1])
            if not namespaced and len(parts) == 1:
                return kind, object_key(None, parts[0])
    return None


def decode_value(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:  # not JSON (the apiserver was not started by kubed.py)
        return None
    return value if isinstance(value, dict) else None


def place_survey(records: list[Record], revision: int, newest: dict[str, dict[str, int]], why: str, now: float) -> None:
    """Insert one Survey per kind where the history reaches `revision` (records are in revision order;
    the ones after it were recorded while the survey waited). A key absent from etcd whose last change
    up to there is a delete is confirmed at that delete's revision (etcd keeps no delete markers)."""
    at = len(records)
    while at > 0:
        last = records[at - 1]
        if not (isinstance(last, Change) and last.seq > revision):
            break
        at -= 1
    deleted: dict[tuple[str, str], int] = {}
    for record in records[:at]:
        if isinstance(record, Change):
            if record.op == "delete":
                deleted[(record.kind, record.key)] = record.seq
            else:
                deleted.pop((record.kind, record.key), None)
    for (kind, key), seq in deleted.items():
        newest.setdefault(kind, {}).setdefault(key, seq)
    for offset, (kind, keys) in enumerate(newest.items()):
        records.insert(at + offset, Survey(kind, keys, now, why))


class EtcdRecorder:
    def __init__(self, etcd_url: str, history: History, *, note: Callable[[str], None] = print) -> None:
        self.url = etcd_url
        self.history = history
        self.note = note
        self.revision = 0  # the newest revision recorded (or started after)
        self.key_last: dict[str, dict[str, tuple[int, str]]] = {kind: {} for kind, _ in PATHS.values()}
        self.jobs: dict[str, str] = {}  # job key -> phase ("deleted" when gone)
        self.nodes: set[str] = set()
        self.events = 0
        self.reconnects = 0
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._moved = asyncio.Event()  # set whenever the watch delivers something

    # -- etcd's JSON gateway -----------------------------------------------------------------------
    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert self._session is not None
        async with self._session.post(self.url + path, json=body, timeout=aiohttp.ClientTimeout(total=10)) as r:
            r.raise_for_status()
            reply: dict[str, Any] = await r.json(content_type=None)
            return reply

    async def _range(self, *, keys_only: bool) -> tuple[int, list[dict[str, Any]]]:
        body = {"key": _b64(PREFIX), "range_end": _b64(PREFIX[:-1] + "0"), "keys_only": keys_only}
        reply = await self._post("/v3/kv/range", body)
        return int(reply["header"]["revision"]), list(reply.get("kvs") or [])

    # -- set-up and the watch --------------------------------------------------------------------
    async def install(self) -> None:
        """Record from now on (call before any object of a recorded kind exists)."""
        self._session = aiohttp.ClientSession()
        revision, kvs = await self._range(keys_only=False)
        for kv in kvs:  # normally none: recorded as they are, so nothing is missing
            self._event("PUT", kv, None)
        self.revision = revision
        self._task = asyncio.create_task(self._watch_forever(), name="etcd-recorder")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._session is not None:
            await self._session.close()

    async def _watch_forever(self) -> None:
        assert self._session is not None
        while True:
            request = {
                "create_request": {
                    "key": _b64(PREFIX),
                    "range_end": _b64(PREFIX[:-1] + "0"),
                    "start_revision": self.revision + 1,
                    "prev_kv": True,
                }
            }
            try:
                async with self._session.post(self.url + "/v3/watch", json=request, timeout=None) as response:
                    response.raise_for_status()
                    async for line in response.content:
                        if line.strip():
                            self._response(json.loads(line).get("result") or {})
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError):
                pass  # etcd restarting: resume from the next revision
            self.reconnects += 1
            await asyncio.sleep(RETRY_S)

    def _response(self, result: dict[str, Any]) -> None:
        self._moved.set()
        compacted = int(result.get("compact_revision") or 0)
        if compacted:
            self.history.gaps.append(Gap("*", self.revision + 1, f"etcd compacted up to rev {compacted}"))
            self.revision = compacted - 1  # go on from what is left
            return
        for event in result.get("events") or []:
            self._event(event.get("type", "PUT"), event["kv"], event.get("prev_kv"))

    def _event(self, op: str, kv: dict[str, Any], prev: dict[str, Any] | None) -> None:
        seq = int(kv.get("mod_revision") or 0)
        self.revision = max(self.revision, seq)
        found = kind_and_key(_unb64(kv.get("key")).decode(errors="replace"))
        if found is None:
            return
        kind, key = found
        self.events += 1
        previous = int(prev["mod_revision"]) if prev else 0
        delete = op == "DELETE"
        obj = None if delete else decode_value(_unb64(kv.get("value")))
        known = self.key_last[kind].get(key)
        if previous and (known is None or known[0] != previous):
            self.history.gaps.append(
                Gap(kind, seq, f"it follows rev {previous} of its key, the record has {known}", key)
            )
        self.history.records.append(Change(kind, seq, key, "delete" if delete else "put", obj, time.time(), previous))
        self.key_last[kind][key] = (seq, "delete" if delete else "put")
        if kind == "Job":
            self.jobs[key] = "deleted" if delete else facts.job_phase(obj or {})
        elif kind == "Node" and not delete:
            self.nodes.add(key)

    # -- after an etcd restart, and at the end -----------------------------------------------------
    async def newest(self) -> tuple[int, dict[str, dict[str, int]]]:
        """etcd's revision and, per kind and key, the newest revision it holds."""
        revision, kvs = await self._range(keys_only=True)
        out: dict[str, dict[str, int]] = {kind: {} for kind, _ in PATHS.values()}
        for kv in kvs:
            found = kind_and_key(_unb64(kv.get("key")).decode(errors="replace"))
            if found is not None:
                out[found[0]][found[1]] = int(kv["mod_revision"])
        return revision, out

    async def caught_up(self, revision: int = 0, limit_s: float = 30.0) -> int:
        """Until every revision up to `revision` (default: etcd's now) is recorded; returns it."""
        if not revision:
            revision, _ = await self._range(keys_only=True)
        deadline = time.monotonic() + limit_s
        while self.revision < revision and time.monotonic() < deadline:
            self._moved.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._moved.wait(), timeout=0.5)
        return revision

    async def survey(self, why: str) -> None:
        """Each key's newest revision as etcd holds it now, for the checker's write-lost check, placed in
        the history at the revision etcd answered at (the checker compares it with what was recorded up
        to there). etcd keeps no delete markers: a key whose last change up to there is a delete, and
        that etcd no longer holds, is confirmed at that delete's revision."""
        revision, newest = await self.newest()
        await self.caught_up(revision)
        place_survey(self.history.records, revision, newest, why, time.time())

    async def final_check(self) -> None:
        """At the end: etcd's newest revision of every recorded key is one the record has."""
        await self.caught_up()
        _, newest = await self.newest()
        for kind, keys in newest.items():
            for key, seq in sorted(keys.items()):
                if seq > self.key_last[kind].get(key, (0, ""))[0]:
                    self.history.gaps.append(Gap(kind, seq, "etcd ends on it, the record never saw it", key))
