"""PURE: what a shard's owner tells the other scheduler instances about the shard, and what they add up.

An instance is to be sent only the pods of the shards it owns (docs/scale-out.md, "Pods keyed by their
PodGroup's shard"). Of the other shards' pods it needs two things, which their owners publish as records
in the placement ledger's bucket:

- `sums.<shard>.<queue>`: what the shard's PodGroups in a queue add up to: the requests of their placed
  and pending pods, of their placed pods, and the unplaced minResources of admitted ones (the queue
  plugins' sums, cluster.Outside), so fair share and quotas stay the whole cluster's; what their pods
  occupy as the placement ledger counts a capped queue (bound and not finished, `pods` included:
  ledger.View.by_queue); and for the state gauges, their pods by task status and their placed pods'
  requests by namespace. One key per queue, so a cycle rewrites only the queues whose sums moved.
- `used.<shard>`: what the shard's pods occupy on nodes, together (each node's usage by stored pods:
  bound, pending or running), so an instance knows the cluster's total use (the overcommit plugin's
  `outside`) without following the others' pods.
- `away.<shard>.<node group>`: the shard's pods that occupy nodes its owner does not own, per node
  (each pod's key, uid and requests), so a node's owner counts them on its node and can read those
  very pods. An owner places on its own nodes first, so these are few: its loans, and what a change of
  members left on nodes that moved. The nodes are hashed into NODE_GROUPS groups, so a change of
  members rewrites at most SHARDS x NODE_GROUPS records, not one per pod.

Per-node records of every pod would not compress: at 100,000 pods on 10,000 nodes a shard has about
0.16 pods on a node, so they would change at every bind, which is following the pods by another name.

`ShardTally` is the owner's side: it is told, change by change, how the figures of its shards move,
and says which records to write (at most once a cycle, only those that moved). `OtherShards` is every
reader's side: it keeps the records of the shards it does not own and their totals, updated per record.
Each record carries the pods-stream revision its writer had followed.

Today every instance is still sent every pod; what it reads of the other shards comes from these
records all the same (cluster_index.py: the queue sums, a capped queue's occupancy, the other nodes'
use, the others' pods on its nodes that its cache lacks; metrics.index_tally: the cluster's gauges).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, TypeVar

import msgspec

from vc_proto import subjects
from vc_proto.pod_shards import SHARDS

NODE_GROUPS: Final = 64
SUMS_PREFIX: Final = "sums."
AWAY_PREFIX: Final = "away."
USED_PREFIX: Final = "used."
# Pods an away record may name: about 1 MB of JSON, the bus's largest message. A node group holds 1/64
# of the nodes, so a shard would need 10,000 pods on 150 nodes it does not own to reach it.
MAX_AWAY_PODS: Final = 10_000
MAX_AMOUNTS: Final = 64  # resource names per figure
MAX_STATUSES: Final = 16  # task statuses per record (Volcano has 9)
# Namespaces per record: a queue's PodGroups of one shard in this many namespaces with pods placed. At
# ~100 bytes each about 400 KB of JSON, inside the bus's 1 MB message.
MAX_NAMESPACES: Final = 4096
EPSILON: Final = 1e-9  # what float sums of additions and removals leave of zero
Amounts = dict[str, float]


def node_group(node: str) -> int:
    """A stable hash of a node's name into NODE_GROUPS (the same in every process and release)."""
    return zlib.crc32(node.encode()) % NODE_GROUPS


def sums_key(shard: int, queue: str) -> str:
    return f"{SUMS_PREFIX}{shard}.{subjects.escape_token(queue)}"


def away_key(shard: int, group: int) -> str:
    return f"{AWAY_PREFIX}{shard}.{group}"


def used_key(shard: int) -> str:
    return f"{USED_PREFIX}{shard}"


Part = str | int | None  # a record of a shard: its queue's sums, a node group's pods away, or (None) its use


def parse_key(key: str) -> tuple[int, Part] | None:
    """The shard and queue of a `sums.<shard>.<queue>` key; the shard and node group of an
    `away.<shard>.<group>` key; the shard and None of a `used.<shard>` key; None for any other key, or
    one whose parts are out of range."""
    if key.startswith(USED_PREFIX):
        shard = _number(key[len(USED_PREFIX) :], SHARDS)
        return None if shard is None else (shard, None)
    prefix = SUMS_PREFIX if key.startswith(SUMS_PREFIX) else AWAY_PREFIX if key.startswith(AWAY_PREFIX) else None
    if prefix is None:
        return None
    parts = key[len(prefix) :].split(".")
    if len(parts) != 2 or not parts[1]:
        return None
    shard = _number(parts[0], SHARDS)
    if shard is None:
        return None
    if prefix == SUMS_PREFIX:
        return (shard, subjects.unescape_token(parts[1])) if len(parts[1]) <= 253 else None
    group = _number(parts[1], NODE_GROUPS)
    return None if group is None else (shard, group)


