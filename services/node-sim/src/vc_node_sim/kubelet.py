"""The simulated kubelet for a set of nodes: follows the pods bound to them and carries out `plan()`.

Before starting a pod it admits it as a kubelet does (`admit.py`): a pod admission would refuse, or one
that does not fit beside what its node already runs, ends Failed with the reason instead of running.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from dataclasses import dataclass, field

import msgspec
import structlog
from prometheus_client import Counter, Gauge

from vc_bus.decoding import CorruptObject, report_unprocessable
from vc_core.errors import Conflict, NotFound
from vc_core.resources import Resources
from vc_core.store import ObjectStore, WatchEvent, WatchOp
from vc_core.times import rfc3339_from_epoch
from vc_node_sim.admit import Rejection, admit, pod_requests
from vc_node_sim.cached import cached_pod, shared_requests
from vc_node_sim.history import REPUBLISH_WITHIN_S, Transition, pod_event, recent_transitions
from vc_node_sim.logic import Next, SimConfig, Step, parse_time, plan
from vc_node_sim.statuses import finished_status, node_object, node_ready, rejected_status, running_status
from vc_proto import events as ev
from vc_proto.core import Node, Pod, PodStatus
from vc_proto.events import DomainEvent
from vc_proto.selectors import pods_bound_to
from vc_runtime.aio import until, wait_or_stop
from vc_runtime.refusals import report_refused

log = structlog.get_logger(__name__)
PodKey = tuple[str, str]

REJECTED = Counter("tephra_node_sim_pods_rejected_total", "Pods node-sim refused to start, by reason", ["reason"])
TRANSITIONS = Counter("tephra_node_sim_pod_transitions_total", "Pod transitions made by node-sim", ["step"])
PODS = Gauge("tephra_node_sim_pods", "Pods on simulated nodes")
NODES = Gauge("tephra_node_sim_nodes", "Simulated nodes")

MAX_IN_FLIGHT = 256
MAX_REPUBLISHED = 100_000  # pods whose recent transitions a restart publishes again (history.py)
REPUBLISH_CHUNK = 1_000  # events published together (one write per pod: each has a subject of its own)


@dataclass
class NodeState:
    name: str
    host_ip: str
    capacity: dict[str, str]
    not_ready_since: float | None = None
    annotations: dict[str, str] | None = None  # what the node publishes (its shareable GPUs)


@dataclass
class Kubelet:
    store: ObjectStore
    cfg: SimConfig
    publish: object  # async (DomainEvent) -> None
    nodes: dict[str, NodeState] = field(default_factory=dict)
    pods: dict[PodKey, Pod] = field(default_factory=dict)  # what plan() reads of each (cached.py)
    seen_at: dict[PodKey, float] = field(default_factory=dict)
    by_node: dict[str, set[PodKey]] = field(default_factory=dict)
    # Pods whose start is decided but not yet stored: they hold their node's room meanwhile.
    _starting: set[PodKey] = field(default_factory=set)
    # What each pod asks of its node, from the whole pod when first seen (by uid: requests do not change).
    _requests: dict[PodKey, tuple[str | None, Resources]] = field(default_factory=dict)
    _timers: list[tuple[float, int, PodKey, Step]] = field(default_factory=list)
    _scheduled: dict[PodKey, tuple[Step, float]] = field(default_factory=dict)
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    # Until the first sync: the events of the transitions the stored pods show as recent, by pod, which
    # the sync's end publishes again (history.py) before any timer runs; then None.
    _republish: dict[PodKey, list[tuple[float, DomainEvent]]] | None = field(default_factory=dict)
    republished: asyncio.Event = field(default_factory=asyncio.Event)

    # -- nodes -------------------------------------------------------------------------------------
    async def register(
        self,
        name: str,
        *,
        capacity: dict[str, str],
        host_ip: str,
        ready: bool | None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
    ) -> None:
        """Create the node, or adopt it keeping its readiness unless `ready` says otherwise."""
        now = rfc3339_from_epoch(time.time())
        for _ in range(10):
            existing = await self._stored_node(name)
            is_ready = ready if ready is not None else (node_ready(existing) if existing else True)
            node = node_object(
                name,
                capacity=capacity,
                ready=is_ready,
                now=now,
                existing=existing,
                labels=labels,
                annotations=annotations,
            )
            if existing and node_ready(existing) == is_ready:
                node = _keep_transition_time(node, existing)
            try:
                stored = await (self.store.update(node) if existing else self.store.create(node))
            except Conflict:
                continue
            if is_ready and _not_ready_tainted(stored):
                # A real apiserver (TaintNodesByCondition admission) taints every new Node not-ready;
                # with no node lifecycle controller, the hollow kubelet lifts it itself: go round again.
                continue
            self.nodes[name] = NodeState(name, host_ip, capacity, _not_ready_since(stored), annotations)
            NODES.set(len(self.nodes))
            return
        raise Conflict("Node", name, expected=None)

    async def _stored_node(self, name: str) -> Node | None:
        try:
            return await self.store.get(Node, None, name)
        except NotFound:
            return None
        except CorruptObject:
            # This simulator owns its nodes: a value someone wrote over one is replaced, not obeyed.
            log.warning("node.corrupt_replaced", node=name)
            await self.store.delete(Node, None, name, grace=False)  # no precondition: removes the bad value
            return None

    async def set_ready(self, name: str, ready: bool) -> None:
        state = self.nodes.get(name)
        if state is None:
            raise NotFound("Node", name)
        await self.register(
            name, capacity=state.capacity, host_ip=state.host_ip, ready=ready, annotations=state.annotations
        )
        for key, pod in list(self.pods.items()):
            if pod.spec and pod.spec.node_name == name:
                self._schedule(key)

    async def heartbeat(self, name: str) -> None:
        state = self.nodes[name]
        await self.register(
            name, capacity=state.capacity, host_ip=state.host_ip, ready=None, annotations=state.annotations
        )

    # -- pods --------------------------------------------------------------------------------------
    async def follow_pods(self, shutdown: asyncio.Event) -> None:
        # Only pods bound to these nodes are decoded: most changes under load are of pods still unbound.
        async for event in until(shutdown, self.store.watch(Pod, select=pods_bound_to(self.nodes))):
            self.apply(event)
            if event.op is WatchOp.SYNCED and self._republish is not None:
                await self._publish_again()
        PODS.set(len(self.pods))

    async def _publish_again(self) -> None:
        """Publish again the events of the transitions the first sync showed as recent: those a previous
        process wrote and did not live to publish are stored now, the others are dropped as duplicates.
        Starts first, then ends: one pod's events each in a write of its own, so each keeps its id."""
        pending, self._republish = self._republish or {}, None
        published = failed = 0
        try:
            for round_ in (0, 1):
                events = [each[round_] for each in pending.values() if len(each) > round_]
                for start in range(0, len(events), REPUBLISH_CHUNK):
                    # Still inside the duplicate window now, not only when the sync delivered the pod.
                    now = time.time()
                    chunk = [e for at, e in events[start : start + REPUBLISH_CHUNK] if now - at <= REPUBLISH_WITHIN_S]
                    try:
                        await asyncio.gather(*(self.publish(e) for e in chunk))  # type: ignore[operator]
                        published += len(chunk)
                    except Exception as exc:  # NATS unavailable (after the batches' retries): go on
                        failed += len(chunk)
                        log.warning("history.republish_failed", events=len(chunk), error=repr(exc))
            if pending:
                log.info("history.republished", pods=len(pending), events=published, failed=failed)
        finally:
            self.republished.set()  # the timers run whatever happened here

    def apply(self, event: WatchEvent) -> None:
        """One event of the watch of the pods bound to these nodes."""
        if event.op is WatchOp.SYNCED:
            self.synced.set()
            return
        key = (event.namespace or "", event.name)
        if event.op is WatchOp.DELETE or not isinstance(event.obj, Pod):
            self._forget(key)
            return
        node = event.obj.spec.node_name if event.obj.spec else None
        if node not in self.nodes:
            self._forget(key)
            return
        if self._republish is not None:
            self._note_recent(key, event.obj)
        self._keep(key, event.obj)
        self.seen_at.setdefault(key, time.time())
        self._schedule(key)

    def _note_recent(self, key: PodKey, pod: Pod) -> None:
        assert self._republish is not None
        now = time.time()
        try:
            transitions = recent_transitions(pod, now=now)
        except ValueError:
            return  # a time that is not one: plan() reports the pod
        events = [(t.at or now, e) for t in transitions if (e := pod_event(pod, t, now=now)) is not None]
        if not events:
            self._republish.pop(key, None)
        elif key in self._republish or len(self._republish) < MAX_REPUBLISHED:
            self._republish[key] = events
        else:  # past the bound: this pod's recent events are not published again, and the log says so
            log.warning("history.republish_bound", pod=f"{key[0]}/{key[1]}", bound=MAX_REPUBLISHED)

    def _keep(self, key: PodKey, pod: Pod) -> None:
        old = self.pods.get(key)
        old_node = old.spec.node_name if old is not None and old.spec else None
        node = pod.spec.node_name if pod.spec else None
        if old_node != node and old_node is not None:
            self.by_node.get(old_node, set()).discard(key)
        if node is not None:
            self.by_node.setdefault(node, set()).add(key)
        known = self._requests.get(key)
        if known is None or known[0] != pod.metadata.uid:
            self._requests[key] = (pod.metadata.uid, shared_requests(pod_requests(pod)))
        self.pods[key] = cached_pod(pod)

    def _forget(self, key: PodKey) -> None:
        pod = self.pods.pop(key, None)
        if pod is not None and pod.spec and pod.spec.node_name:
            self.by_node.get(pod.spec.node_name, set()).discard(key)
        self.seen_at.pop(key, None)
        self._scheduled.pop(key, None)
        self._requests.pop(key, None)

    def _next(self, key: PodKey) -> Next | None:
        pod = self.pods.get(key)
        if pod is None:
            return None
        node = self.nodes.get(pod.spec.node_name or "") if pod.spec else None
        since = node.not_ready_since if node else None
        try:
            return plan(pod, seen_at=self.seen_at.get(key, time.time()), node_not_ready_since=since, cfg=self.cfg)
        except ValueError as exc:  # a timestamp someone wrote that is not one: leave this pod, serve the rest
            where = {"key": f"{key[0]}/{key[1]}", "revision": pod.metadata.resource_version}
            report_unprocessable(source="node-sim:plan", kind="Pod", error=exc, **where)
            return None

    def _schedule(self, key: PodKey) -> None:
        nxt = self._next(key)
        if nxt is None:
            self._scheduled.pop(key, None)
            return
        if self._scheduled.get(key) == (nxt.step, nxt.due):
            return
        self._scheduled[key] = (nxt.step, nxt.due)
        heapq.heappush(self._timers, (nxt.due, next(self._seq), key, nxt.step))
        self._wake.set()

    async def run_timers(self, shutdown: asyncio.Event) -> None:
        # After the sync's events are published again: a transition made meanwhile would share a write
        # (and so an id) with one of them.
        if not await wait_or_stop(self.republished, shutdown):
            return
        gate = asyncio.Semaphore(MAX_IN_FLIGHT)
        async with asyncio.TaskGroup() as tg:
            while not shutdown.is_set():
                for key, nxt in self._due(time.time()):
                    await gate.acquire()
                    tg.create_task(self._carry_out(key, nxt, gate), name=f"pod:{key[0]}/{key[1]}:{nxt.step.value}")
                await self._sleep_until_next()

    def _due(self, now: float) -> list[tuple[PodKey, Next]]:
        due = []
        while self._timers and self._timers[0][0] <= now:
            _, _, key, step = heapq.heappop(self._timers)
            nxt = self._next(key)
            if nxt is None or nxt.step is not step or nxt.due > now:
                continue
            if self._scheduled.get(key) != (nxt.step, nxt.due):
                continue
            self._scheduled[key] = (nxt.step, float("inf"))  # in flight: do not start it twice
            due.append((key, nxt))
        return due

    async def _sleep_until_next(self) -> None:
        timeout = 0.5
        if self._timers:
            timeout = min(timeout, max(0.0, self._timers[0][0] - time.time()))
        self._wake.clear()
        try:
            async with asyncio.timeout(timeout):
                await self._wake.wait()
        except TimeoutError:
            pass

    async def _carry_out(self, key: PodKey, nxt: Next, gate: asyncio.Semaphore) -> None:
        try:
            await self._apply(key, nxt)
            TRANSITIONS.labels(nxt.step.value).inc()
        except Conflict:
            await self._refresh(key)
        except NotFound:
            self._forget(key)
        except Exception as exc:  # one pod's failure must not stop the node: retry it from fresh state
            log.warning("pod.step_failed", pod=f"{key[0]}/{key[1]}", step=nxt.step.value, error=repr(exc))
            await asyncio.sleep(0.5)
            await self._refresh(key)
        finally:
            gate.release()

    async def _refresh(self, key: PodKey) -> None:
        try:
            self._keep(key, await self.store.get(Pod, key[0], key[1]))
        except (NotFound, CorruptObject):
            self._forget(key)  # gone, or no longer a pod anyone can run
            return
        except Exception as exc:  # NATS unavailable: keep the cached copy; its step is due again
            log.warning("pod.refresh_failed", pod=f"{key[0]}/{key[1]}", error=repr(exc))
        self._scheduled.pop(key, None)
        self._schedule(key)

    async def _apply(self, key: PodKey, nxt: Next) -> None:
        pod = self.pods[key]
        now = rfc3339_from_epoch(time.time())
        node = pod.spec.node_name if pod.spec else None
        if nxt.step is Step.REMOVE:
            await self.store.delete(Pod, key[0], key[1], uid=pod.metadata.uid, grace=False)
            return
        if nxt.step is Step.EVICT:
            await self.store.delete(Pod, key[0], key[1], uid=pod.metadata.uid, grace=False)
            await self._event(pod, ev.POD_EVICTED, f"node {node} is NotReady: pod evicted", phase=None)
            return
        if nxt.step is Step.START:
            await self._start(key, pod, node or "", now)
            return
        pod = await self._stored(key, pod)
        status = finished_status(pod, now=now, exit_code=nxt.exit_code, reason=nxt.reason, message=nxt.message)
        updated = await self._write_status(key, pod, status)
        if nxt.reason is not None:
            report_refused(kind="Pod", key=f"{key[0]}/{key[1]}", rule=nxt.reason, message=nxt.message or "")
        await self._event(updated, ev.POD_EXITED, nxt.message, phase=status.phase, exit_code=nxt.exit_code)

    async def _start(self, key: PodKey, pod: Pod, node: str, now: str) -> None:
        """Admit, then run (or reject) the pod. No await between the admission and taking the room."""
        pod = await self._stored(key, pod)
        rejection = admit(pod, allocatable=self.nodes[node].capacity, running=self._running_on(node, besides=key))
        if rejection is not None:
            await self._reject(key, pod, rejection, now)
            return
        self._starting.add(key)
        try:
            updated = await self._write_status(key, pod, running_status(pod, now=now, host_ip=self.nodes[node].host_ip))
        finally:
            self._starting.discard(key)
        await self._event(updated, ev.POD_STARTED, None, phase="Running")

    async def _reject(self, key: PodKey, pod: Pod, rejection: Rejection, now: str) -> None:
        status = rejected_status(pod, now=now, reason=rejection.reason, message=rejection.message)
        updated = await self._write_status(key, pod, status)
        REJECTED.labels(rejection.reason).inc()
        if rejection.reason.startswith("OutOf"):
            log.warning("pod.rejected", pod=f"{key[0]}/{key[1]}", reason=rejection.reason, message=rejection.message)
        else:
            report_refused(kind="Pod", key=f"{key[0]}/{key[1]}", rule=rejection.reason, message=rejection.message)
        await self._event(updated, rejection.reason, rejection.message, phase="Failed")

    async def _stored(self, key: PodKey, cached: Pod) -> Pod:
        """The stored pod at the version the cache holds, whole, to admit it and write its status from
        (the cache keeps only what plan() reads). A newer version is a Conflict, as the write's own
        compare-and-set would be: the step is then planned again from it."""
        stored = await self.store.get(Pod, key[0], key[1])
        if stored.metadata.resource_version != cached.metadata.resource_version:
            raise Conflict("Pod", f"{key[0]}/{key[1]}", expected=_revision(cached))
        return stored

    async def _write_status(self, key: PodKey, pod: Pod, status: PodStatus) -> Pod:
        updated = await self.store.update(msgspec.structs.replace(pod, status=status))
        self._keep(key, updated)
        self._scheduled.pop(key, None)
        self._schedule(key)
        return updated

    def _running_on(self, node: str, *, besides: PodKey) -> list[Resources]:
        """Requests of the pods `node` runs now, or is starting (a pod's room is held from its admission)."""
        out = []
        for key in self.by_node.get(node, ()):
            pod = self.pods.get(key)
            if key == besides or pod is None:
                continue
            if key in self._starting or (pod.status is not None and pod.status.phase == "Running"):
                out.append(self._requests[key][1])  # every cached pod's, kept with it (_keep)
        return out

    async def _event(
        self, pod: Pod, reason: str, message: str | None, *, phase: str | None, exit_code: int | None = None
    ) -> None:
        event = pod_event(pod, Transition(reason, message, phase, exit_code), now=time.time())
        if event is not None:
            await self.publish(event)  # type: ignore[operator]


