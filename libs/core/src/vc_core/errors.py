"""The domain error hierarchy. Pure code raises only these; adapters translate transport errors into them."""

from __future__ import annotations


class VcError(Exception):
    """Base of every Tephra domain error."""


class TemporaryError(VcError):
    """Retrying later may succeed; `delay` (seconds) is a hint, None means use the backoff."""

    def __init__(self, message: str, *, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


class PermanentError(VcError):
    """Retrying is useless."""


class InvalidObject(PermanentError):
    """User input breaks a rule. `field` is a JSON path such as `spec.tasks[1].replicas`."""

    def __init__(self, field: str, rule: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.rule = rule
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "rule": self.rule, "message": self.message}


class PolicyViolation(PermanentError):
    """A request is well-formed but not allowed (closed queue, protected object, namespace not allowed)."""


class NotFound(VcError):
    """The object does not exist."""

    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} not found")
        self.kind = kind
        self.key = key


class AlreadyExists(VcError):
    """Create-if-absent found an object under that key."""

    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} already exists")
        self.kind = kind
        self.key = key


class Conflict(TemporaryError):
    """A compare-and-set lost: the object changed since `expected` was read. Re-read and retry."""

    def __init__(self, kind: str, key: str, *, expected: int | None) -> None:
        super().__init__(f"conflict on {kind} {key!r}: it changed since revision {expected} was read", delay=0.0)
        self.kind = kind
        self.key = key
        self.expected = expected


class PreconditionFailed(Conflict):
    """A delete's uid precondition failed: a different object now has that name. Never retried."""


class ConfigError(VcError):
    """Invalid configuration found at start-up; the process exits with code 2."""


class Fenced(TemporaryError):
    """This instance's lease lapsed: it must not write until it holds the key again."""

    def __init__(self, what: str) -> None:
        super().__init__(f"lease lapsed; not writing {what}", delay=1.0)
