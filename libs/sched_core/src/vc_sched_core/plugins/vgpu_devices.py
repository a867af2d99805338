"""Every node's shared GPUs as node x GPU matrices, and the placement of one pod's vGPUs on them,
vectorised over the candidate nodes (Volcano's checkNodeGPUSharingPredicateAndScore, hami-core mode).

Per container, in order: the GPUs in the policy's order (binpack: most device memory used first;
spread: fewest pods first; otherwise the highest index first), a GPU taking it when it has a free share
(`UsedNum < count`), the container's memory left, `UsedCore + cores <= 100`, no other pod at all when
the container asks 100% of the cores, not all cores taken when it asks none, a matching type and UUID,
and (podgroup spread) no pod of the same PodGroup. The container takes the first `vgpu-number` such
GPUs, each a different one, and the next container sees them taken. Scores per GPU taken: binpack
`100 * used memory / memory` after it; spread 100 when the GPU was idle before it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from typing import Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.nodes import NodeTable
from vc_sched_core.snapshot.vgpu import REQUEST_TYPE, DeviceUse, VGPUInventory, VGPUPodRequest, decode_assignment

BINPACK: Final = "binpack"
SPREAD: Final = "spread"
MULTIPLIER: Final = 100.0
ALL_CORES: Final = 100
Rows = NDArray[np.intp]
Grid = NDArray[np.int64]
Use = tuple[int, int, int]  # a GPU (column), the MiB and the cores taken on it


class Failure(IntEnum):
    """Why a node cannot take the pod's vGPUs (0: it can, or it has no shared GPUs to check)."""

    NONE = 0
    MODE = 1  # the pod asks another sharing mode
    COUNT = 2  # a container asks more GPUs than the node has
    FILTER = 3  # too few GPUs of the type or UUIDs the pod's annotations allow
    SIZE = 4  # too few GPUs could ever hold a container's share (memory, cores)
    BUSY = 5  # too few GPUs have the share free now (resolvable: pods may leave)


@dataclass(slots=True)
class Fit:
    ok: NDArray[np.bool_]  # per row
    score: NDArray[np.float64]  # per row: the GPUs' scores summed (Volcano's cached node score)
    failure: NDArray[np.int8]  # per row, a Failure
    container: NDArray[np.intp]  # per failed row, the container that did not fit
    taken: list[NDArray[np.bool_]] = field(default_factory=list)  # per container, rows x GPUs it takes


@dataclass(frozen=True, slots=True)
class Holding:
    """The GPUs one task holds on a row: (GPU, MiB, cores) per container and GPU."""

    row: int
    uses: tuple[Use, ...]
    group: str  # "<ns>/<podgroup>", "" without one


class Capacity:
    """Every node's GPUs, padded to the widest node: what they offer, fixed while the nodes are."""

    def __init__(self, inventories: Sequence[VGPUInventory | None]) -> None:
        self.inventories = tuple(inventories)
        self.width = max((len(inv.devices) for inv in inventories if inv is not None), default=0)
        shape = (len(inventories), self.width)
        self.gpu_rows = np.array([inv is not None for inv in inventories], dtype=bool)
        self.count = np.array([len(inv.devices) if inv else 0 for inv in inventories], dtype=np.int64)
        self.modes = [inv.mode if inv else "" for inv in inventories]
        self.uuids = {row: tuple(d.uuid for d in inv.devices) for row, inv in enumerate(inventories) if inv}
        self.types = {row: tuple(d.type for d in inv.devices) for row, inv in enumerate(inventories) if inv}
        rows = [row for row, inv in enumerate(inventories) if inv for _ in inv.devices]
        cols = [col for inv in inventories if inv for col in range(len(inv.devices))]
        flat = [d for inv in inventories if inv is not None for d in inv.devices]
        self.number = np.zeros(shape, dtype=np.int64)
        self.memory = np.zeros(shape, dtype=np.int64)
        self.nvidia = np.zeros(shape, dtype=bool)  # the type holds "NVIDIA" (checkType)
        self.number[rows, cols] = [d.number for d in flat]
        self.memory[rows, cols] = [d.memory for d in flat]
        self.nvidia[rows, cols] = [REQUEST_TYPE in d.type for d in flat]
        self.present = np.arange(self.width, dtype=np.int64) < self.count[:, None]
        for array in (self.gpu_rows, self.count, self.number, self.memory, self.nvidia, self.present):
            array.flags.writeable = False
        self.filters: dict[tuple[tuple[str, ...], ...], NDArray[np.bool_]] = {}  # by the pod's filter annotations

    def same_nodes(self, inventories: Sequence[VGPUInventory | None]) -> bool:
        return len(inventories) == len(self.inventories) and all(
            a is b for a, b in zip(inventories, self.inventories, strict=True)
        )


