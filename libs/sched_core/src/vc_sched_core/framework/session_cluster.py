"""The snapshot a session was opened on, for plugins that read objects the session model does not
carry (namespace labels, ResourceQuotas, PodDisruptionBudgets): kept beside the session, not in it,
and dropped with it."""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from vc_sched_core.snapshot.cluster import ClusterSnapshot

if TYPE_CHECKING:
    from vc_sched_core.framework.session import Session

_SNAPSHOTS: WeakKeyDictionary[Session, ClusterSnapshot] = WeakKeyDictionary()


def remember_snapshot(ssn: Session, snapshot: ClusterSnapshot) -> None:
    _SNAPSHOTS[ssn] = snapshot


def snapshot_of(ssn: Session) -> ClusterSnapshot:
    """The session's snapshot (an empty one for a session opened without `open_session`)."""
    return _SNAPSHOTS.get(ssn) or ClusterSnapshot()
