"""vcctl's own log lines: stdout carries results (tables, JSON, YAML), so what the libraries log goes to
stderr, warnings and worse only, one plain line each, e.g.

    warning: decode.skipped source=vc-job kind=Job error=JSON is malformed... key=default.garbage revision=7

(a stored value that is not an object was left out of a list; the list itself still printed).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog


def configure_logging() -> None:
    structlog.configure(
        processors=[structlog.processors.add_log_level, _one_line],
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )


def _one_line(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> str:
    level = event_dict.pop("level", "warning")
    event = event_dict.pop("event", "")
    error = event_dict.pop("exc_info", None)
    fields = " ".join(f"{key}={value}" for key, value in event_dict.items())
    if isinstance(error, BaseException):
        fields += f" exception={type(error).__name__}: {error}"
    return f"{level}: {event} {fields}".rstrip()
