"""Go `flag` package parsing for plugin arguments (`-name=value`, `--name value`, bare bool flags).

Volcano parses with `flag.ContinueOnError` and only logs failures, so a typo silently falls back to
defaults. Tephra reports them: an unknown flag, a bad value, a missing value or a stray positional
argument raises PluginError naming the plugin and the argument, and the job fails with that message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from vc_job_controller.plugins.interface import PluginError

FlagValue = str | int | bool

_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_MAX_ARGS: Final = 64
_MAX_ARG_LENGTH: Final = 16384


@dataclass(frozen=True, slots=True)
class Flag:
    name: str
    default: FlagValue


def parse_flags(plugin: str, args: Sequence[str], flags: Sequence[Flag]) -> dict[str, FlagValue]:
    """Values for every flag (defaults for those not given), or PluginError."""
    if len(args) > _MAX_ARGS:
        raise PluginError(plugin, f"too many arguments ({len(args)}, at most {_MAX_ARGS})")
    known = {f.name: f for f in flags}
    values: dict[str, FlagValue] = {f.name: f.default for f in flags}
    position = 0
    while position < len(args):
        arg = args[position]
        if len(arg) > _MAX_ARG_LENGTH:
            raise PluginError(plugin, f"argument {position} is longer than {_MAX_ARG_LENGTH} characters")
        if arg == "--":
            _refuse_positional(plugin, args[position + 1 :])
            break
        if not arg.startswith("-") or arg == "-":
            _refuse_positional(plugin, args[position:])
        position = _parse_one(plugin, args, position, known, values)
    return values


def _parse_one(
    plugin: str, args: Sequence[str], position: int, known: Mapping[str, Flag], values: dict[str, FlagValue]
) -> int:
    """Parse the flag at `position` into `values`; return the position of the next argument."""
    body = args[position][2:] if args[position].startswith("--") else args[position][1:]
    if not body or body.startswith("-") or body.startswith("="):
        raise PluginError(plugin, f"bad flag syntax: {args[position]}")
    name, has_value, text = body.partition("=")
    flag = known.get(name)
    if flag is None:
        raise PluginError(plugin, f"flag provided but not defined: -{name} (known: {_names(known)})")
    if isinstance(flag.default, bool):
        values[name] = _parse_bool(plugin, name, text) if has_value else True
        return position + 1
    if not has_value:
        if position + 1 >= len(args):
            raise PluginError(plugin, f"flag needs an argument: -{name}")
        text = args[position + 1]
        position += 1
    values[name] = _parse_int(plugin, name, text) if isinstance(flag.default, int) else text
    return position + 1


def _parse_bool(plugin: str, name: str, text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise PluginError(plugin, f'invalid boolean value "{text}" for -{name}')


def _parse_int(plugin: str, name: str, text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise PluginError(plugin, f'invalid value "{text}" for flag -{name}: not an integer') from None


def _refuse_positional(plugin: str, rest: Sequence[str]) -> None:
    if rest:
        raise PluginError(plugin, f"unexpected argument {rest[0]!r} (arguments are flags: -name=value)")


def _names(known: Mapping[str, Flag]) -> str:
    return ", ".join(f"-{n}" for n in sorted(known)) or "none"


def require_port(plugin: str, name: str, value: FlagValue) -> int:
    """A TCP port number 1..65535, or PluginError."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65535:
        raise PluginError(plugin, f"-{name}={value} is not a port (1-65535)")
    return value


def require_text(plugin: str, name: str, value: FlagValue) -> str:
    if not isinstance(value, str):
        raise PluginError(plugin, f"-{name} must be text")
    return value


def require_bool(value: FlagValue) -> bool:
    return bool(value)


def require_int(value: FlagValue) -> int:
    return value if isinstance(value, int) else 0
