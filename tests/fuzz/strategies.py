"""Hypothesis strategies for hostile input: near-valid documents (a valid base with a few mutations: wrong
types, huge and negative numbers, deep nesting, odd unicode, missing and extra fields, lists blown up)
and plain garbage (random bytes, truncated JSON, JSON of the wrong shape, the wrong kind).

Big values (a 70,000-character name, a document nested 3,000 deep, 4 MiB of padding) are drawn as small
markers and spelled out only when the document is encoded (`encode`): hypothesis draws stay small and
fast, and deep nesting never has to exist as a Python object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from hypothesis import strategies as st

from tests.fuzz.corpus import Doc, fresh

# -- values that break types and bounds ----------------------------------------------------------------

HUGE_INTS: Final = (2**31 - 1, 2**31, -(2**31) - 1, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, 10**400)
ODD_FLOATS: Final = (0.5, -0.0, 1e-300, 1e308, -1e29, 1e29, 3.14, float("nan"), float("inf"), float("-inf"))
ODD_STRINGS: Final = (
    "",
    " ",
    "-",
    ".",
    "..",
    "a/b",
    "a.b",
    "A",
    "UPPER-case",
    "a b",
    "a\nb",
    "a\tb",
    "\x00",
    "\x1b[31mred\x1b[0m",
    "\u202eevil",
    "\ufeffbom",
    "名前",
    "😀" * 3,
    "\ud800",
    "1e29",
    "0.5",
    "-1",
    "-5s",
    "NaN",
    "Infinity",
    "0x10",
    "1Ei",
    "9" * 40,
    "true",
    "false",
    "null",
    "None",
    "${HOME}",
    "$(id)",
    "%s%n",
    "\\",
    "'",
    '"',
    "*",
    ">",
    "vc.evt.>",
    "_",
    "fz-0",
    "default",
    "root",
    "volcano",
    "node-0",
    "kube-system",
    "Pending",
    "Running",
    "RestartJob",
    "CREATE",
)
QUANTITIES: Final = (
    "1",
    "500m",
    "1.5",
    "0",
    "-1",
    "1e3",
    "1e29",
    "0.5",
    "1Ki",
    "1.5Gi",
    "1E",
    "1e-3",
    "abc",
    "",
    "1m m",
    "9" * 50,
    "100000000Ti",
    "0.0001m",
    "+1",
    "1_000",
    "٣",
    "1e",
    "Inf",
)
LENGTHS: Final = (63, 64, 253, 254, 1_000, 70_000)
DEPTHS: Final = (10, 64, 65, 200, 1_100, 3_000)


@dataclass(frozen=True)
class Long:
    """A string of `length` copies of `char`, written out at encode time."""

    length: int
    char: str = "a"


@dataclass(frozen=True)
class Deep:
    """`depth` nested JSON arrays (or objects), written out at encode time."""

    depth: int
    objects: bool = False


@dataclass(frozen=True)
class Padding:
    """A document made `size` bytes long by one big annotation: over or under the 3 MiB request limit."""

    size: int


SIZES: Final = (3 * 1024 * 1024 - 4096, 3 * 1024 * 1024 + 1, 4 * 1024 * 1024, 9 * 1024 * 1024)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(HUGE_INTS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(ODD_FLOATS),
    st.text(max_size=24),
    st.sampled_from(ODD_STRINGS),
    st.sampled_from(QUANTITIES),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
bad_values = st.one_of(
    json_scalars,
    json_values,
    st.builds(Long, st.sampled_from(LENGTHS), st.sampled_from(("a", "é", "😀", "\x00", "."))),
    st.builds(Deep, st.sampled_from(DEPTHS), st.booleans()),
)
extra_keys = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        (
            "status",
            "spec",
            "metadata",
            "kind",
            "apiVersion",
            "replicas",
            "tasks",
            "name",
            "uid",
            "resourceVersion",
            "deletionTimestamp",
            "nodeName",
            "minAvailable",
            "$ref",
            "__proto__",
        )
    ),
)

# -- mutations of a valid document -----------------------------------------------------------------------
# Strategies are made once: building one inside a draw costs more than the draw (hypothesis validates it).
_INDEX: dict[int, st.SearchStrategy[int]] = {}
_DESCEND = st.integers(0, 3)
_OPS = st.sampled_from(("replace", "replace", "replace", "delete", "add", "blow-up", "wrap", "null"))
_TIMES = st.sampled_from((2, 129, 1_001))
_WRAP = st.booleans()
_OP_COUNT: dict[int, st.SearchStrategy[int]] = {}


def _index(n: int) -> st.SearchStrategy[int]:
    strategy = _INDEX.get(n)
    if strategy is None:
        strategy = _INDEX[n] = st.integers(0, n - 1)
    return strategy


@st.composite
def _slot(draw: st.DrawFn, doc: Doc) -> tuple[Any, Any]:
    """A (container, key) somewhere in `doc`: walk down, stopping at random."""
    container: Any = doc
    while True:
        keys = list(container) if isinstance(container, dict) else list(range(len(container)))
        if not keys:
            return container, None
        key = keys[draw(_index(len(keys)))]
        child = container[key]
        if isinstance(child, dict | list) and child and draw(_DESCEND) > 0:
            container = child
            continue
        return container, key


def _set(container: Any, key: Any, value: Any) -> None:
    if key is None:
        if isinstance(container, list):
            container.append(value)
        else:
            container["fuzz"] = value
    else:
        container[key] = value


@st.composite
def _mutate_once(draw: st.DrawFn, doc: Doc) -> None:
    container, key = draw(_slot(doc))
    op = draw(_OPS)
    if op == "replace":
        _set(container, key, draw(bad_values))
    elif op == "delete" and key is not None:
        del container[key]
    elif op == "add" and isinstance(container, dict):
        container[draw(extra_keys)] = draw(bad_values)
    elif op == "blow-up" and key is not None and isinstance(container[key], list) and container[key]:
        container[key] = container[key] * draw(_TIMES)
    elif op == "wrap" and key is not None:
        container[key] = [container[key]] if draw(_WRAP) else {"value": container[key]}
    elif key is not None:
        container[key] = None


@st.composite
def mutated(draw: st.DrawFn, base: Doc, *, max_ops: int = 4) -> Doc:
    """`base` with 1 to `max_ops` mutations (a fresh copy each time)."""
    doc = fresh(base)
    count = _OP_COUNT.get(max_ops)
    if count is None:
        count = _OP_COUNT[max_ops] = st.integers(1, max_ops)
    for _ in range(draw(count)):
        draw(_mutate_once(doc))
    return doc


def near_valid(bases: list[Doc]) -> st.SearchStrategy[Doc]:
    """Mostly mutated, sometimes exactly valid: good input is part of the mix."""
    base = st.sampled_from(bases)
    return st.one_of(base.flatmap(mutated), base.flatmap(mutated), base.flatmap(mutated), base.map(fresh))


# -- encoding -------------------------------------------------------------------------------------------

_MARK = re.compile(r'"\\u0000(\d+)\\u0000"')


def encode(doc: Any, *, ascii_only: bool = True) -> bytes:
    """JSON of `doc` with every Long/Deep/Padding marker written out (NaN and Infinity as Python writes
    them: tokens no strict parser accepts); non-ASCII as escapes, or raw with `ascii_only=False`."""
    found: list[Any] = []

    def marker(value: Any) -> Any:
        if isinstance(value, Long | Deep | Padding):
            found.append(value)
            return f"\x00{len(found) - 1}\x00"
        raise TypeError(type(value).__name__)

    text = json.dumps(doc, default=marker, ensure_ascii=ascii_only)  # control characters stay escaped either way
    if found:
        text = _MARK.sub(lambda m: _spell(found[int(m.group(1))]), text)
    return text.encode("utf-8", "surrogatepass")  # raw: a lone surrogate becomes bytes no UTF-8 reader accepts


def _spell(value: Long | Deep | Padding) -> str:
    if isinstance(value, Long):
        return json.dumps(value.char * value.length)
    if isinstance(value, Deep):
        return (
            ('{"a":' * value.depth + "1" + "}" * value.depth)
            if value.objects
            else "[" * value.depth + "]" * value.depth
        )
    return json.dumps("p" * value.size)


# -- garbage ----------------------------------------------------------------------------------------------


def garbage(valid: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Bytes that are not what the reader expects, some of them close to it (`valid` gives good encodings
    to cut short or corrupt)."""
    return st.one_of(
        st.binary(max_size=64),
        st.sampled_from(
            (
                b"",
                b"\xff",
                b"[",
                b"{",
                b"null",
                b"0",
                b'""',
                b"[]",
                b"{}",
                b"\xef\xbb\xbf{}",
                b'{"a":1,"a":2}',
                b"NaN",
                b"1" * 400,
                b'"\xff"',
                b"\x00" * 16,
            )
        ),
        json_values.map(lambda v: encode(v)),
        st.tuples(valid, st.integers(0, 4096)).map(lambda t: t[0][: t[1] % max(1, len(t[0]))]),
        st.tuples(valid, st.integers(0, 4096), st.binary(min_size=1, max_size=4)).map(_corrupt),
        st.builds(Deep, st.sampled_from(DEPTHS), st.booleans()).map(lambda d: encode(d)),
    )


def _corrupt(t: tuple[bytes, int, bytes]) -> bytes:
    data, at, junk = t
    at %= max(1, len(data))
    return data[:at] + junk + data[at + len(junk) :]


def with_padding(doc: Doc, size: int) -> Doc:
    """`doc` with an annotation big enough to make it about `size` bytes."""
    padded = fresh(doc)
    meta = padded.setdefault("metadata", {})
    if isinstance(meta, dict):
        annotations = meta.get("annotations")
        meta["annotations"] = {**(annotations if isinstance(annotations, dict) else {}), "fuzz/padding": Padding(size)}
    return padded


def oversized(bases: list[Doc]) -> st.SearchStrategy[Doc]:
    return st.tuples(st.sampled_from(bases), st.sampled_from(SIZES)).map(lambda t: with_padding(*t))
