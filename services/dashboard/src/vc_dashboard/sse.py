"""Server-sent events on the wire (the WHATWG EventSource format), as pure functions."""

from __future__ import annotations

import re
from typing import Final

KEEP_ALIVE: Final = b": keep-alive\n\n"
# EventSource ends a line at CR, LF or CRLF, and at nothing else (str.splitlines also splits at
# U+2028 and friends, which would alter a message that contains them).
_LINE_BREAK: Final = re.compile(r"\r\n|\r|\n")


def encode_event(event: str, data: str) -> bytes:
    """One event: `event: <name>`, one `data:` line per line of `data`, then a blank line."""
    if _LINE_BREAK.search(event):
        raise ValueError("an event name is one line")
    lines = _LINE_BREAK.split(data)
    return (f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n").encode()
