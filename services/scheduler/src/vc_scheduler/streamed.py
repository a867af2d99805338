"""SHELL: the binds a cycle's session hands over while it still plans (run_cycle's `stream`), taken on
the event loop as they come, so the binder writes them while the session goes on instead of after it.

A session over a large backlog plans for seconds (about 1 ms per pod at 1,000,000 pods); handing its
binds over only at its end left the cluster without a new pod for that long (docs/benchmarks.md, "10,000
nodes, 1,000,000 pods"). The session runs in a worker thread: `put` is called there, and only queues
the binds and wakes the loop; `take` runs on the loop, where the cache and the binder live.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from vc_sched_core.framework.decisions import Bind, Evict


class StreamedBinds:
    def __init__(self, loop: asyncio.AbstractEventLoop, take: Callable[[tuple[Bind, ...]], None]) -> None:
        """`take`: what the loop does with one job's binds (make a gang of them and submit it)."""
        self._loop = loop
        self._take = take
        self._queue: deque[tuple[Bind, ...]] = deque()  # appended in the thread, taken on the loop
        self.sent: set[str] = set()  # the pod keys of the binds taken

    def put(self, binds: tuple[Bind, ...]) -> None:
        """In the session's thread: one job's binds, all it gets this session."""
        self._queue.append(binds)
        self._loop.call_soon_threadsafe(self.drain)

    def drain(self) -> None:
        """On the loop: take what the session has handed over so far. The cycle calls it once more when
        the session has returned, before it hands over the rest."""
        while self._queue:
            binds = self._queue.popleft()
            self.sent.update(b.pod for b in binds)
            self._take(binds)

    def rest(self, decisions: tuple[Bind | Evict, ...]) -> tuple[Bind | Evict, ...]:
        """The session's decisions less the binds already taken."""
        sent = self.sent
        if not sent:
            return decisions
        return tuple(d for d in decisions if not (isinstance(d, Bind) and d.pod in sent))
