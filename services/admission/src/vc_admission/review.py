"""The seam between the write API and the pure admission rules (`vc_validation.review`)."""

from __future__ import annotations

from typing import Literal

from vc_admission.context import CacheContext
from vc_core.errors import PolicyViolation, VcError
from vc_proto import api
from vc_proto.kinds import KubeObject
from vc_validation import Verdict, review


class Rejected(VcError):
    """Admission refused the object; every violation is a cause."""

    def __init__(self, causes: list[api.Cause]) -> None:
        super().__init__("; ".join(f"{c.field}: {c.message}" for c in causes))
        self.causes = causes

    def summary(self) -> str:
        return "admission denied the request: " + "; ".join(
            f"{c.field}: {c.message}" if c.field else c.message for c in self.causes
        )


class Admitter:
    def __init__(self, ctx: CacheContext) -> None:
        self.ctx = ctx

    async def create(self, obj: KubeObject) -> KubeObject:
        return await self._admit("CREATE", obj, None)

    async def update(self, obj: KubeObject, old: KubeObject) -> KubeObject:
        return await self._admit("UPDATE", obj, old)

    async def delete(self, old: KubeObject) -> None:
        await self._admit("DELETE", None, old)

    async def _admit(
        self, operation: Literal["CREATE", "UPDATE", "DELETE"], obj: KubeObject | None, old: KubeObject | None
    ) -> KubeObject:
        subject = obj if obj is not None else old
        assert subject is not None
        await self.ctx.prepare(subject)
        verdict = review(operation, obj, old, self.ctx)
        _raise_if_denied(verdict)
        patched = verdict.patched if verdict.patched is not None else subject
        assert isinstance(patched, type(subject))
        return patched


def _raise_if_denied(verdict: Verdict) -> None:
    if verdict.allowed:
        return
    if all(v.is_policy for v in verdict.violations):
        raise PolicyViolation(verdict.message)
    raise Rejected([api.Cause(field=v.field, rule=v.rule, message=v.message) for v in verdict.violations])