_last: list[Capacity] = []  # the previous session's, reused while every node's inventory is the same object


def capacity_of(nodes: NodeTable) -> Capacity:
    """The nodes' GPU capacity; built once for a cluster whose nodes do not change (the scheduler's
    cache and the carried session state keep a node's objects while it is unchanged)."""
    inventories = [n.obj.vgpu for n in nodes.nodes]
    if _last and _last[0].same_nodes(inventories):
        return _last[0]
    capacity = Capacity(inventories)
    _last[:] = [capacity]
    return capacity


class DeviceTable:
    """The nodes' GPU capacity and what the session's tasks hold on them."""

    def __init__(self, nodes: NodeTable) -> None:
        cap = self.capacity = capacity_of(nodes)
        self.width, self.gpu_rows, self.count, self.modes = cap.width, cap.gpu_rows, cap.count, cap.modes
        self.number, self.memory, self.nvidia, self.present = cap.number, cap.memory, cap.nvidia, cap.present
        self.uuids, self.types = cap.uuids, cap.types
        shape = (len(cap.inventories), cap.width)
        self.used_num = np.zeros(shape, dtype=np.int64)
        self.used_mem = np.zeros(shape, dtype=np.int64)
        self.used_core = np.zeros(shape, dtype=np.int64)
        self.groups: dict[str, Counter[tuple[int, int]]] = {}  # podgroup -> GPUs its pods use
        self.holdings: dict[str, Holding] = {}  # task uid -> what it holds

    # -- what tasks hold ---------------------------------------------------------------------------

    def hold(self, uid: str, holding: Holding) -> None:
        self.release(uid)
        self.holdings[uid] = holding
        self._apply(holding, 1)

    def release(self, uid: str) -> Holding | None:
        holding = self.holdings.pop(uid, None)
        if holding is not None:
            self._apply(holding, -1)
        return holding

    def _apply(self, holding: Holding, sign: int) -> None:
        row = holding.row
        for col, mem, cores in holding.uses:
            self.used_num[row, col] += sign
            self.used_mem[row, col] += sign * mem
            self.used_core[row, col] += sign * cores
            if holding.group and (mem > 0 or cores > 0):
                counts = self.groups.setdefault(holding.group, Counter())
                counts[(row, col)] += sign
                if counts[(row, col)] <= 0:
                    del counts[(row, col)]

    def holding_of(self, row: int, annotation: str, group: str) -> Holding | None:
        """What a placed pod holds by its `volcano.sh/vgpu-ids-new` (GPUs matched by UUID, or by the
        registered UUID the assigned one contains, as Volcano matches them)."""
        uuids = self.uuids.get(row)
        if not uuids:
            return None
        uses = []
        for use in (u for container in _decoded(annotation) for u in container):
            col = _column(uuids, use.uuid)
            if col is not None:
                uses.append((col, use.memory, use.cores))
        return Holding(row, tuple(uses), group) if uses else None

    # -- placing a pod ------------------------------------------------------------------------------

    def assign(self, request: VGPUPodRequest, row: int, policy: str) -> tuple[tuple[Use, ...], ...] | None:
        """The GPUs each container takes on one node, (GPU, MiB, cores) in the order taken; None when
        they do not fit. The same rule as `fit`, as Volcano's loop over one node's GPUs (what one
        allocation asks: cheaper than the matrices for a handful of GPUs)."""
        if not self.gpu_rows[row] or (request.mode and self.modes[row] != request.mode):
            return None if self.gpu_rows[row] else ()
        number, memory = self.number[row].tolist(), self.memory[row].tolist()
        num, mem, core = self.used_num[row].tolist(), self.used_mem[row].tolist(), self.used_core[row].tolist()
        allowed = self._allowed(request)[row]
        if request.spread_group:
            allowed = allowed & ~self._group_mask(request.spread_group)[row]
        ok = allowed.tolist()
        out = []
        for want in request.containers:
            if want.number > self.count[row]:
                return None
            taken: list[Use] = []
            for col in _order_of(policy, num, mem, int(self.count[row])):
                if len(taken) == want.number:
                    break
                need = want.memory_on(memory[col])
                if not ok[col] or number[col] <= num[col] or memory[col] - mem[col] < need:
                    continue
                if core[col] + want.cores > ALL_CORES or (want.cores >= ALL_CORES and num[col] > 0):
                    continue
                if want.cores == 0 and core[col] >= ALL_CORES:
                    continue
                num[col], mem[col], core[col] = num[col] + 1, mem[col] + need, core[col] + want.cores
                taken.append((col, need, want.cores))
            if len(taken) < want.number:
                return None
            out.append(tuple(taken))
        return tuple(out)

    def fit(self, request: VGPUPodRequest, rows: Rows, policy: str) -> Fit:
        """Whether each row's GPUs take the pod, its score there, and the GPUs each container takes."""
        size = len(rows)
        fit = Fit(
            ok=np.ones(size, dtype=bool),
            score=np.zeros(size, dtype=np.float64),
            failure=np.zeros(size, dtype=np.int8),
            container=np.zeros(size, dtype=np.intp),
        )
        gpu = self.gpu_rows[rows]
        if not gpu.any() or not request.containers:
            return fit
        if request.mode:
            wrong = gpu & np.array([self.modes[r] != request.mode for r in rows.tolist()], dtype=bool)
            self._fail(fit, wrong, Failure.MODE, 0)
        number, memory = self.number[rows], self.memory[rows]
        num, mem, core = self.used_num[rows].copy(), self.used_mem[rows].copy(), self.used_core[rows].copy()
        allowed = self._allowed(request)[rows]
        if request.spread_group:
            allowed = allowed & ~self._group_mask(request.spread_group)[rows]
        for k, want in enumerate(request.containers):
            alive = fit.ok & gpu
            if want.number <= 0 or not alive.any():
                fit.taken.append(np.zeros_like(allowed))
                continue
            need = memory * want.percentage // 100 if want.percentage != 101 else np.full_like(memory, want.memory)
            could = allowed & (number > 0) & (memory >= need) & (want.cores <= ALL_CORES)
            free = could & (number > num) & (memory - mem >= need) & (core + want.cores <= ALL_CORES)
            if want.cores >= ALL_CORES:
                free &= num == 0
            if want.cores == 0:
                free &= core < ALL_CORES
            taken, enough = _first(free, self._order(policy, num, mem, size), want.number)
            taken &= (alive & enough)[:, None]
            self._classify(fit, alive & ~enough, want.number, k, (self.count[rows], allowed, could))
            fit.score += _scores(policy, taken, num, mem + taken * need, memory)
            num += taken
            mem += taken * need
            core += taken * want.cores
            fit.taken.append(taken)
        return fit

    def _order(self, policy: str, num: Grid, mem: Grid, size: int) -> NDArray[np.intp]:
        index = np.broadcast_to(np.arange(self.width, dtype=np.int64), (size, self.width))
        if policy == BINPACK:
            key = -mem * max(self.width, 1) + index
        elif policy == SPREAD:
            key = num * max(self.width, 1) + index
        else:
            key = -index
        return np.argsort(key, axis=1, kind="stable")

    def _classify(
        self,
        fit: Fit,
        failed: NDArray[np.bool_],
        number: int,
        container: int,
        static: tuple[NDArray[np.int64], NDArray[np.bool_], NDArray[np.bool_]],
    ) -> None:
        if not failed.any():
            return
        count, allowed, could = static
        too_many = failed & (number > count)
        self._fail(fit, too_many, Failure.COUNT, container)
        filtered = failed & ~too_many & (allowed.sum(axis=1) < number)
        self._fail(fit, filtered, Failure.FILTER, container)
        small = failed & ~too_many & ~filtered & (could.sum(axis=1) < number)
        self._fail(fit, small, Failure.SIZE, container)
        self._fail(fit, failed & ~too_many & ~filtered & ~small, Failure.BUSY, container)

    @staticmethod
    def _fail(fit: Fit, rows: NDArray[np.bool_], why: Failure, container: int) -> None:
        rows = rows & fit.ok
        fit.ok &= ~rows
        fit.failure[rows] = why
        fit.container[rows] = container

    def _allowed(self, request: VGPUPodRequest) -> NDArray[np.bool_]:
        """GPUs the pod may take at all: NVIDIA, of an allowed type and UUID (checkType, UUID filter)."""
        if not request.filters:
            return np.asarray(self.present & self.nvidia, dtype=bool)
        key = (request.use_types, request.nouse_types, request.use_uuids, request.nouse_uuids)
        mask = self.capacity.filters.get(key)
        if mask is None:
            mask = self.present & self.nvidia
            for row, types in self.types.items():
                for col, (kind, uuid) in enumerate(zip(types, self.uuids[row], strict=True)):
                    mask[row, col] &= _type_allowed(request, kind) and _uuid_allowed(request, uuid)
            mask.flags.writeable = False
            self.capacity.filters[key] = mask
        return mask

    def _group_mask(self, group: str) -> NDArray[np.bool_]:
        mask = np.zeros(self.used_num.shape, dtype=bool)
        for row, col in self.groups.get(group, ()):
            mask[row, col] = True
        return mask


