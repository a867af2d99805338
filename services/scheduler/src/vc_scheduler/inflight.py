"""SHELL: the scheduler's writes, bounded and off the loop's path. The binder, the evictor and the status
writer hand their work here as jobs; at most MAX_IN_FLIGHT run at once, so a cycle never waits for the
previous cycle's writes and a backlog never floods JetStream. Status writes start before queued gangs
and evictions (one request each, and other services wait on them: a PodGroup's Inqueue lets the job
controller create its pods), but while gangs or evictions wait they hold at most three quarters of the
slots: a cycle that enqueues tens of thousands of PodGroups at once (the seeds' scale, as the job
controller creates them) would otherwise hold every gang back until the last of those writes started,
and no pod would be bound meanwhile. (Half of the slots slowed the start of a 10,000-pod load, whose
pods are created only once their PodGroups' Inqueue is written: docs/benchmarks.md.) Otherwise jobs
start in the order submitted.

A job that fails is logged and counted here, the same way for every kind; the submitter may pass
`on_failure` to undo what it assumed (the binder forgets the gang's assumed binds). Nothing is
retried here: the next cycle plans what did not happen.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from vc_core.errors import Fenced, TemporaryError, VcError
from vc_scheduler.metrics import ERRORS, FENCED

log = structlog.get_logger(__name__)
# Jobs in flight. A gang is ~3 requests per pod (reserve, bind, event): 64 gangs of 10 keep
# ~2,000 requests outstanding; more only piles JetStream timeouts up at 100k pods on 2 cores.
MAX_IN_FLIGHT = 64
POLL_S = 0.5  # how often an idle runner looks at the shutdown flag
STATUS_KINDS = frozenset({"PodGroupStatus", "QueueStatus"})

Job = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class _Queued:
    kind: str  # "Gang", "Evict", "PodGroupStatus", "QueueStatus": names the job in logs
    job: Job
    on_failure: Callable[[], None] | None


class InFlight:
    def __init__(self, instance: str, *, limit: int = MAX_IN_FLIGHT) -> None:
        self.instance = instance
        self._gate = asyncio.Semaphore(limit)
        self._status_share = max(1, limit - limit // 4)  # the slots statuses may hold while other jobs wait
        self._statuses_in_flight = 0
        self._statuses: deque[_Queued] = deque()
        self._others: deque[_Queued] = deque()
        self._submitted = asyncio.Event()
        self.in_flight = 0
        self._unfinished: Counter[str] = Counter()  # by kind: submitted, not yet carried out
        self._finished: Counter[str] = Counter()  # by kind: carried out (or failed) since the start
        # carried_out's waiters: (kind, how many may be left, the future that ends the wait)
        self._waiters: list[tuple[str, int, asyncio.Future[None]]] = []

    def submit(self, kind: str, job: Job, *, on_failure: Callable[[], None] | None = None) -> None:
        self._unfinished[kind] += 1
        (self._statuses if kind in STATUS_KINDS else self._others).append(_Queued(kind, job, on_failure))
        self._submitted.set()

    def unfinished(self, kind: str) -> int:
        """Jobs of `kind` submitted and not yet carried out (queued or in flight)."""
        return self._unfinished[kind]

    def finished(self, kind: str) -> int:
        """Jobs of `kind` carried out (or failed) since the start: their pace, read twice."""
        return self._finished[kind]

    async def carried_out(self, kind: str, *, leaving: int = 0) -> None:
        """Until at most `leaving` jobs of `kind` are unfinished: by default, until every one submitted
        so far (and meanwhile) has been carried out."""
        if self._unfinished[kind] <= leaving:
            return
        waiter = asyncio.get_running_loop().create_future()
        entry = (kind, leaving, waiter)
        self._waiters.append(entry)
        try:
            await waiter
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    @property
    def backlog(self) -> int:
        return len(self._statuses) + len(self._others) + self.in_flight

    async def run(self, shutdown: asyncio.Event) -> None:
        """Until shutdown, and then until what was submitted has started (and, in the group, ended)."""
        async with asyncio.TaskGroup() as tg:
            while not (shutdown.is_set() and not self._statuses and not self._others):
                if not self._statuses and not self._others:
                    self._submitted.clear()
                    try:
                        async with asyncio.timeout(POLL_S):
                            await self._submitted.wait()
                    except TimeoutError:
                        pass
                    continue
                await self._gate.acquire()
                # Taken once a slot is free: a status submitted meanwhile still goes first.
                queued = self._next()
                self.in_flight += 1
                tg.create_task(self._carry_out(queued), name=f"decision:{queued.kind}")

    def _next(self) -> _Queued:
        """The job to start in a free slot: a status, unless other jobs wait and statuses already hold
        their share of the slots."""
        if self._statuses and (not self._others or self._statuses_in_flight < self._status_share):
            self._statuses_in_flight += 1
            return self._statuses.popleft()
        return self._others.popleft()

    async def _carry_out(self, queued: _Queued) -> None:
        try:
            await queued.job()
        except Fenced as exc:
            FENCED.labels(self.instance).inc()
            log.info("decision.fenced", decision=queued.kind, error=str(exc))
            self._undo(queued)
        except TemporaryError as exc:  # the store did not answer (a NATS timeout under load): counted as before
            ERRORS.labels(self.instance).inc()
            log.warning("decision.error", decision=queued.kind, error=str(exc))
            self._undo(queued)
        except VcError as exc:
            log.info("decision.failed", decision=queued.kind, error=str(exc))
            self._undo(queued)
        except Exception as exc:  # transport boundary: the next cycle retries
            ERRORS.labels(self.instance).inc()
            log.warning("decision.error", decision=queued.kind, error=repr(exc))
            self._undo(queued)
        finally:
            self.in_flight -= 1
            if queued.kind in STATUS_KINDS:
                self._statuses_in_flight -= 1
            self._unfinished[queued.kind] -= 1
            self._finished[queued.kind] += 1
            self._wake(queued.kind)
            self._gate.release()

    def _wake(self, kind: str) -> None:
        left = self._unfinished[kind]
        for entry in [e for e in self._waiters if e[0] == kind and left <= e[1]]:
            self._waiters.remove(entry)
            if not entry[2].done():
                entry[2].set_result(None)

    @staticmethod
    def _undo(queued: _Queued) -> None:
        if queued.on_failure is not None:
            queued.on_failure()