def _revision(pod: Pod) -> int | None:
    rv = pod.metadata.resource_version
    return int(rv) if rv and rv.isdigit() else None


def _not_ready_since(node: Node) -> float | None:
    for cond in (node.status.conditions if node.status else None) or []:
        if cond.type == "Ready" and cond.status != "True":
            return _time_or_none(cond.last_transition_time) or time.time()
    return None


def _time_or_none(text: str | None) -> float | None:
    """A node's timestamps are node-sim's own, but the store is anyone's: one that is not a time is none."""
    try:
        return parse_time(text)
    except ValueError:
        return None


def _keep_transition_time(node: Node, existing: Node) -> Node:
    old = {c.type: c for c in (existing.status.conditions if existing.status else None) or []}
    assert node.status is not None
    conditions = [
        msgspec.structs.replace(c, last_transition_time=old[c.type].last_transition_time)
        if c.type in old and _time_or_none(old[c.type].last_transition_time) is not None
        else c
        for c in node.status.conditions or []
    ]
    return msgspec.structs.replace(node, status=msgspec.structs.replace(node.status, conditions=conditions))


def _not_ready_tainted(node: Node) -> bool:
    taints = (node.spec.taints if node.spec else None) or []
    return any(t.key == "node.kubernetes.io/not-ready" for t in taints)
