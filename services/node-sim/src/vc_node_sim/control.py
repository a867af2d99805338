"""Requests on node-sim's control subject (`vcctl node ready|not-ready NAME`): `{"node": NAME, "ready": BOOL}`.

Anyone on the bus can send here, so a request is decoded strictly: `ready` is a JSON boolean, or the
text "true" or "false" in any case; anything else is refused (the text "false" is not a true value).
"""

from __future__ import annotations

from typing import Final

import msgspec

MAX_NODE_NAME: Final = 253


class ControlRequest(msgspec.Struct, frozen=True):
    node: str
    ready: bool | str


_decoder = msgspec.json.Decoder(ControlRequest)


def parse_control(data: bytes) -> tuple[str, bool]:
    """(node, ready); raises ValueError (msgspec's errors are ValueErrors) for anything else."""
    request = _decoder.decode(data)
    if not request.node or len(request.node) > MAX_NODE_NAME:
        raise ValueError(f"node must be a name of 1 to {MAX_NODE_NAME} characters")
    return request.node, parse_bool(request.ready, field="ready")


def parse_bool(value: bool | str, *, field: str) -> bool:
    if isinstance(value, bool):
        return value
    text = value.strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ValueError(f"{field} must be true or false, not {value[:32]!r}")
