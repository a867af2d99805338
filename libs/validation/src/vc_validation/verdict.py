"""The decision every admission rule returns: allowed or not, why, and the defaulted object.

A `Violation` always names the field (a JSON path such as `spec.tasks[1].replicas`), the rule (a short
stable id users and tests can match on) and a message. Where Volcano has a message for the same check
the text is Volcano's, so a user who searches Volcano's docs or issues for it finds the answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from vc_core.errors import InvalidObject, PermanentError, PolicyViolation

# Rules that reject a well-formed request because of the state of the system or a policy, not because
# the object itself is malformed. The front-ends map these to PolicyViolation (HTTP 403-like) instead
# of InvalidObject (422-like).
POLICY_RULES: Final = frozenset(
    {
        "queue-exists",
        "queue-open",
        "queue-leaf",
        "queue-namespace-allowed",
        "queue-protected",
        "queue-has-workloads",
        "queue-has-children",
        "queue-parent-has-workloads",
        "root-queue-protected",
    }
)


@dataclass(frozen=True, slots=True)
class Violation:
    field: str
    rule: str
    message: str

    @property
    def is_policy(self) -> bool:
        return self.rule in POLICY_RULES

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "rule": self.rule, "message": self.message}


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    violations: tuple[Violation, ...] = ()
    # The object after defaulting (CREATE) or as submitted; None when nothing is to be stored (DELETE).
    patched: object | None = None

    @property
    def message(self) -> str:
        """All messages, each prefixed by its field, joined the way Volcano joins its own."""
        return "; ".join(f"{v.field}: {v.message}" for v in self.violations)

    def to_dict(self) -> dict[str, object]:
        """The reply body a front-end sends: the decision and every violation (not the object)."""
        return {"allowed": self.allowed, "message": self.message, "violations": [v.to_dict() for v in self.violations]}

    def to_exception(self) -> PermanentError | None:
        """The domain error for a denial (None when allowed): PolicyViolation if every violation is one."""
        if self.allowed:
            return None
        if all(v.is_policy for v in self.violations):
            return PolicyViolation(self.message)
        first = next(v for v in self.violations if not v.is_policy)
        return InvalidObject(first.field, first.rule, self.message)


def allow(patched: object | None) -> Verdict:
    return Verdict(allowed=True, violations=(), patched=patched)


def decide(violations: Iterable[Violation], patched: object | None) -> Verdict:
    """Allowed exactly when there is no violation; the patched object is kept either way for reporting."""
    found = tuple(violations)
    return Verdict(allowed=not found, violations=found, patched=patched)


def deny(field: str, rule: str, message: str) -> Verdict:
    return Verdict(allowed=False, violations=(Violation(field, rule, message),), patched=None)
