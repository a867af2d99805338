"""The template environment: autoescaping on for every template, undefined names an error.

Every user-provided string (names, namespaces, messages, labels) reaches the page through a template
expression, and so through markupsafe's escaping; no Python code builds HTML by concatenation. URL
path segments go through the `segment` filter (percent-encoding everything but unreserved characters).
"""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import quote, urlencode

import jinja2


def segment(value: object) -> str:
    return quote(str(value), safe="")


def query_string(params: dict[str, str]) -> str:
    return ("?" + urlencode(params)) if params else ""


def pct(value: float) -> str:
    """An SVG length in percent (presentation attributes, not inline styles: the CSP forbids those)."""
    return f"{value:.2f}%"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("vc_dashboard", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["segment"] = segment
    env.filters["query"] = query_string
    env.filters["pct"] = pct
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
