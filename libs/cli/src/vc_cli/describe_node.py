"""`vcctl node describe NAME`: a node as kubectl describe node shows it: its labels, taints and
conditions, what it offers, what the pods bound to it request (in all and as a share of what it
offers), and those pods. Pure: the command gathers the node and its pods."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from fractions import Fraction
from typing import Final

from vc_cli.allocation import SHOWN, allocated, amount, node_allocatable, pod_requests, share
from vc_cli.output import age, render_table
from vc_core.resources import PODS
from vc_proto.core import Node, Pod

MAX_POD_ROWS: Final = 100


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    dashes = ["-" * len(h) for h in headers]
    return ["  " + line for line in render_table(headers, [dashes, *rows])]


def describe_node(node: Node, pods: Sequence[Pod], *, now: datetime | None = None) -> list[str]:
    meta, spec, status = node.metadata, node.spec, node.status
    labels = ",".join(f"{k}={v}" for k, v in sorted((meta.labels or {}).items())) or "<none>"
    taints = ", ".join(f"{t.key}={t.value or ''}:{t.effect}" for t in (spec.taints if spec else None) or [])
    lines = [
        f"Name:           {meta.name}",
        f"Labels:         {labels}",
        f"Created:        {meta.creation_timestamp or '<unknown>'}",
        f"Taints:         {taints or '<none>'}",
        f"Unschedulable:  {'true' if spec and spec.unschedulable else 'false'}",
        "Conditions:",
    ]
    conditions = (status.conditions if status else None) or []
    rows = [[c.type, c.status, c.reason or "", c.last_transition_time or ""] for c in conditions]
    lines += _table(["Type", "Status", "Reason", "Last Transition"], rows) if rows else ["  <none>"]
    total = node_allocatable(node)
    lines.append("Allocatable:")
    lines += [f"  {name}: {amount(name, value)}" for name, value in sorted(total.items())]
    used = {**allocated(pods), PODS: Fraction(len(pods))}
    lines.append("Allocated resources:")
    lines += _table(["Resource", "Requests"], [[name, share(name, used, total)] for name in (*SHOWN, PODS)])
    lines.append(f"Pods: ({len(pods)} placed and not finished)" if pods else "Pods:  <none>")
    if pods:
        lines += _table(["Namespace", "Name", "CPU", "Memory", "GPU", "Status", "Age"], _pod_rows(pods, now))
        if len(pods) > MAX_POD_ROWS:
            lines.append(f"  ... and {len(pods) - MAX_POD_ROWS} more pods")
    return lines


def _pod_rows(pods: Sequence[Pod], now: datetime | None) -> list[list[object]]:
    rows: list[list[object]] = []
    ordered = sorted(pods, key=lambda p: (p.metadata.namespace or "", p.metadata.name or ""))
    for pod in ordered[:MAX_POD_ROWS]:
        asked = pod_requests(pod)
        rows.append(
            [
                pod.metadata.namespace or "",
                pod.metadata.name or "",
                *(amount(name, asked.get(name, Fraction(0))) for name in SHOWN),
                (pod.status.phase if pod.status else None) or "Pending",
                age(pod.metadata.creation_timestamp, now),
            ]
        )
    return rows
