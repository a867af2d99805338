"""Guarded decoding of what reaches a process from outside: stored values and messages on subjects.

Any client that reaches NATS can put a value into a KV bucket or publish on a subject, so bytes that
do not decode are input, not a bug. Every decode site goes through here: a bad value is logged (with
where it came from), counted in `tephra_decode_errors_total{source,kind}` and skipped, and the caller
goes on serving good input. One metric for the whole project, defined once, here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

import structlog
from prometheus_client import Counter

from vc_core.errors import PermanentError
from vc_proto.selectors import Selector

T = TypeVar("T")
log = structlog.get_logger(__name__)

DECODE_ERRORS: Final = Counter(
    "tephra_decode_errors_total",
    "Stored values and messages that did not decode (or did not fit where they were found) and were skipped",
    ["source", "kind"],
)
# msgspec's DecodeError and ValidationError are ValueErrors (so are UnicodeDecodeError and json's
# errors); a deeply nested document exhausts the recursion limit inside the decoder instead.
UNDECODABLE: Final = (ValueError, RecursionError)
_MAX_ERROR_TEXT: Final = 300


class CorruptObject(PermanentError):
    """A stored value under this key is not a valid object of its kind: reading it cannot succeed until
    someone rewrites or deletes it. Never a reason to act as if the object were absent."""

    def __init__(self, kind: str, key: str, revision: int, reason: str) -> None:
        super().__init__(f"stored {kind} {key!r} (revision {revision}) is not a valid object: {reason}")
        self.kind = kind
        self.key = key
        self.revision = revision
        self.reason = reason


def report_undecodable(*, source: str, kind: str, error: BaseException | str, **where: object) -> None:
    """Log and count one skipped value. `source` names where it came from (a bucket, a stream, a
    subject), `kind` what it should have been; `where` adds the key, revision or sequence."""
    DECODE_ERRORS.labels(source, kind).inc()
    log.warning("decode.skipped", source=source, kind=kind, error=describe(error), **where)


def report_unprocessable(*, source: str, kind: str, error: Exception, **where: object) -> None:
    """Log (with the traceback: it may be a bug as much as bad input) and count one value that decoded but
    that a handler could not digest, so the stage that met it goes on with the next."""
    DECODE_ERRORS.labels(source, kind).inc()
    log.error("decode.unprocessable", source=source, kind=kind, error=describe(error), exc_info=error, **where)


def selected(select: Selector, data: bytes, *, source: str) -> bool:
    """`select(data)`, or True (reported) when the selector itself fails: the full decode then judges the
    value, so a selector's failure costs a decode, never a change skipped unseen or a watch ended."""
    try:
        return select(data)
    except Exception as exc:  # whatever a selector raises, the change must still reach the decoder
        report_unprocessable(source=source, kind="Selector", error=exc)
        return True


def describe(error: BaseException | str) -> str:
    """A bounded one-line reason (an error message may quote the hostile input)."""
    text = error if isinstance(error, str) else (str(error) or type(error).__name__)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_ERROR_TEXT else text[:_MAX_ERROR_TEXT] + "..."


def decode_or_none(decode: Callable[[bytes], T], data: bytes, *, source: str, kind: str, **where: object) -> T | None:
    """`decode(data)`, or None after reporting when the bytes are not a `kind`."""
    try:
        return decode(data)
    except UNDECODABLE as exc:
        report_undecodable(source=source, kind=kind, error=exc, **where)
        return None
