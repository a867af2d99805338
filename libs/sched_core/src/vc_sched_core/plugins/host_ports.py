"""Host ports (Kubernetes NodePorts): a pod cannot go where a pod already takes one of its host ports.

Only the rows whose pods changed are re-read (the node table's change log), and only pods that take
host ports are indexed, so a cluster where few pods use them pays for those few.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.model import TaskStatus
from vc_sched_core.framework.nodes import NodeTable
from vc_sched_core.snapshot.cluster import HostPort

HOST_PORTS_REASON: Final = "node(s) didn't have free ports for the requested pod ports"


class HostPortIndex:
    def __init__(self, nodes: NodeTable) -> None:
        self.nodes = nodes
        self._on_row: dict[int, tuple[HostPort, ...]] = {}
        self._users: dict[tuple[str, int], dict[int, set[str]]] = {}  # (protocol, port) -> row -> host IPs
        for node in nodes.nodes:
            self._read_row(node.row)
        self._position = len(nodes.changes)

    def _read_row(self, row: int) -> None:
        for protocol, _ip, port in self._on_row.pop(row, ()):
            users = self._users.get((protocol, port))
            if users is not None:
                users.pop(row, None)
        # A pod this session evicted frees its ports at once (Volcano's predicates plugin removes it from
        # the node on the deallocate event); one that was already being deleted still holds them.
        tasks = self.nodes.nodes[row].tasks.values()
        taken = tuple(p for t in tasks if t.status != TaskStatus.RELEASING or t.pod.deleting for p in t.pod.host_ports)
        if not taken:
            return
        self._on_row[row] = taken
        for protocol, ip, port in taken:
            self._users.setdefault((protocol, port), {}).setdefault(row, set()).add(ip)

    def sync(self) -> None:
        changes = self.nodes.changes
        if self._position == len(changes):
            return
        for row in set(changes[self._position :]):
            self._read_row(row)
        self._position = len(changes)

    def conflicts(self, wanted: Sequence[HostPort], rows: NDArray[np.intp]) -> NDArray[np.bool_]:
        """Per row, whether a wanted port is taken there: same protocol and port, and the same host IP
        or either side on every address ("")."""
        self.sync()
        taken = np.zeros(len(self.nodes), dtype=bool)
        for protocol, ip, port in wanted:
            for row, ips in self._users.get((protocol, port), {}).items():
                if not ip or "" in ips or ip in ips:
                    taken[row] = True
        return taken[rows]
