"""What Grafana dashboards query and what Tephra exports, as sets of series names (shared by the unit
check over the metric definitions and the integration check over real scrapes).

Dashboards: every panel's `targets[].expr` (rows' nested panels too) and every query variable, read
from the JSON as it is, so a panel added tomorrow is checked the same way. Exports: metric families
(from prometheus_client's registry or a parsed scrape) expanded to the series names Prometheus stores
(a counter `x` is scraped as `x_total`, a histogram as `x_bucket`, `x_sum`, `x_count`), including
families that have no samples yet (a labelled metric nobody has touched).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from prometheus_client import Metric

from vc_runtime.bare_counter import bare_counter_names

ROOT: Final = Path(__file__).resolve().parents[3]
DASHBOARDS: Final = ROOT / "deploy" / "grafana" / "dashboards"

_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS: Final = re.compile(r"\{[^{}]*\}")
_RANGES: Final = re.compile(r"\[[^\[\]]*\]")
_GROUPING: Final = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_OFFSET: Final = re.compile(r"\boffset\s+-?[\w$]+")
_VARIABLE: Final = re.compile(r"\$\{[^}]*\}|\$\w+")
_IDENTIFIER: Final = re.compile(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")
KEYWORDS: Final = frozenset(
    {
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "and",
        "or",
        "unless",
        "offset",
        "inf",
        "nan",
        "atan2",
    }
)
# Grafana's Prometheus variable functions: label_values(selector, label), query_result(query), ...
_VARIABLE_QUERY: Final = re.compile(r"^\s*(label_values|query_result|label_names|metrics)\s*\((.*)\)\s*$", re.S)


@dataclass(frozen=True, slots=True)
class Query:
    dashboard: str
    panel: str
    expr: str


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, keywords and label names left out)."""
    text = _STRING.sub('""', expr)
    previous = None
    while previous != text:  # innermost first: matchers may hold nothing nested, ranges may (subqueries)
        previous = text
        text = _MATCHERS.sub(" ", text)
        text = _RANGES.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    text = _OFFSET.sub(" ", text)
    text = _VARIABLE.sub(" ", text)
    return {name for name, call in _IDENTIFIER.findall(text) if not call and name.lower() not in KEYWORDS}


def variable_metric_names(query: str) -> set[str]:
    """Names in a Grafana query variable: label_values(<selector>, label) and query_result(<query>)."""
    match = _VARIABLE_QUERY.match(query)
    if match is None:
        return metric_names(query)
    function, inner = match.groups()
    if function == "label_values":
        selector = inner.rsplit(",", 1)[0] if "," in _MATCHERS.sub("", inner) else ""
        return metric_names(selector)
    if function == "query_result":
        return metric_names(inner)
    return set()  # label_names(), metrics(regex): no series named


def _panels(panels: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels") or [])


def dashboard_queries(directory: Path = DASHBOARDS) -> list[Query]:
    queries: list[Query] = []
    for path in sorted(directory.glob("*.json")):
        board = json.loads(path.read_text())
        for panel in _panels(board.get("panels") or []):
            for target in panel.get("targets") or []:
                if target.get("expr"):
                    queries.append(Query(path.name, panel.get("title", "?"), target["expr"]))
        for variable in (board.get("templating") or {}).get("list") or []:
            if variable.get("type") == "query":
                raw = variable.get("query")
                text = raw.get("query", "") if isinstance(raw, dict) else str(raw or "")
                queries.append(Query(path.name, f"variable ${variable['name']}", f"@variable {text}"))
    return queries


def names_in(query: Query) -> set[str]:
    if query.expr.startswith("@variable "):
        return variable_metric_names(query.expr.removeprefix("@variable "))
    return metric_names(query.expr)


_SUFFIXES: Final = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gaugehistogram": ("_bucket", "_gcount", "_gsum"),
    "summary": ("", "_count", "_sum", "_created"),
    "info": ("_info",),
}


