"""Where a reader is in the history: the position of the last event it has handled. Pure.

An event's position is the stream sequence of the message that carried it and its place in that
message (a publisher may write several events of one job as one message). Written `SEQ` for the first
(or only) event of a message and `SEQ.INDEX` for the others, as `vcctl job history` shows them. Reading
`since` a cursor yields the events after it, never the one it names: saving the cursor of each event
once it is handled and resuming from the last one saved sees every event once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from vc_core.errors import InvalidObject

MAX_CURSOR_CHARS: Final = 40


@dataclass(frozen=True, slots=True, order=True)
class Cursor:
    sequence: int  # the stream sequence of the event's message (>= 1)
    index: int = 0  # the event's place in that message

    def __str__(self) -> str:
        return f"{self.sequence}.{self.index}" if self.index else str(self.sequence)


def parse_cursor(text: str | int, *, field: str = "since") -> Cursor:
    """`SEQ` or `SEQ.INDEX` (an int is a SEQ); InvalidObject naming `field` otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str) or len(text) > MAX_CURSOR_CHARS:
        raise InvalidObject(field, "cursor", f"a cursor is SEQ or SEQ.INDEX (at most {MAX_CURSOR_CHARS} characters)")
    head, dot, tail = text.strip().partition(".")
    if not head.isdigit() or (dot and not tail.isdigit()):
        raise InvalidObject(field, "cursor", f"{text[:MAX_CURSOR_CHARS]!r} is not SEQ or SEQ.INDEX (digits)")
    cursor = Cursor(int(head), int(tail) if dot else 0)
    if cursor.sequence < 1:
        raise InvalidObject(field, "cursor", "stream sequences start at 1")
    return cursor
