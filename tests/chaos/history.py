"""PURE: what a chaos run records, in the order it was recorded.

- `Change`: one write the store acknowledged (a KV put or delete), as the server republished it at
  store time: its bucket revision, the key's previous revision and the server's timestamp. Every
  bind is a `Change` of a Pod that sets `spec.nodeName`.
- `Rollback`: a store restored to an earlier copy (default fsync, OS crash): revisions after `kept`
  are gone; everything acknowledged up to `synced` (before the last sync) must have been kept.
- `Survey`: right after a server restart, every key's newest revision as the store reports it.
- `Submission`: what the load driver sent to admission and what came back.
- `Gap`: the recorder saw a revision whose predecessor it never saw (it would hide changes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Obj = Mapping[str, Any]
Op = Literal["put", "delete"]
# Kinds the recorder follows: enough for every invariant (binds, capacities, gangs, jobs).
RECORDED_KINDS = ("Node", "Queue", "Job", "PodGroup", "Pod")


@dataclass(frozen=True, slots=True)
class Change:
    kind: str
    seq: int  # the bucket revision (KV stream sequence)
    key: str  # "<namespace>.<name>", "_.<name>" when cluster-scoped
    op: Op
    obj: Obj | None  # the decoded value; None for a delete or a value that is not JSON
    at: float  # server time of the write, seconds since the epoch
    previous: int = 0  # the key's previous revision (0: the key was new)

    def describe(self) -> str:
        return f"{self.kind} {self.key} rev {self.seq} {self.op}{_summary(self)}"


@dataclass(frozen=True, slots=True)
class Rollback:
    kind: str
    kept: int  # the last revision the restored store holds
    synced: int  # every revision up to here was acknowledged before the copy (the last sync)
    at: float

    def describe(self) -> str:
        return f"{self.kind} store restored to rev {self.kept} (acknowledged before the last sync: up to {self.synced})"


@dataclass(frozen=True, slots=True)
class Survey:
    kind: str
    newest: Mapping[str, int]  # key -> newest revision the store holds (delete markers included)
    at: float
    why: str = ""


@dataclass(frozen=True, slots=True)
class Submission:
    name: str
    key: str  # Job key "<namespace>.<name>"
    outcome: Literal["acked", "refused", "unknown"]
    at: float
    revision: int = 0  # acked: the resourceVersion admission returned
    uid: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Gap:
    kind: str
    seq: int  # the revision concerned
    why: str
    key: str = ""


Record = Change | Rollback | Survey


@dataclass
class History:
    records: list[Record] = field(default_factory=list)
    submissions: list[Submission] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    end_at: float = 0.0
    drained: bool = False  # every job reached a terminal phase before the run ended

    def changes(self) -> list[Change]:
        return [r for r in self.records if isinstance(r, Change)]


def _summary(change: Change) -> str:
    obj = change.obj
    if obj is None:
        return ""
    parts = []
    spec, status, meta = obj.get("spec") or {}, obj.get("status") or {}, obj.get("metadata") or {}
    if change.kind == "Pod":
        parts.append(f"uid={str(meta.get('uid', ''))[:8]}")
        parts.append(f"node={spec.get('nodeName') or '-'}")
        parts.append(f"phase={status.get('phase') or 'Pending'}")
    elif change.kind == "Job":
        parts.append(f"phase={(status.get('state') or {}).get('phase') or '-'}")
    elif change.kind == "PodGroup":
        parts.append(f"phase={status.get('phase') or '-'} minMember={spec.get('minMember')}")
    if meta.get("deletionTimestamp"):
        parts.append("deleting")
    return " " + " ".join(parts) if parts else ""
