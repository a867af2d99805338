"""`-o jsonpath=TEMPLATE`: the part of kubectl's JSONPath templates people use (k8s.io/client-go/util/jsonpath).

A template is literal text with `{...}` actions in it. Supported actions:

    {.metadata.name}                 a field; `{$.metadata.name}` and `{@.metadata.name}` are the same
    {.metadata.labels['app.kubernetes.io/name']}   a key with dots or slashes, quoted ('...' or "...")
    {.spec.capability.nvidia\\.com/gpu}   or with its dots escaped, as kubectl also writes it
    {.spec.tasks[0].name}            an index; negative counts from the end ([-1] is the last)
    {.spec.tasks[1:3].name}          a slice [start:end] (either may be left out)
    {.items[*].metadata.name}        every element (or every value of an object); `.*` is the same
    {..name}                         recursive descent: every `name` at any depth
    {.status.conditions[?(@.type=="Ready")].status}
                                     a filter: ==, !=, <, <=, >, >= against a quoted string or a number,
                                     or just `[?(@.field)]` (the field is there and not empty)
    {range .items[*]}...{end}        repeat the text between for each result, with `@`/`.` being it
    {"\\n"}  {"\\t"}                   a quoted string, with \\n, \\t, \\" and \\\\ escapes

As kubectl prints them: several results of one action are joined by single spaces; strings print as
they are, numbers and booleans as JSON writes them, objects and lists as compact JSON; a missing field
prints nothing (kubectl's default `--allow-missing-template-keys=true`). Not supported: unions
(`[0,1]`, `['a','b']`), slice steps, and filters with && or ||; they are refused with a message.
Pure: parse once, then render any number of documents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

MAX_TEMPLATE_CHARS: Final = 8192
MAX_RANGE_DEPTH: Final = 16
# A field name; `\.` is a dot within it, as kubectl writes keys such as `nvidia\.com/gpu`.
_FIELD: Final = re.compile(r"(?:[A-Za-z0-9_\-/]|\\\.)+")
_NUMBER: Final = re.compile(r"-?[0-9]+(\.[0-9]+)?")
MISSING: Final = object()


class JsonPathError(ValueError):
    """A template that does not parse: the message says where and why."""


# -- the parsed form ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Field:
    name: str


@dataclass(frozen=True, slots=True)
class Recursive:
    name: str  # "*" for every value at every depth


@dataclass(frozen=True, slots=True)
class Wildcard:
    pass


@dataclass(frozen=True, slots=True)
class Index:
    index: int


@dataclass(frozen=True, slots=True)
class Slice:
    start: int | None
    end: int | None


@dataclass(frozen=True, slots=True)
class Filter:
    path: tuple[Step, ...]
    operator: str | None  # None: the field exists and is not empty
    literal: Any = None


Step = Field | Recursive | Wildcard | Index | Slice | Filter


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Path:
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class Range:
    path: Path
    body: tuple[Node, ...]


Node = Text | Path | Range


@dataclass(frozen=True, slots=True)
class Template:
    nodes: tuple[Node, ...]
    source: str

    def render(self, document: Any) -> str:
        return "".join(_render(self.nodes, document))


# -- parsing -----------------------------------------------------------------------------------------
def parse_template(source: str) -> Template:
    """A template from kubectl's `jsonpath=` text; JsonPathError naming the problem otherwise."""
    if len(source) > MAX_TEMPLATE_CHARS:
        raise JsonPathError(f"longer than {MAX_TEMPLATE_CHARS} characters")
    if not source:
        raise JsonPathError("the template is empty (e.g. jsonpath='{.metadata.name}')")
    stack: list[tuple[Path | None, list[Node]]] = [(None, [])]
    for kind, body in _split(source):
        nodes = stack[-1][1]
        if kind == "text":
            nodes.append(Text(body))
            continue
        action = body.strip()
        if action == "end":
            if len(stack) == 1:
                raise JsonPathError("{end} without a {range ...}")
            path, inner = stack.pop()
            assert path is not None
            stack[-1][1].append(Range(path, tuple(inner)))
        elif action.startswith("range ") or action == "range":
            if len(stack) > MAX_RANGE_DEPTH:
                raise JsonPathError(f"ranges nested more than {MAX_RANGE_DEPTH} deep")
            stack.append((Path(_PathParser(action[len("range") :].strip()).path()), []))
        elif action[:1] in ('"', "'"):
            nodes.append(Text(_string_literal(action)))
        else:
            nodes.append(Path(_PathParser(action).path()))
    if len(stack) > 1:
        raise JsonPathError("{range ...} without its {end}")
    return Template(tuple(stack[0][1]), source)


