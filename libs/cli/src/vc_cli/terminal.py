"""What vcctl writes reaches a terminal: control characters in it are shown escaped, never obeyed.

Names, annotations, labels, messages, events and history are other people's text. Printed raw, an
ESC or BEL in them would let whoever wrote them drive the reader's terminal (clear the screen, set the
window title, fake a line of output). Every line vcctl prints (tables, describe, errors, usage) goes
through `sys.stdout` and `sys.stderr`, so escaping there, once, covers every command, including the
ones added later. `-o json` and `-o yaml` are unchanged by it: both encoders already write control
characters as escapes (`\\u001b`, `"\\e"`), so their bytes, decoded, are exactly the stored values.

Kept as they are: newline and tab (the layout of every table and description). Escaped as `\\xNN`
or `\\uNNNN`: the other C0 controls, DEL, the C1 controls (an 8-bit CSI is one) and the Unicode
bidirectional overrides (which reorder what a line appears to say).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any, Final, TextIO

_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class EscapingStream:
    """A text stream that writes through to `inner` with control characters escaped."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(escape_controls(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding...: the inner stream's
        return getattr(self.inner, name)


def unescaped(stream: TextIO) -> TextIO:
    """The terminal itself, for vcctl's own control sequences (`vcctl up`'s progress line) only."""
    return stream.inner if isinstance(stream, EscapingStream) else stream


@contextlib.contextmanager
def escaped_output() -> Iterator[None]:
    """sys.stdout and sys.stderr escape control characters while the block runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapingStream(saved[0]), EscapingStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