def _number(text: str, bound: int) -> int | None:
    if not text.isdigit() or len(text) > 6:
        return None
    value = int(text)
    return value if value < bound else None


class QueueSums(msgspec.Struct, gc=False):
    """One queue's sums over a shard's PodGroups (cluster.QueueSums, with the pods they count)."""

    revision: int  # the pods stream's revision its writer had followed
    request: Amounts
    allocated: Amounts
    reserved: Amounts
    asked: int = 0  # pods counted in `request`
    placed: int = 0  # pods counted in `allocated`
    statuses: dict[str, int] = msgspec.field(default_factory=dict)  # task status -> pods
    namespaces: dict[str, Amounts] = msgspec.field(default_factory=dict)  # namespace -> `allocated`'s part
    occupied: Amounts = msgspec.field(default_factory=dict)  # requests of the pods bound and not finished
    writer: str = ""  # the instance that wrote it


class ShardUse(msgspec.Struct, gc=False):
    """What a shard's pods occupy on nodes, together."""

    revision: int
    used: Amounts  # their requests (without `pods`)
    pods: int
    writer: str = ""


class AwayPod(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """A pod of the shard on a node its owner does not own."""

    uid: str
    used: Amounts  # its requests (without `pods`)


class AwayNodes(msgspec.Struct, gc=False):
    revision: int
    nodes: dict[str, dict[str, AwayPod]]  # node -> pod key -> the pod
    writer: str = ""


_NO_PODS: Mapping[str, AwayPod] = MappingProxyType({})
_sums_decoder = msgspec.json.Decoder(QueueSums)
_away_decoder = msgspec.json.Decoder(AwayNodes)
_use_decoder = msgspec.json.Decoder(ShardUse)
_encoder = msgspec.json.Encoder()


def _add(into: Amounts, amounts: Mapping[str, float], sign: float) -> None:
    for name, value in amounts.items():
        into[name] = into.get(name, 0.0) + sign * value


def _add_under(into: dict[str, Amounts], name: str, amounts: Mapping[str, float], sign: float) -> None:
    """Add to the amounts under `name`, which go once nothing but float residue is left of them."""
    held = into.setdefault(name, {})
    _add(held, amounts, sign)
    if not _clean(held):
        del into[name]


def _count(into: dict[str, int], counts: Mapping[str, int], sign: int) -> None:
    for name, n in counts.items():
        left = into.get(name, 0) + sign * n
        if left:
            into[name] = left
        else:
            into.pop(name, None)


def _clean(amounts: Amounts) -> Amounts:
    """Without what additions and removals left of zero."""
    return {name: value for name, value in amounts.items() if abs(value) > EPSILON}


def _valid_amounts(amounts: Mapping[str, float]) -> bool:
    return len(amounts) <= MAX_AMOUNTS and all(math.isfinite(v) and len(n) <= 253 for n, v in amounts.items())


def decode_sums(data: bytes) -> QueueSums | None:
    """A `sums` record; None (the caller reports it) for bytes that are not one or break a bound."""
    try:
        record = _sums_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    if record.revision < 0 or record.asked < 0 or record.placed < 0 or len(record.writer) > 253:
        return None
    if not all(_valid_amounts(a) for a in (record.request, record.allocated, record.reserved, record.occupied)):
        return None
    statuses, namespaces = record.statuses, record.namespaces
    if len(statuses) > MAX_STATUSES or any(n < 0 or len(s) > 32 for s, n in statuses.items()):
        return None
    if len(namespaces) > MAX_NAMESPACES or any(len(n) > 253 or not _valid_amounts(a) for n, a in namespaces.items()):
        return None
    return record


def decode_use(data: bytes) -> ShardUse | None:
    """A `used` record; None for bytes that are not one or break a bound."""
    try:
        record = _use_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    if record.revision < 0 or record.pods < 0 or len(record.writer) > 253 or not _valid_amounts(record.used):
        return None
    return record


def decode_away(data: bytes) -> AwayNodes | None:
    """An `away` record; None for bytes that are not one or break a bound."""
    try:
        record = _away_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    if record.revision < 0 or len(record.writer) > 253 or sum(len(p) for p in record.nodes.values()) > MAX_AWAY_PODS:
        return None
    if any(not _valid_amounts(pod.used) for pods in record.nodes.values() for pod in pods.values()):
        return None
    return record


@dataclass(slots=True)
class QueueTotals:
    """A queue's sums over some PodGroups, as they are counted (QueueSums, as written)."""

    request: Amounts = field(default_factory=dict)
    allocated: Amounts = field(default_factory=dict)
    reserved: Amounts = field(default_factory=dict)
    asked: int = 0
    placed: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    namespaces: dict[str, Amounts] = field(default_factory=dict)
    occupied: Amounts = field(default_factory=dict)

    def empty(self) -> bool:
        return not (
            self.asked or self.placed or _clean(self.reserved) or any(self.statuses.values()) or _clean(self.occupied)
        )


@dataclass(slots=True)
class _Use:
    used: Amounts = field(default_factory=dict)
    pods: int = 0


# -- the owner's side --------------------------------------------------------------------------------
class ShardTally:
    """The figures of the shards an instance counts, as the changes it is told of move them, and which
    records moved since they were last written."""

    def __init__(self) -> None:
        self._queues: dict[tuple[int, str], QueueTotals] = {}  # (shard, queue) -> its sums
        self._away: dict[tuple[int, int], dict[str, dict[str, AwayPod]]] = {}  # (shard, node group) -> node -> pods
        # The records to write: (shard, queue) of a `sums` record, (shard, node group) of an `away` one.
        self._uses: dict[int, _Use] = {}  # shard -> what its pods occupy
        self._moved: set[tuple[int, Part]] = set()
        self._stored: set[tuple[int, Part]] = set()  # the records the bucket holds: written, or found

    def count(
        self,
        shard: int,
        queue: str,
        request: Mapping[str, float],
        allocated: Mapping[str, float],
        asked: int,
        placed: int,
        sign: int,
        *,
        namespace: str,
    ) -> None:
        """Pods of the shard's PodGroups in `queue` and `namespace` counted into (sign 1) or out of (-1)
        its sums: `asked` pods (placed or pending) asking `request`, `placed` pods holding `allocated`."""
        figures = self._queue(shard, queue)
        if asked:
            _add(figures.request, request, sign)
            figures.asked += sign * asked
        if placed:
            _add(figures.allocated, allocated, sign)
            _add_under(figures.namespaces, namespace, allocated, sign)
            figures.placed += sign * placed
        self._moved.add((shard, queue))

    def occupy(self, shard: int, queue: str, requests: Mapping[str, float], sign: int) -> None:
        """A pod of the shard's PodGroups in `queue`, bound and not finished, counted into (1) or out of
        (-1) what the queue's pods occupy (`requests` with `pods`)."""
        _add(self._queue(shard, queue).occupied, requests, sign)
        self._moved.add((shard, queue))

    def status(self, shard: int, queue: str, statuses: Mapping[str, int], sign: int) -> None:
        """Pods of the shard's PodGroups in `queue`, by task status, counted into (1) or out of (-1) it."""
        if statuses:
            _count(self._queue(shard, queue).statuses, statuses, sign)
            self._moved.add((shard, queue))

    def reserve(self, shard: int, queue: str, reserved: Mapping[str, float], sign: int) -> None:
        """A PodGroup's unplaced minResources counted into (1) or out of (-1) its queue's reservation."""
        if reserved:
            _add(self._queue(shard, queue).reserved, reserved, sign)
            self._moved.add((shard, queue))

    def use(self, shard: int, used: Mapping[str, float], sign: int) -> None:
        """A pod of the shard counted onto (1) or off (-1) a node, wherever it is."""
        total = self._uses.get(shard)
        if total is None:
            total = self._uses[shard] = _Use()
        _add(total.used, used, sign)
        total.pods += sign
        self._moved.add((shard, None))

    def away(self, shard: int, node: str, key: str, uid: str, used: Mapping[str, float], sign: int) -> None:
        """A pod of the shard (`key`, `uid`, its requests) counted onto (1) or off (-1) a node its owner
        does not own."""
        group = node_group(node)
        nodes = self._away.setdefault((shard, group), {})
        pods = nodes.setdefault(node, {})
        if sign > 0:
            pods[key] = AwayPod(uid, dict(used))
        else:
            pods.pop(key, None)
            if not pods:
                del nodes[node]
                if not nodes:
                    del self._away[(shard, group)]
        self._moved.add((shard, group))

    def rewrite(self, shard: int, stored: Iterable[Part]) -> None:
        """The shard's records are to be written again at the next flush: those the bucket holds
        (`stored`: their queues and node groups) and every one it counts. A shard taken over: what is
        stored says what its old owner saw."""
        self._moved.update((shard, part) for part in stored)
        self._stored.update((shard, part) for part in stored)
        self._moved.update(key for key in self._queues if key[0] == shard)
        self._moved.update(key for key in self._away if key[0] == shard)
        if shard in self._uses:
            self._moved.add((shard, None))

    def again(self, keys: Iterable[str]) -> None:
        """Records whose write failed: written at the next flush (a deletion too: the record may still be
        there)."""
        for key in keys:
            parsed = parse_key(key)
            if parsed is not None:
                self._moved.add(parsed)
                self._stored.add(parsed)

    def flush(self, revision: int, owns: frozenset[int], writer: str = "") -> list[tuple[str, bytes | None]]:
        """The records of owned shards that moved since the last flush, as (key, value) to write at the
        pods stream's `revision` (value None: the record is empty now, delete it). Moves of shards it does
        not own stay pending: they are written if it owns them again."""
        out: list[tuple[str, bytes | None]] = []
        for moved in self._moved:
            if moved[0] not in owns:
                continue
            key, value = self._record(moved[0], moved[1], revision, writer)
            if value is not None:
                self._stored.add(moved)
            elif moved in self._stored:
                self._stored.discard(moved)
            else:
                continue  # (empty, and never written)
            out.append((key, value))
        self._moved = {moved for moved in self._moved if moved[0] not in owns}
        out.sort()
        return out

    def _record(self, shard: int, part: Part, revision: int, writer: str) -> tuple[str, bytes | None]:
        if part is None:
            use = self._uses.get(shard)
            if use is None or not use.pods:
                return used_key(shard), None
            return used_key(shard), _encoder.encode(ShardUse(revision, _clean(use.used), use.pods, writer))
        if isinstance(part, str):
            q = self._queues.get((shard, part))
            if q is None or q.empty():
                return sums_key(shard, part), None
            namespaces = {name: amounts for name, held in q.namespaces.items() if (amounts := _clean(held))}
            statuses = {status: n for status, n in q.statuses.items() if n}
            sums = (_clean(q.request), _clean(q.allocated), _clean(q.reserved))
            record = QueueSums(revision, *sums, q.asked, q.placed, statuses, namespaces, _clean(q.occupied), writer)
            return sums_key(shard, part), _encoder.encode(record)
        group = part
        nodes = self._away.get((shard, group))
        return away_key(shard, group), _encoder.encode(AwayNodes(revision, nodes, writer)) if nodes else None

    def _queue(self, shard: int, queue: str) -> QueueTotals:
        figures = self._queues.get((shard, queue))
        if figures is None:
            figures = self._queues[(shard, queue)] = QueueTotals()
        return figures


# -- every reader's side -----------------------------------------------------------------------------
class OtherShards:
    """The records of the shards an instance does not own, and their totals: per queue (what the others'
    PodGroups add up to) and per node (the others' pods away on it). It keeps its own shards' records
    too, out of the totals: they say what is stored under keys it may have to overwrite or delete."""

    def __init__(self) -> None:
        self._sums: dict[tuple[int, str], QueueSums] = {}
        self._away: dict[tuple[int, int], AwayNodes] = {}
        self._uses: dict[int, ShardUse] = {}
        self._owned: frozenset[int] = frozenset()
        self.queues: dict[str, QueueTotals] = {}  # queue -> the other shards' sums (read only)
        self.used: Amounts = {}  # what the other shards' pods occupy on nodes (read only)
        self.version = 0  # bumped per record read
        self._on: dict[str, dict[str, AwayPod]] = {}  # node -> the other shards' pods away on it, by key

    def stored(self, shard: int) -> list[Part]:
        """The queues and node groups of the shard's records the bucket holds (as read), and None if it
        holds the shard's use."""
        return [
            *(q for (s, q) in self._sums if s == shard),
            *(g for (s, g) in self._away if s == shard),
            *([None] if shard in self._uses else []),
        ]

    def apply(self, key: str, data: bytes | None) -> bool:
        """A record as the bucket's watch delivers it (None: deleted). False for a value that is not a
        valid record of its key (the caller reports it; it then counts as deleted)."""
        parsed = parse_key(key)
        if parsed is None:
            return False
        self.version += 1
        shard, part = parsed
        if part is None:
            return _replace(self._uses, shard, decode_use, data, self._count_use)
        if isinstance(part, str):
            return _replace(self._sums, (shard, part), decode_sums, data, self._count_sums)
        return _replace(self._away, (shard, part), decode_away, data, self._count_away)

    def own(self, shards: frozenset[int]) -> None:
        """The shards this instance owns now: their records leave the totals, the others' enter them."""
        if shards == self._owned:
            return
        self._owned = shards
        self.queues, self._on, self.used = {}, {}, {}
        for key in self._sums:
            self._count_sums(key, 1)
        for part in self._away:
            self._count_away(part, 1)
        for shard in self._uses:
            self._count_use(shard, 1)

    def away_on(self, node: str) -> tuple[Amounts, int]:
        """What the other shards' pods occupy on `node`: their requests and count."""
        pods = self._on.get(node, {})
        used: Amounts = {}
        for pod in pods.values():
            _add(used, pod.used, 1.0)
        return _clean(used), len(pods)

    def written_by(self, writer: str, shards: frozenset[int]) -> bool:
        """Whether a record of one of `shards` is, as last read, `writer`'s."""
        held: Iterable[tuple[int, QueueSums | AwayNodes | ShardUse]] = (
            *((shard, r) for (shard, _), r in self._sums.items()),
            *((shard, r) for (shard, _), r in self._away.items()),
            *self._uses.items(),
        )
        return any(shard in shards and record.writer == writer for shard, record in held)

    def stray(self, writer: str, shards: frozenset[int]) -> list[str]:
        """The keys of `shards`' records, as last read, that another than `writer` wrote: what a shard's
        previous owner left, for its owner to write over (or delete)."""
        return [
            *(sums_key(s, q) for (s, q), r in self._sums.items() if s in shards and r.writer != writer),
            *(away_key(s, g) for (s, g), r in self._away.items() if s in shards and r.writer != writer),
            *(used_key(s) for s, r in self._uses.items() if s in shards and r.writer != writer),
        ]

    def nodes_away(self) -> Iterable[tuple[str, Mapping[str, AwayPod]]]:
        """Every node with other shards' pods away on it, with them by key (read only)."""
        return self._on.items()

    def pods_away_on(self, node: str) -> Mapping[str, AwayPod]:
        """The other shards' pods on `node`, by key (read only)."""
        return self._on.get(node, _NO_PODS)

    def _count_use(self, shard: int, sign: int) -> None:
        record = self._uses.get(shard)
        if record is not None and shard not in self._owned:
            _add(self.used, record.used, sign)

    def _count_sums(self, key: tuple[int, str], sign: int) -> None:
        shard, queue = key
        record = self._sums.get(key)
        if record is None or shard in self._owned:
            return
        total = self.queues.get(queue)
        if total is None:
            total = self.queues[queue] = QueueTotals()
        _add(total.request, record.request, sign)
        _add(total.allocated, record.allocated, sign)
        _add(total.reserved, record.reserved, sign)
        total.asked += sign * record.asked
        total.placed += sign * record.placed
        _add(total.occupied, record.occupied, sign)
        _count(total.statuses, record.statuses, sign)
        for namespace, held in record.namespaces.items():
            _add_under(total.namespaces, namespace, held, sign)
        if total.empty():
            del self.queues[queue]

    def _count_away(self, key: tuple[int, int], sign: int) -> None:
        shard = key[0]
        record = self._away.get(key)
        if record is None or shard in self._owned:
            return
        for node, pods in record.nodes.items():
            held = self._on.setdefault(node, {})
            if sign > 0:
                held.update(pods)
            else:
                for pod_key in pods:
                    held.pop(pod_key, None)
            if not held:
                del self._on[node]


K = TypeVar("K")
R = TypeVar("R")


def _replace(
    held: dict[K, R], key: K, decode: Callable[[bytes], R | None], data: bytes | None, count: Callable[[K, int], None]
) -> bool:
    """One record in place of what `held` had under `key` (None: deleted), taken out of and put into the
    totals by `count`; False for a value that does not decode (it then counts as deleted)."""
    record = decode(data) if data is not None else None
    count(key, -1)
    if record is None:
        held.pop(key, None)
    else:
        held[key] = record
    count(key, 1)
    return data is None or record is not None