def _split(source: str) -> Iterator[tuple[str, str]]:
    """("text", literal) and ("action", inside-the-braces) parts; braces inside quotes do not count."""
    at = 0
    while at < len(source):
        open_at = source.find("{", at)
        if open_at < 0:
            yield "text", source[at:]
            return
        if open_at > at:
            yield "text", source[at:open_at]
        close_at, quote = open_at + 1, ""
        while close_at < len(source):
            ch = source[close_at]
            if quote:
                if ch == "\\":
                    close_at += 1
                elif ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "}":
                break
            close_at += 1
        if close_at >= len(source):
            raise JsonPathError(
                f"unclosed action starting at character {open_at + 1}: {source[open_at : open_at + 30]!r}"
            )
        yield "action", source[open_at + 1 : close_at]
        at = close_at + 1


_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}


def _string_literal(action: str) -> str:
    quote = action[0]
    if len(action) < 2 or action[-1] != quote:
        raise JsonPathError(f"unterminated string {action!r}")
    out, chars = [], iter(action[1:-1])
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, "")
            if nxt not in _ESCAPES:
                raise JsonPathError(f"unknown escape \\{nxt} in {action!r} (known: \\n \\t \\r \\\" \\' \\\\)")
            out.append(_ESCAPES[nxt])
        else:
            out.append(ch)
    return "".join(out)


class _PathParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, why: str) -> JsonPathError:
        return JsonPathError(f"{why} at character {self.at + 1} of {self.text!r}")

    def path(self, *, in_filter: bool = False) -> tuple[Step, ...]:
        if self.text[self.at : self.at + 1] in ("$", "@"):
            self.at += 1
        steps: list[Step] = []
        stop = ")" if in_filter else ""
        while self.at < len(self.text):
            ch = self.text[self.at]
            if in_filter and (ch in " =!<>" or ch == stop):
                break
            if self.text.startswith("..", self.at):
                self.at += 2
                steps.append(Recursive(self._name(allow_star=True)))
            elif ch == ".":
                self.at += 1
                if self.at >= len(self.text):  # `{.}`: the document itself
                    break
                if self.text[self.at] == "*":
                    self.at += 1
                    steps.append(Wildcard())
                elif self.text[self.at] == "[":
                    continue
                else:
                    steps.append(Field(self._name()))
            elif ch == "[":
                steps.append(self._bracket())
            else:
                raise self.fail(f"unexpected {ch!r} (a path is .field, ['key'], [n], [*] or [?(...)])")
        if not steps and not in_filter and self.text.strip() not in ("", ".", "$", "@", "$.", "@."):
            raise self.fail("not a path")
        return tuple(steps)

    def _name(self, *, allow_star: bool = False) -> str:
        if allow_star and self.text[self.at : self.at + 1] == "*":
            self.at += 1
            return "*"
        match = _FIELD.match(self.text, self.at)
        if not match:
            raise self.fail("expected a field name")
        self.at = match.end()
        return match.group().replace("\\.", ".")

    def _bracket(self) -> Step:
        close = self._matching_bracket()
        inner = self.text[self.at + 1 : close].strip()
        start = self.at
        self.at = close + 1
        if inner == "*":
            return Wildcard()
        if inner[:1] in ("'", '"'):
            if "," in inner and not (inner.count(inner[0]) == 2 and inner.endswith(inner[0])):
                raise JsonPathError(f"unions such as {inner!r} are not supported")
            return Field(_string_literal(inner))
        if inner.startswith("?(") and inner.endswith(")"):
            return self._filter(inner[2:-1].strip())
        if "," in inner:
            raise JsonPathError(f"unions such as [{inner}] are not supported")
        if ":" in inner:
            parts = inner.split(":")
            if len(parts) != 2:
                raise JsonPathError(f"slice steps such as [{inner}] are not supported")
            return Slice(*(self._int(p, start) if p.strip() else None for p in parts))
        return Index(self._int(inner, start))

    def _matching_bracket(self) -> int:
        depth, quote = 0, ""
        for i in range(self.at, len(self.text)):
            ch = self.text[i]
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
                if depth == 0:
                    return i
        raise self.fail("unclosed '['")

    def _int(self, text: str, where: int) -> int:
        try:
            return int(text.strip())
        except ValueError:
            self.at = where
            raise self.fail(f"{text.strip()!r} is not an index") from None

    def _filter(self, expression: str) -> Filter:
        if "&&" in expression or "||" in expression:
            raise JsonPathError(f"filters with && or || are not supported: {expression!r}")
        if not expression.startswith("@"):
            raise JsonPathError(f'a filter starts with @ (e.g. [?(@.type=="Ready")]): {expression!r}')
        inner = _PathParser(expression)
        path = inner.path(in_filter=True)
        rest = expression[inner.at :].strip()
        if not rest:
            return Filter(path, None)
        match = re.match(r"(==|!=|<=|>=|<|>)\s*(.*)$", rest)
        if not match:
            raise JsonPathError(f"filter {expression!r}: expected ==, !=, <, <=, > or >= after the path")
        operator, literal_text = match.group(1), match.group(2).strip()
        if literal_text[:1] in ("'", '"'):
            literal: Any = _string_literal(literal_text)
        elif _NUMBER.fullmatch(literal_text):
            literal = float(literal_text) if "." in literal_text else int(literal_text)
        elif literal_text in ("true", "false"):
            literal = literal_text == "true"
        else:
            raise JsonPathError(f"filter {expression!r}: compare with a quoted string, a number, true or false")
        return Filter(path, operator, literal)


