"""Kubernetes resource quantities (`500m`, `1Gi`, `2`, `1e3`), parsed exactly and formatted canonically.

Values are held as `fractions.Fraction` while parsing so `0.1` plus `0.2` cores is exactly `300m`;
callers that need speed convert to float once (the scheduler keeps NumPy arrays of floats).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final

from vc_core.errors import InvalidObject

_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN: Final = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")
MAX_QUANTITY_LENGTH: Final = 64
# Parsed texts, shared: a cluster uses a handful of distinct quantities ("250m", "1Gi") millions of times
# and Fraction arithmetic is slow. Bounded: once full, new texts are parsed without being kept.
_PARSED: dict[str, Fraction] = {}
_PARSED_MAX: Final = 65_536


def parse_quantity(value: str | int | float, *, field: str = "quantity") -> Fraction:
    """Parse a Kubernetes quantity; raise InvalidObject naming `field` when it is not one."""
    if value.__class__ is str:
        known = _PARSED.get(value)
        if known is not None:
            return known
        parsed = _parse(value, field)
        if len(_PARSED) < _PARSED_MAX:
            _PARSED[value] = parsed
        return parsed
    return _parse(value, field)


def _parse(value: str | int | float, field: str) -> Fraction:
    if isinstance(value, bool):
        raise InvalidObject(field, "quantity", f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):  # YAML's .nan and .inf are floats no quantity can be
            raise InvalidObject(field, "quantity", "must be a finite quantity")
        return Fraction(value).limit_denominator(10**9)
    text = value.strip()
    if not text or len(text) > MAX_QUANTITY_LENGTH:
        raise InvalidObject(field, "quantity", f"{value!r} is not a quantity")
    match = _PATTERN.match(text)
    if match is None:
        raise InvalidObject(field, "quantity", f"{value!r} is not a quantity (expected e.g. '500m', '2', '1Gi', '1e3')")
    number, exponent, suffix = match.groups()
    amount = Fraction(number)
    if exponent:
        power = int(exponent[1:])
        if abs(power) > 30:
            raise InvalidObject(field, "quantity", f"{value!r} has an out-of-range exponent")
        return amount * Fraction(10) ** power
    suffix = suffix or ""
    if suffix in _BINARY:
        return amount * _BINARY[suffix]
    return amount * _DECIMAL[suffix]


def is_quantity(value: object) -> bool:
    """True when `value` parses as a quantity."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return False
    try:
        parse_quantity(value)
    except InvalidObject:
        return False
    return True


def format_quantity(value: Fraction | int | float, *, binary: bool = False) -> str:
    """Canonical text for a value: integers plain, fractions in milli-units, memory with a binary suffix."""
    amount = value if isinstance(value, Fraction) else Fraction(value).limit_denominator(10**9)
    if amount.denominator == 1:
        whole = amount.numerator
        if binary and whole != 0:
            for suffix, factor in reversed(_BINARY.items()):
                if whole % factor == 0:
                    return f"{whole // factor}{suffix}"
        return str(whole)
    milli = amount * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    nano = amount * 10**9
    return f"{round(nano)}n"
