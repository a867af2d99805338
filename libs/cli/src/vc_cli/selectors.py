"""Label selectors as kubectl reads `-l/--selector` (k8s.io/apimachinery/pkg/labels.Parse).

    app=web,tier!=cache         equality and inequality (`==` is the same as `=`)
    env in (prod, staging)      set membership; `notin` is the negation
    gpu                         the key exists;  `!gpu`: it does not
    replicas>2, replicas<10     numeric comparisons (the label's value read as an integer)

Requirements are joined by commas and all must hold. As in Kubernetes, `!=` and `notin` also match
objects that do not have the key at all, and keys and values must be valid label keys and values
(a key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters; a value: at
most 63 characters of letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit).
Pure: parsing and matching only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

MAX_SELECTOR_CHARS: Final = 8192  # far past any real selector; argv is not a place for megabytes
MAX_REQUIREMENTS: Final = 256
MAX_VALUES: Final = 256

_NAME: Final = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Characters that end an identifier: kubectl's lexer treats these as tokens of their own.
_SPECIAL: Final = frozenset(" \t\n,=!()<>")


class SelectorError(ValueError):
    """A selector that does not parse: the message says where and why."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str  # "exists", "!", "=", "!=", "in", "notin", ">", "<"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if self.operator in ("=", "in"):
            return present and value in self.values
        if self.operator in ("!=", "notin"):
            return not present or value not in self.values
        # > and <: both sides integers, as Kubernetes compares them
        if not present:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if self.operator == ">" else number < bound

    def __str__(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!":
            return f"!{self.key}"
        if self.operator in ("in", "notin"):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        return f"{self.key}{self.operator}{self.values[0]}"


@dataclass(frozen=True, slots=True)
class Selector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        found = labels or {}
        return all(r.matches(found) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING: Final = Selector()


def parse_selector(text: str) -> Selector:
    """The selector `text` means; SelectorError naming the problem (and the requirement) otherwise."""
    if len(text) > MAX_SELECTOR_CHARS:
        raise SelectorError(f"longer than {MAX_SELECTOR_CHARS} characters")
    tokens = _tokens(text)
    if not tokens:
        return EVERYTHING
    parser = _Parser(tokens)
    requirements = [parser.requirement()]
    while parser.peek() == ",":
        parser.take()
        requirements.append(parser.requirement())
        if len(requirements) > MAX_REQUIREMENTS:
            raise SelectorError(f"more than {MAX_REQUIREMENTS} requirements")
    if parser.peek() is not None:
        raise SelectorError(f"unexpected {parser.peek()!r} after {str(requirements[-1])!r}")
    return Selector(tuple(requirements))


def _tokens(text: str) -> list[str]:
    """Identifiers and the operator tokens `,` `=` `==` `!=` `!` `(` `)` `<` `>`, whitespace dropped."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "=!" and text[i + 1 : i + 2] == "=":
            out.append(ch + "=")
            i += 2
        elif ch in _SPECIAL:
            out.append(ch)
            i += 1
        else:
            start = i
            while i < len(text) and text[i] not in _SPECIAL:
                i += 1
            out.append(text[start:i])
    return out


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self._tokens = tokens
        self._at = 0

    def peek(self) -> str | None:
        return self._tokens[self._at] if self._at < len(self._tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self._at += 1
        return token

    def requirement(self) -> Requirement:
        first = self.take()
        if first == "!":
            key = _key(self.take())
            if self.peek() not in (None, ","):
                raise SelectorError(f"`!{key}` takes no operator (got {self.peek()!r})")
            return Requirement(key, "!")
        key = _key(first)
        op = self.peek()
        if op in (None, ","):
            return Requirement(key, "exists")
        self.take()
        if op in ("=", "==", "!="):
            return Requirement(key, "=" if op != "!=" else "!=", (_value(self._value_token(), key),))
        if op in (">", "<"):
            bound = self._value_token()
            if not re.fullmatch(r"-?[0-9]+", bound):
                raise SelectorError(f"{key}{op}{bound}: {op} needs an integer")
            return Requirement(key, op, (bound,))
        if op in ("in", "notin"):
            return Requirement(key, op, self._set(key, op))
        raise SelectorError(f"after key {key!r}: expected one of = == != in notin > < (got {op!r})")

    def _value_token(self) -> str:
        token = self.peek()
        if token is None or token == ",":  # `key=` is an empty value, as in Kubernetes
            return ""
        if token in _SPECIAL or token in ("==", "!="):
            raise SelectorError(f"expected a value, got {token!r}")
        self.take()
        return token

    def _set(self, key: str, op: str) -> tuple[str, ...]:
        if self.take() != "(":
            raise SelectorError(f"{key} {op}: expected '(' and a list of values")
        values: list[str] = []
        while True:
            token = self.peek()
            if token == ")":  # `in ()` and a trailing comma are refused like kubectl refuses them
                if not values:
                    raise SelectorError(f"{key} {op} (): needs at least one value")
                self.take()
                return tuple(values)
            if token is None:
                raise SelectorError(f"{key} {op} (...: missing ')'")
            values.append(_value(self._value_token(), key))
            if len(values) > MAX_VALUES:
                raise SelectorError(f"{key} {op}: more than {MAX_VALUES} values")
            if self.peek() == ",":
                self.take()
                if self.peek() == ")":
                    raise SelectorError(f"{key} {op}: a value is missing before ')'")
            elif self.peek() is None:
                raise SelectorError(f"{key} {op} ({','.join(values)}: missing ')' to close the list of values")
            elif self.peek() != ")":
                raise SelectorError(f"{key} {op}: expected ',' or ')' between values (got {self.peek()!r})")


def _key(token: str | None) -> str:
    if token is None or token in _SPECIAL or token in ("==", "!="):
        raise SelectorError(f"expected a label key, got {'the end' if token is None else repr(token)}")
    prefix, slash, name = token.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        raise SelectorError(f"label key {token!r}: the prefix must be a DNS subdomain (e.g. example.com/)")
    if not name or len(name) > 63 or not _NAME.match(name):
        raise SelectorError(
            f"label key {token!r}: the name must be at most 63 characters of letters, digits, '-', '_' or '.', "
            "beginning and ending with a letter or digit"
        )
    return token


def _value(token: str, key: str) -> str:
    if token and (len(token) > 63 or not _NAME.match(token)):
        raise SelectorError(
            f"label value {token!r} (key {key!r}): at most 63 characters of letters, digits, '-', '_' or '.', "
            "beginning and ending with a letter or digit"
        )
    return token
