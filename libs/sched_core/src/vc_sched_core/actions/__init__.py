"""In-tree actions, one module each, returned as a registry value (no import-time registration)."""

from __future__ import annotations

from vc_sched_core.actions import allocate, backfill, enqueue, preempt, reclaim, shuffle
from vc_sched_core.framework.interfaces import ActionFactory
from vc_sched_core.framework.registry import Registry


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