def _first(
    free: NDArray[np.bool_], order: NDArray[np.intp], wanted: int
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Per row, the first `wanted` free GPUs in `order`, and whether there were that many."""
    in_order = np.take_along_axis(free, order, axis=1)
    rank = np.cumsum(in_order, axis=1)
    chosen = np.zeros_like(free)
    np.put_along_axis(chosen, order, in_order & (rank <= wanted), axis=1)
    enough = rank[:, -1] >= wanted if rank.shape[1] else np.zeros(len(free), dtype=bool)
    return chosen, enough


def _scores(
    policy: str, taken: NDArray[np.bool_], num_before: Grid, mem_after: Grid, memory: Grid
) -> NDArray[np.float64]:
    """Volcano's GPUScore summed over the GPUs taken (binpack on the memory after the container,
    spread for a GPU that was idle before it; any other policy scores 0)."""
    if policy == BINPACK:
        ratio = np.divide(mem_after, memory, out=np.zeros(memory.shape), where=memory > 0)
        return np.asarray((MULTIPLIER * ratio * taken).sum(axis=1), dtype=np.float64)
    if policy == SPREAD:
        return np.asarray(MULTIPLIER * (taken & (num_before == 0)).sum(axis=1), dtype=np.float64)
    return np.zeros(len(taken), dtype=np.float64)


def _order_of(policy: str, num: list[int], mem: list[int], count: int) -> list[int]:
    """One node's GPUs in the policy's order (sortedDeviceIndicesByPolicy)."""
    if policy == BINPACK:
        return sorted(range(count), key=lambda i: (-mem[i], i))
    if policy == SPREAD:
        return sorted(range(count), key=lambda i: (num[i], i))
    return list(range(count - 1, -1, -1))


def _type_allowed(request: VGPUPodRequest, kind: str) -> bool:
    upper = kind.upper()
    if request.use_types:
        return any(word.upper() in upper for word in request.use_types)
    return not any(word.upper() in upper for word in request.nouse_types)


def _uuid_allowed(request: VGPUPodRequest, uuid: str) -> bool:
    if request.use_uuids and uuid not in request.use_uuids:
        return False
    return uuid not in request.nouse_uuids


def _column(uuids: tuple[str, ...], assigned: str) -> int | None:
    try:
        return uuids.index(assigned)
    except ValueError:
        return next((i for i, uuid in enumerate(uuids) if uuid and uuid in assigned), None)


@lru_cache(maxsize=4096)
def _decoded(annotation: str) -> tuple[tuple[DeviceUse, ...], ...]:
    return decode_assignment(annotation)
