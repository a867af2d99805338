"""In-tree actions, one module each, returned as a registry value (no import-time registration)."""

from __future__ import annotations

from vc_scheduling.actions import allocate, backfill, enqueue, preempt, reclaim, shuffle
from vc_scheduling.framework.interfaces import ActionFactory
from vc_scheduling.framework.registry import Registry


def in_tree_actions() -> Registry[ActionFactory]:
    return Registry(
        {
            enqueue.NAME: enqueue.EnqueueAction,
            allocate.NAME: allocate.AllocateAction,
            backfill.NAME: backfill.BackfillAction,
            preempt.NAME: preempt.PreemptAction,
            reclaim.NAME: reclaim.ReclaimAction,
            shuffle.NAME: shuffle.ShuffleAction,
        }
    )
