"""structlog configured once per process: JSON lines on stderr (or a console renderer on a TTY)."""

from __future__ import annotations

import logging
import sys
from typing import Any

import msgspec
import structlog

_encoder = msgspec.json.Encoder()


def _dumps(obj: Any, *, default: Any = None) -> bytes:
    if default is None:
        return _encoder.encode(obj)
    return msgspec.json.Encoder(enc_hook=default).encode(obj)


def configure(level: str = "info", *, json: bool | None = None) -> None:
    """Call once from main(). `json=None` means JSON unless stderr is a terminal."""
    use_json = (not sys.stderr.isatty()) if json is None else json
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    renderer: Any = (
        structlog.processors.JSONRenderer(serializer=_dumps) if use_json else structlog.dev.ConsoleRenderer()
    )
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.dict_tracebacks if use_json else structlog.processors.format_exc_info,
        renderer,
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.BytesLoggerFactory(sys.stderr.buffer)
        if use_json
        else structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    # Libraries (aiohttp, nats) log through the standard library; keep their warnings, as JSON too.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=renderer,
            foreign_pre_chain=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
