"""The pure core of the vcjob controller: no I/O, no asyncio, time passed in.

Public API for the shell: `decide(view, request, now) -> Plan`, with `JobView`, `Request`,
`DelayedAction` / `request_for_fired` for policy timeouts, and the `Plan` parts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vc_job_controller.logic.history import HistoryEvent
from vc_job_controller.logic.plan import ObjectRef, ObjectWrite, Plan, PodDeletion, WriteMode
from vc_job_controller.logic.view import DelayedAction, JobView, Request, request_for_fired

if TYPE_CHECKING:
    from vc_job_controller.logic.decision import decide


def __getattr__(name: str) -> Any:
    # `decide` uses the plugins, and the plugins use `logic.names`: importing it lazily lets either
    # package be imported first.
    if name == "decide":
        from vc_job_controller.logic.decision import decide

        return decide
    raise AttributeError(name)


__all__ = [
    "DelayedAction",
    "HistoryEvent",
    "JobView",
    "ObjectRef",
    "ObjectWrite",
    "Plan",
    "PodDeletion",
    "Request",
    "WriteMode",
    "decide",
    "request_for_fired",
]
