"""The shell around `decide`: one queue (or one queue Command) per dispatcher key, one writer per queue.

Keys are queues and queue Commands (`keys.py`). A queue is handled only by the instance
that owns its name; a Command only by the owner of its target queue, which deletes it *before* acting
(at-most-once, as Volcano). Nothing runs before every cache has synced: a Closing queue must not be
declared empty because its PodGroups were not loaded yet.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import structlog

from vc_core.errors import AlreadyExists, Conflict, NotFound
from vc_core.retry import RetryPolicy
from vc_core.times import rfc3339
from vc_proto import events as ev
from vc_proto.bus import Command
from vc_proto.events import DomainEvent
from vc_proto.scheduling import Queue
from vc_proto.vocabulary import Action
from vc_queue_controller import metrics
from vc_queue_controller.caches import QueueCaches
from vc_queue_controller.keys import COMMAND, Key, queue_key, split_command
from vc_queue_controller.logic.decide import QueuePlan, QueueView, decide
from vc_queue_controller.logic.defaults import ALWAYS_PRESENT, default_queue
from vc_queue_controller.logic.hierarchy import parent_name, with_default_parent
from vc_runtime.sharding import FencedStore, Ownership

log = structlog.get_logger(__name__)
Publish = Callable[[DomainEvent], Awaitable[object]]

QUEUE_ACTIONS = (Action.OPEN_QUEUE, Action.CLOSE_QUEUE)
SOURCE = "queue-controller"
# A lost compare-and-set (the scheduler writes `allocated`) is re-read and retried up to 3 times in place,
# within a few milliseconds; any other failure goes to the dispatcher's retry of the key.
WRITE_RETRY = RetryPolicy((Conflict,), base_s=0.005, cap_s=0.02, attempts=3)


class QueueController:
    def __init__(
        self,
        *,
        caches: QueueCaches,
        writer: FencedStore,
        ownership: Ownership,
        publish: Publish,
        submit: Callable[[Key], None],
        on_pass: Callable[[Key], None] | None = None,
        pass_took: Callable[[Key, float], None] | None = None,
    ) -> None:
        self._caches = caches
        self._writer = writer
        self._ownership = ownership
        self._publish = publish
        self._submit = submit
        self._on_pass = on_pass
        self._pass_took = pass_took
        self._metrics = metrics.QueueMetrics()
        # Actions taken from Commands, waiting for their queue's next pass. At most one per queue: the
        # newest wins, which ends where running both in order would (Open/Close only set the state).
        self._requested: dict[str, Action] = {}

    async def handle(self, key: Key) -> None:
        if not self._caches.synced():
            return  # every key is submitted again once the caches have synced
        if key[0] == COMMAND:
            await self._take_command(*split_command(key))
        else:
            await self._sync_queue(key[1])

    # -- commands ----------------------------------------------------------------------------------
    async def _take_command(self, namespace: str | None, name: str) -> None:
        command = self._caches.commands.get(namespace, name)
        if command is None or command.target is None or not self._ownership.owns(command.target.name):
            return
        try:
            await self._writer.delete(Command, namespace, name, uid=command.metadata.uid)
        except (NotFound, Conflict):
            return  # already taken: a Command runs at most once
        target = command.target.name
        action = _queue_action(command.action)
        metrics.COMMANDS.labels(command.action or "").inc()
        if action is None:
            log.warning("command.unsupported", command=name, action=command.action, queue=target)
            return
        log.info("command.taken", command=name, action=action.value, queue=target)
        await self._emit(
            target,
            ev.COMMAND_ISSUED,
            f"Start to execute command {action.value}, and clean it up to make sure executed not more than once.",
        )
        self._requested[target] = action
        self._submit(queue_key(target))

    # -- queues ------------------------------------------------------------------------------------
    async def _sync_queue(self, name: str) -> None:
        if self._on_pass is not None:
            self._on_pass(queue_key(name))
        if not self._ownership.owns(name):
            self._metrics.forget(name)
            return
        action = self._requested.pop(name, Action.SYNC_QUEUE)
        try:
            await self._sync_with_retries(name, action)
        except BaseException:
            if action is not Action.SYNC_QUEUE:
                self._requested.setdefault(name, action)  # not done: keep the command's action for the retry
            raise

    async def _sync_with_retries(self, name: str, action: Action) -> None:
        async def sync() -> None:
            try:
                await self._sync_once(name, action)
            except Conflict:
                await self._refresh(name)  # the next try starts from the stored queue
                raise

        await WRITE_RETRY.call(sync, sleep=asyncio.sleep)

    async def _refresh(self, name: str) -> None:
        try:
            self._caches.queues.remember(await self._writer.get(Queue, None, name))
        except NotFound:
            pass

    async def _sync_once(self, name: str, action: Action) -> None:
        queue = self._caches.queue(name)
        if queue is None:
            await self._ensure_present(name)
            return
        started = time.perf_counter()
        parent = self._caches.queue(parent_name(with_default_parent(queue)))
        plan = decide(QueueView(queue, parent, tally=self._caches.tally(name)), action)
        self._metrics.observe(name, plan.counts, plan.inqueue)
        if self._pass_took is not None:
            self._pass_took(queue_key(name), time.perf_counter() - started)
        if plan.refused:
            log.warning("queue.action_refused", queue=name, action=action.value, reason=plan.refused)
            await self._emit(name, action.value, plan.refused)
        if plan.changed:
            await self._write(plan)

    async def _write(self, plan: QueuePlan) -> None:
        stored = await self._writer.update(plan.queue)
        self._caches.queues.remember(stored)
        metrics.STATUS_WRITES.inc()
        name = stored.metadata.name or ""
        log.info(
            "queue.synced",
            queue=name,
            action=plan.action.value,
            state=plan.state.value,
            previous_state=plan.previous_state,
        )
        if plan.state_changed:
            message = f"{plan.action.value}: queue is {plan.state.value} (was {plan.previous_state or 'Open'})"
            await self._emit(name, ev.PHASE_CHANGED, message, plan=plan, revision=stored.metadata.resource_version)

    async def _ensure_present(self, name: str) -> None:
        """`root` and `default` always exist: (re)create them when missing."""
        self._metrics.forget(name)
        if name not in ALWAYS_PRESENT:
            return
        try:
            self._caches.queues.remember(await self._writer.create(default_queue(name)))
            log.info("queue.created", queue=name)
        except AlreadyExists:
            pass  # our cache is behind; its watch brings the queue

    async def _emit(
        self, queue: str, reason: str, message: str, *, plan: QueuePlan | None = None, revision: str | None = None
    ) -> None:
        occurred_at = rfc3339(datetime.now(UTC))
        # A queue's revision tells its facts apart; without one (an action on a queue that did not
        # change), the moment does, so a repeat a minute later is kept, not dropped as a duplicate.
        event = DomainEvent(
            id=ev.event_id("queue", queue, revision) if revision else ev.event_id("queue", queue, reason, occurred_at),
            occurred_at=occurred_at,
            source=SOURCE,
            kind="Queue",
            name=queue,
            reason=reason,
            message=message,
            phase=plan.state.value if plan else None,
            previous_phase=plan.previous_state if plan else None,
        )
        try:
            await self._publish(event)
        except Exception as exc:  # history is best effort; the queue write already happened
            log.warning("queue.event_not_published", queue=queue, reason=reason, error=repr(exc))


def _queue_action(text: str | None) -> Action | None:
    try:
        action = Action(text or "")
    except ValueError:
        return None
    return action if action in QUEUE_ACTIONS else None
