"""This instance's own binds, from a cycle's decision until its watch shows them stored: the bookkeeping
behind the cache's rules for them (cache.py applies the rules to its tables and index).

A bind is *assumed* when a cycle decides it (the cache shows the pod on its node at once, so the next
cycle never places it twice: Volcano's AddBindTask, kube-scheduler's assume), *written* when the binder
reports it stored, and *seen* when the watch delivers the stored bind. Until then:

- It occupies its node for the node owner's loans and commits (`occupying`). Between the write and the
  watch's delivery, which on Kubernetes passes through the apiserver and the relay, a bind counted
  nowhere once let an owner lend the room its own pod had just taken.
- An unbound version of the pod (the same uid) the watch delivers meanwhile is older than the bind, or
  not yet past it: a pod's node, once set, never changes or clears. The cache goes on showing the bind
  and keeps that version aside (`keep`), to show it instead if the bind fails (`undo`) or is given up,
  never seen within UNSEEN_AFTER_S (`expired`). kube-scheduler's cache likewise never lets an
  informer's unbound pod replace an assumed one: a cycle would see the node's room free and the pod
  waiting, and plan another pod there, or this one twice.
- A pod re-created under the name (another uid) ends its predecessor's bind (`recreated`).

A node changes owner only once every bind its old owner wrote is seen (peers.Several counts `unseen`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import NamedTuple

import msgspec

from vc_core.resources import PODS, Resources
from vc_sched_core.snapshot.cluster import PodObj
from vc_scheduler.ledger import UNSEEN_AFTER_S


class Kept(NamedTuple):
    """A version of a pod kept behind its own bind, and its stored bytes if the cache holds it brief."""

    version: PodObj
    brief: bytes | None


class _Unseen(msgspec.Struct, frozen=True, gc=False):
    """A bind written and not yet seen stored: when, and where it occupies."""

    at: float  # time.monotonic() of the write
    node: str
    uid: str


class OwnBinds:
    """One instance's binds in flight, by pod key, through the life the module docstring describes."""

    def __init__(self) -> None:
        self._assumed: dict[str, tuple[PodObj, float]] = {}  # pod key -> the assumed object, when
        # Assumed binds the watch has shown stored (the assumed object stays shown: it says the same):
        # when they were assumed, until the binder reports the bind written.
        self._confirmed: dict[str, float] = {}
        self._unseen: dict[str, _Unseen] = {}  # pod key -> its bind written, in the order written
        self._unseen_on: dict[str, dict[str, Resources]] = {}  # node -> pod uid -> requests (`pods` included)
        self._kept: dict[str, Kept] = {}  # pod key -> the version the watch last delivered unbound

    # -- a bind's life -----------------------------------------------------------------------------
    def assume(self, key: str, assumed: PodObj, now: float) -> None:
        self._assumed[key] = (assumed, now)

    def confirm(self, key: str, shown: PodObj, stored: PodObj) -> bool:
        """Whether `stored` is the stored bind of the pod assumed and `shown` as assumed, which then stays
        shown (equal objects: the bind's bound-by stamp is not in a view, no scheduler reads it from one,
        POD_ANNOTATIONS_READ)."""
        if key not in self._assumed or stored != shown:
            return False
        self._confirmed[key] = self._assumed.pop(key)[1]
        return True

    def written(self, key: str, now: float) -> float | None:
        """The binder wrote the bind: when it was assumed (None: not assumed here). Unless the watch
        already showed it stored, it is unseen from now on."""
        held = self._assumed.pop(key, None)
        confirmed = self._confirmed.pop(key, None)
        if held is None:
            return confirmed
        pod = held[0]
        self._forget_unseen(key)
        self._unseen[key] = _Unseen(now, pod.node_name, pod.uid)
        self._unseen_on.setdefault(pod.node_name, {})[pod.uid] = {**pod.requests, PODS: Fraction(1)}
        return held[1]

    def undo(self, key: str, shown: PodObj | None) -> tuple[bool, Kept | None]:
        """The bind failed, the binder says. Whether the watch showed it stored after all (then nothing is
        undone), and what the cache shows instead of `shown`: the version kept, or the assumed object
        without its node; None when `shown` is no longer the assumed object (what the watch delivered
        since, maybe the pod bound elsewhere, is the truth)."""
        held = self._assumed.pop(key, None)
        kept = self._kept.pop(key, None)
        if self._confirmed.pop(key, None) is not None:
            return True, None
        if held is None or shown is not held[0]:
            return False, None
        return False, kept or Kept(msgspec.structs.replace(held[0], node_name=""), None)

    def seen(self, key: str) -> None:
        """The watch delivered the pod bound, or its deletion: its bind is no longer only ours to count."""
        self._kept.pop(key, None)
        self._forget_unseen(key)

    def recreated(self, key: str, old_uid: str) -> None:
        """Another pod now has the name (the old one's delete passed by a lagging watch)."""
        self._kept.pop(key, None)
        unseen = self._unseen.get(key)
        if unseen is not None and unseen.uid == old_uid:
            self._forget_unseen(key)

    def expired(self, now: float) -> list[tuple[str, Kept | None]]:
        """The binds written longer than UNSEEN_AFTER_S ago and never seen (their pods went another way),
        given up now, with the version kept for each (the cache shows it if it still shows the bind)."""
        out = []
        while self._unseen and now - next(iter(self._unseen.values())).at > UNSEEN_AFTER_S:
            key = next(iter(self._unseen))
            out.append((key, self._kept.pop(key, None)))
            self._forget_unseen(key)
        return out

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed

    # -- unbound versions delivered meanwhile -------------------------------------------------------
    def keeps(self, key: str, shown: PodObj, stored: PodObj) -> bool:
        """Whether `stored`, delivered unbound, is behind the bind shown for this instance's pod."""
        own = key in self._assumed or key in self._unseen
        return own and bool(shown.node_name) and not stored.node_name and stored.uid == shown.uid

    def keep(self, key: str, kept: Kept) -> None:
        self._kept[key] = kept

    # -- what they add up to -----------------------------------------------------------------------
    def assumed(self, shown: Callable[[str], PodObj | None]) -> frozenset[str]:
        """Pods shown only as assumed (no stored bind seen yet)."""
        return frozenset(k for k, (obj, _) in self._assumed.items() if shown(k) is obj)

    def occupying(
        self, node: str, on_node: Iterable[str], shown: Callable[[str], PodObj | None], out: dict[str, Resources]
    ) -> dict[str, Resources]:
        """`out` (by uid, what the stored binds put on `node`) with this instance's binds there added:
        assumed (of the pods `on_node` the cache shows as assumed) and written not yet seen."""
        for key in on_node:
            held = self._assumed.get(key)
            if held is not None and shown(key) is held[0] and held[0].uid not in out:
                out[held[0].uid] = {**held[0].requests, PODS: Fraction(1)}
        for uid, requests in self._unseen_on.get(node, {}).items():
            out.setdefault(uid, requests)
        return out

    def unseen(self) -> int:
        return len(self._unseen)

    def _forget_unseen(self, key: str) -> None:
        unseen = self._unseen.pop(key, None)
        if unseen is not None:
            on = self._unseen_on.get(unseen.node)
            if on is not None:
                on.pop(unseen.uid, None)
                if not on:
                    del self._unseen_on[unseen.node]