def exported_series(families: Iterable[Metric]) -> set[str]:
    """Series names Prometheus stores for these families, whether or not they have samples yet."""
    names: set[str] = set()
    bare = bare_counter_names()
    for family in families:
        names.update(family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",)))
        names.update(sample.name for sample in family.samples)
        if family.name in bare:
            names.add(family.name)  # Volcano's counters without `_total` (vc_runtime.bare_counter)
    return names


def metric_modules(*roots: Path) -> list[str]:
    """Every module under libs/*/src and services/*/src that defines metrics with prometheus_client."""
    found = []
    for root in roots:
        for path in sorted(root.glob("*/src/vc_*/**/*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            if any(isinstance(n, ast.ImportFrom) and n.module == "prometheus_client" for n in ast.walk(tree)):
                src = next(p for p in path.parents if p.name == "src")
                found.append(".".join(path.relative_to(src).with_suffix("").parts))
    return found


# -- types and units -----------------------------------------------------------------------------------
_RATE_CALL: Final = re.compile(r"\b(rate|irate|increase)\s*\(")
# Series Prometheus can take a rate of: a counter's, and a histogram's or summary's counts and sums.
_RATEABLE_SUFFIXES: Final = {
    "counter": ("",),
    "histogram": ("_bucket", "_count", "_sum"),
    "summary": ("_count", "_sum"),
}


def series_types(families: Iterable[Metric]) -> dict[str, str]:
    """Series name -> 'rateable' (it only goes up: a counter, a histogram's buckets, counts and sums) or
    the family's type (gauge, ...)."""
    types: dict[str, str] = {}
    for family in families:
        rateable = _RATEABLE_SUFFIXES.get(family.type)
        names = {family.name + s for s in _SUFFIXES.get(family.type, ("",))} | {s.name for s in family.samples}
        if family.name in bare_counter_names():
            names.add(family.name)
        for name in names:
            if rateable is not None and (family.type == "counter" or name.endswith(rateable)):
                types[name] = "rateable"
            else:
                types.setdefault(name, family.type)
    return types


def rated_names(expr: str) -> set[str]:
    """The metric names inside rate(), irate() and increase() calls."""
    names: set[str] = set()
    for match in _RATE_CALL.finditer(expr):
        depth, start = 0, match.end() - 1
        for i in range(start, len(expr)):
            depth += {"(": 1, ")": -1}.get(expr[i], 0)
            if depth == 0:
                names |= metric_names(expr[start + 1 : i])
                break
    return names


def target_unit(expr: str) -> str:
    """What a target plots, by its form and its metric's Prometheus-style unit suffix: ms or s (a
    histogram's quantile), per-second (a rate), or a gauge's unit (cores, bytes, units, ratio, count)."""
    names = metric_names(expr)
    if "histogram_quantile" in expr:
        return "ms" if any(n.endswith("_milliseconds_bucket") for n in names) else "s"
    if _RATE_CALL.search(expr):
        return "per-second"
    if re.search(r"/\s*\(?\s*[a-z_]+\{", expr):
        return "ratio"  # one series over another
    if any(n.endswith("_milli_cpu") for n in names):
        return "cores" if re.search(r"/\s*1000\b", expr) else "millicores"
    if any(n.endswith("_bytes") for n in names):
        return "bytes"
    if any(n.endswith("_scalar_resources") for n in names):
        return "units" if re.search(r"/\s*1000\b", expr) else "milli-units"
    if any(n.endswith(("_share", "_overused")) for n in names):
        return "ratio"
    return "count"


# Grafana's unit per kind of target: a panel's targets plot one kind, in the panel's unit.
PANEL_UNITS: Final = {
    "ms": {"ms"},
    "s": {"s"},
    "per-second": {"ops", "reqps"},
    "bytes": {"bytes", "decbytes"},
    "cores": {"short", "none"},
    "units": {"short", "none"},
    "count": {"short", "none"},
    "ratio": {"percentunit", "short", "none"},
}


def panels(directory: Path = DASHBOARDS) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(directory.glob("*.json")):
        for panel in _panels(json.loads(path.read_text()).get("panels") or []):
            if panel.get("targets"):
                yield path.name, panel


def series_in_text(text: str) -> set[str]:
    """The series names a scrape's text holds as Prometheus stores them: each sample line's name, and
    each declared family's name (a counter Volcano names without `_total` is stored under that bare
    name; prometheus_client's parser would rename its samples to `<name>_total`)."""
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{\s]", line, maxsplit=1)[0])
    return names
