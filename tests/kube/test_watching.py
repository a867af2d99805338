"""The list+watch loop's failure handling and decoding, against a scripted fake apiserver (runs
everywhere, no kube), and the watch stream's line splitting."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from vc_bus.decoding import DECODE_ERRORS
from vc_core.errors import TemporaryError
from vc_core.store import WatchOp
from vc_kube.client import KubeApiError, split_lines
from vc_kube.watching import Change, watch_kind
from vc_proto.kinds import KINDS, Kind

QUEUE = KINDS["Queue"]


def obj(name: str, rv: int) -> dict[str, Any]:
    return {"apiVersion": QUEUE.api_version, "kind": "Queue", "metadata": {"name": name, "resourceVersion": str(rv)}}


class ScriptedKube:
    """Lists come from `lists` in order; each watch call plays the next script (events or an exception)."""

    def __init__(self, lists: list[tuple[list[dict[str, Any]], int]], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.watch_from: list[str] = []

    async def served(self, kind: Kind) -> Kind:
        return kind  # one version of each kind here

    async def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        items, rv = self.lists.pop(0)
        return {"items": items, "metadata": {"resourceVersion": str(rv)}}

    async def stream(self, path: str, *, query: dict[str, str], read_timeout_s: float) -> AsyncIterator[bytes]:
        self.watch_from.append(query["resourceVersion"])
        assert query["allowWatchBookmarks"] == "true"
        script = self.watches.pop(0) if self.watches else []
        if isinstance(script, Exception):
            raise script
        for event in script:
            if isinstance(event, Exception):
                raise event
            yield event if isinstance(event, bytes) else msgspec.json.encode(event)


async def collect(kube: ScriptedKube, count: int) -> list[Change]:
    out = []
    async for change in watch_kind(kube, QUEUE):  # type: ignore[arg-type]
        out.append(change)
        if len(out) == count:
            break
    return out


async def test_list_then_synced_then_watch_from_the_lists_revision() -> None:
    kube = ScriptedKube([([obj("a", 5)], 10)], [[{"type": "ADDED", "object": obj("b", 11)}]])
    changes = await collect(kube, 3)
    assert [(c.op, c.name) for c in changes] == [(WatchOp.PUT, "a"), (WatchOp.SYNCED, ""), (WatchOp.PUT, "b")]
    assert kube.watch_from == ["10"]


async def test_bookmarks_and_normal_ends_resume_from_the_newest_revision() -> None:
    kube = ScriptedKube(
        [([], 10)],
        [
            [{"type": "BOOKMARK", "object": obj("", 20)}],  # then the server ends the watch (timeout)
            [{"type": "MODIFIED", "object": obj("a", 21)}],
        ],
    )
    changes = await collect(kube, 2)
    assert changes[-1].name == "a"
    assert kube.watch_from == ["10", "20"]


@pytest.mark.parametrize("gone", ["event", "status"])
async def test_410_relists_and_turns_the_gap_into_puts_and_deletes(gone: str) -> None:
    expired: Any = (
        [{"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}}]
        if gone == "event"
        else KubeApiError(410, {"reason": "Expired"})
    )
    kube = ScriptedKube(
        # first list: a, b; after 410: a unchanged, b deleted, c created
        [([obj("a", 5), obj("b", 6)], 10), ([obj("a", 5), obj("c", 30)], 31)],
        [expired, [{"type": "ADDED", "object": obj("d", 32)}]],
    )
    changes = await collect(kube, 6)
    ops = [(c.op, c.name) for c in changes]
    assert ops[:3] == [(WatchOp.PUT, "a"), (WatchOp.PUT, "b"), (WatchOp.SYNCED, "")]
    assert set(ops[3:5]) == {(WatchOp.PUT, "c"), (WatchOp.DELETE, "b")}
    assert ops[5] == (WatchOp.PUT, "d")
    assert kube.watch_from == ["10", "31"]


async def test_connection_errors_retry_from_the_last_revision(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("vc_kube.watching.MAX_BACKOFF_S", 0.01)
    kube = ScriptedKube(
        [([], 10)],
        [
            [{"type": "ADDED", "object": obj("a", 11)}, TemporaryError("connection reset")],
            TemporaryError("refused"),
            KubeApiError(503, {"message": "not ready"}),
            [{"type": "ADDED", "object": obj("b", 12)}],
        ],
    )
    changes = await collect(kube, 3)
    assert [c.name for c in changes] == ["", "a", "b"]
    assert kube.watch_from == ["10", "11", "11", "11"]


async def test_other_errors_raise_instead_of_stopping_silently() -> None:
    kube = ScriptedKube([([], 10)], [[{"type": "ERROR", "object": {"code": 403, "message": "forbidden"}}]])
    with pytest.raises(KubeApiError):
        await collect(kube, 5)


async def test_an_object_that_does_not_fit_is_reported_and_the_watch_goes_on() -> None:
    unfit = {**obj("bad", 11), "spec": {"weight": "heavy"}}  # weight is an integer
    kube = ScriptedKube(
        [([obj("a", 5), {**obj("listed-bad", 6), "spec": {"weight": []}}], 10)],
        [[{"type": "MODIFIED", "object": unfit}, {"type": "ADDED", "object": obj("c", 12)}]],
    )
    before = DECODE_ERRORS.labels("apiserver", "Queue")._value.get()
    changes = await collect(kube, 5)
    # It still exists (obj None: keep the last good copy, never read it as deleted); its revision counts.
    assert [(c.op, c.name, c.obj is None) for c in changes] == [
        (WatchOp.PUT, "a", False),
        (WatchOp.PUT, "listed-bad", True),
        (WatchOp.SYNCED, "", True),
        (WatchOp.PUT, "bad", True),
        (WatchOp.PUT, "c", False),
    ]
    assert changes[3].revision == 11
    assert DECODE_ERRORS.labels("apiserver", "Queue")._value.get() == before + 2


async def test_a_line_that_is_not_an_event_restarts_the_watch_from_the_last_good_revision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("vc_kube.watching.MAX_BACKOFF_S", 0.01)
    kube = ScriptedKube(
        [([], 10)],
        [[{"type": "ADDED", "object": obj("a", 11)}, b"{not json"], [{"type": "ADDED", "object": obj("b", 12)}]],
    )
    changes = await collect(kube, 3)
    assert [c.name for c in changes] == ["", "a", "b"]
    assert kube.watch_from == ["10", "11"]


async def chunks_of(data: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    last = 0
    for cut in [*cuts, len(data)]:
        yield data[last:cut]
        last = cut


@pytest.mark.parametrize("seed", range(20))
async def test_split_lines_gives_the_same_lines_however_the_stream_is_cut(seed: int) -> None:
    rng = random.Random(seed)
    lines = [bytes(rng.choice(b"ab{}:,") for _ in range(rng.randint(1, 300))) for _ in range(30)]
    data = b"\n".join(lines) + b"\n\n  \n"  # blank lines (and whitespace-only ones) are skipped
    cuts = sorted(rng.sample(range(1, len(data)), rng.randint(1, 60)))
    assert [line async for line in split_lines(chunks_of(data, cuts))] == lines


async def test_split_lines_keeps_a_last_line_without_newline_and_bounds_a_line() -> None:
    assert [line async for line in split_lines(chunks_of(b"a\nb", [1, 2]))] == [b"a", b"b"]
    with pytest.raises(TemporaryError):
        async for _ in split_lines(chunks_of(b"x" * 100, [10, 50]), max_line=64):
            pass