# -- evaluation --------------------------------------------------------------------------------------
def evaluate(steps: tuple[Step, ...], document: Any) -> list[Any]:
    """Every value `steps` reach from `document` (missing fields reach nothing)."""
    current = [document]
    for step in steps:
        current = [found for value in current for found in _step(step, value)]
    return current


def _step(step: Step, value: Any) -> Iterator[Any]:
    if isinstance(step, Field):
        if isinstance(value, dict) and step.name in value:
            yield value[step.name]
    elif isinstance(step, Wildcard):
        if isinstance(value, dict):
            yield from value.values()
        elif isinstance(value, list):
            yield from value
    elif isinstance(step, Index):
        if isinstance(value, list) and -len(value) <= step.index < len(value):
            yield value[step.index]
    elif isinstance(step, Slice):
        if isinstance(value, list):
            yield from value[step.start : step.end]
    elif isinstance(step, Recursive):
        yield from _descend(step.name, value)
    elif isinstance(step, Filter) and isinstance(value, list):
        yield from (item for item in value if _keep(step, item))


def _descend(name: str, value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        if name == "*":
            yield from value.values()
        elif name in value:
            yield value[name]
        for child in value.values():
            yield from _descend(name, child)
    elif isinstance(value, list):
        for child in value:
            if name == "*":
                yield child
            yield from _descend(name, child)


def _keep(step: Filter, item: Any) -> bool:
    found = evaluate(step.path, item)
    if step.operator is None:
        return any(v not in (None, "", [], {}, False) for v in found)
    return any(_compare(v, step.operator, step.literal) for v in found)


def _compare(value: Any, operator: str, literal: Any) -> bool:
    if operator == "==":
        return bool(value == literal)
    if operator == "!=":
        return bool(value != literal)
    if isinstance(value, bool) or isinstance(literal, bool):
        return False
    if isinstance(value, int | float) and isinstance(literal, int | float):
        return _ordered(value, literal, operator)
    if isinstance(value, str) and isinstance(literal, str):
        return _ordered(value, literal, operator)
    return False  # kubectl compares numbers with numbers and strings with strings only


def _ordered(left: Any, right: Any, operator: str) -> bool:
    return bool({"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[operator])


def _render(nodes: tuple[Node, ...], document: Any) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, Text):
            yield node.text
        elif isinstance(node, Path):
            yield " ".join(format_value(v) for v in evaluate(node.steps, document))
        else:
            for item in evaluate(node.path.steps, document):
                yield from _render(node.body, item)


def format_value(value: Any) -> str:
    """A value as kubectl's jsonpath prints it."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
