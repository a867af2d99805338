"""The queue controller's view of the world: Queues, PodGroups (indexed by queue), queue Commands.

Changes are turned into dispatcher keys: a queue's own changes and its parent's, a PodGroup's
arrival, departure, phase or queue change, a new queue Command.
"""

from __future__ import annotations

from collections.abc import Callable

from vc_core.store import ObjectStore
from vc_proto.bus import Command
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, Queue
from vc_queue_controller.keys import Key, command_key, queue_key
from vc_queue_controller.logic.defaults import ALWAYS_PRESENT
from vc_queue_controller.logic.hierarchy import parent_name, state_of
from vc_queue_controller.logic.status import phase_of, queue_of
from vc_queue_controller.logic.tally import QueueTally
from vc_runtime.informer import Informer, ObjectKey

QUEUE_KIND = "Queue"


def targets_queue(command: Command) -> bool:
    target = command.target
    return target is not None and target.kind == QUEUE_KIND and target.api_version == SCHEDULING_V1BETA1


def _podgroup_signature(podgroup: PodGroup) -> tuple[str, str, object]:
    """What the queue status depends on; other PodGroup changes (conditions...) are not our business."""
    return queue_of(podgroup), phase_of(podgroup), podgroup.spec.min_resources if podgroup.spec else None


class QueueCaches:
    def __init__(
        self,
        store: ObjectStore,
        *,
        submit_queue: Callable[[str], None],
        submit_command: Callable[[ObjectKey], None],
        hint_queue: Callable[[str], None] | None = None,
    ) -> None:
        self._submit_queue = submit_queue
        # PodGroup churn only hints (batched); queue and Command changes are handled at once.
        self._hint_queue = hint_queue or submit_queue
        self._submit_command = submit_command
        self.queues = Informer(store, Queue, on_change=self._queue_changed)
        self.podgroups = Informer(store, PodGroup, on_change=self._podgroup_changed)
        self.commands = Informer(store, Command, on_change=self._command_changed)
        # Each queue's PodGroup counts and inqueue sum, updated per change (logic/tally.py).
        self._tallies: dict[str, QueueTally] = {}

    @property
    def informers(self) -> tuple[Informer[Queue], Informer[PodGroup], Informer[Command]]:
        return self.queues, self.podgroups, self.commands

    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers)

    def keys(self) -> list[Key]:
        """Every dispatcher key: each queue (and the ones that must exist), each queue Command."""
        names = {*ALWAYS_PRESENT, *(q.metadata.name or "" for q in self.queues.items.values())}
        commands = [command_key(ns, name) for (ns, name), c in self.commands.items.items() if targets_queue(c)]
        return [*(queue_key(n) for n in sorted(names)), *commands]

    def queue(self, name: str | None) -> Queue | None:
        return self.queues.get(None, name) if name else None

    def tally(self, queue: str) -> QueueTally:
        """The queue's PodGroups, counted (empty when it has none)."""
        return self._tallies.get(queue) or QueueTally()

    def children_of(self, queue: str) -> list[str]:
        return [q.metadata.name or "" for q in self.queues.items.values() if parent_name(q) == queue]

    def _queue_changed(self, old: Queue | None, new: Queue | None) -> None:
        current = new or old
        assert current is not None
        name = current.metadata.name or ""
        self._submit_queue(name)
        if old is None or new is None or state_of(old) != state_of(new):
            for child in self.children_of(name):
                self._submit_queue(child)

    def _podgroup_changed(self, old: PodGroup | None, new: PodGroup | None) -> None:
        if old is not None and new is not None and _podgroup_signature(old) == _podgroup_signature(new):
            return
        for podgroup, present in ((old, False), (new, True)):
            if podgroup is None:
                continue
            queue = queue_of(podgroup)
            tally = self._tallies.get(queue)
            if tally is None:
                tally = self._tallies[queue] = QueueTally()
            if present:
                tally.add(podgroup)
            else:
                tally.remove(podgroup)
                if not tally.members:
                    del self._tallies[queue]
            self._hint_queue(queue)

    def _command_changed(self, old: Command | None, new: Command | None) -> None:
        if new is not None and targets_queue(new):
            self._submit_command((new.metadata.namespace, new.metadata.name or ""))
