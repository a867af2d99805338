"""Job plugins: the names Volcano knows, their command-line flags, and the plugins they depend on.

Volcano parses plugin arguments with Go's `flag` package (`--flag=value`, `-flag value`, bare `--bool`)
inside the job controller, and merely logs a parse failure there; admission refuses it up front instead,
so a typo in `--master=launcher` is reported to the user rather than silently ignored.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

from vc_validation.limits import MAX_PLUGIN_ARG_LENGTH, MAX_PLUGIN_ARGS, MAX_PLUGINS
from vc_validation.verdict import Violation


class FlagType(Enum):
    BOOL = "bool"
    INT = "int"
    STRING = "string"


_B, _I, _S = FlagType.BOOL, FlagType.INT, FlagType.STRING

# Flags per plugin, from each plugin's `flagSet` in pkg/controllers/job/plugins/**.
# `env` defines no flag set and ignores its arguments, so it accepts any positional ones.
PLUGIN_FLAGS: Final[Mapping[str, Mapping[str, FlagType]]] = {
    "env": {},
    "svc": {"publish-not-ready-addresses": _B, "disable-network-policy": _B, "inject-hosts-env": _B},
    "ssh": {"ssh-key-file-path": _S, "ssh-private-key": _S, "ssh-public-key": _S, "ssh-port": _I},
    "tensorflow": {"ps": _S, "worker": _S, "chief": _S, "evaluator": _S, "port": _I},
    "mpi": {"master": _S, "worker": _S, "port": _I},
    "pytorch": {
        "master": _S,
        "worker": _S,
        "port": _I,
        "wait-master-enabled": _B,
        "wait-master-timeout": _I,
        "wait-master-image": _S,
    },
    "hcclrank": {"master": _S, "worker": _S},
    "ray": {
        "head": _S,
        "headContainer": _S,
        "worker": _S,
        "workerContainer": _S,
        "port": _I,
        "dashboardPort": _I,
        "clientPort": _I,
    },
}
KNOWN_PLUGINS: Final = frozenset(PLUGIN_FLAGS)
# Volcano mutate_job.go patchDefaultPlugins: these frameworks need the svc (and mpi the ssh) plugin.
PLUGIN_DEPENDENCIES: Final[Mapping[str, tuple[str, ...]]] = {
    "tensorflow": ("svc",),
    "pytorch": ("svc",),
    "ray": ("svc",),
    "mpi": ("ssh", "svc"),
}
MPI_DEFAULT_MASTER: Final = "master"
_TRUE_FALSE: Final = frozenset({"1", "0", "t", "f", "T", "F", "true", "false", "TRUE", "FALSE", "True", "False"})


@dataclass(frozen=True, slots=True)
class FlagError:
    message: str


def parse_flags(args: Sequence[str], flags: Mapping[str, FlagType]) -> dict[str, str] | FlagError:
    """Go `flag.FlagSet.Parse` semantics: flags until the first non-flag or `--`; the rest is positional."""
    values: dict[str, str] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--" or len(arg) < 2 or not arg.startswith("-") or arg in ("-", "---"):
            break
        name, has_value, value = arg.lstrip("-").partition("=")
        if arg.startswith("---") or not name:
            return FlagError(f"bad flag syntax: {arg}")
        kind = flags.get(name)
        if kind is None:
            return FlagError(f"flag provided but not defined: -{name}")
        if not has_value and kind is not FlagType.BOOL:
            if index + 1 >= len(args):
                return FlagError(f"flag needs an argument: -{name}")
            index += 1
            value = args[index]
        elif not has_value:
            value = "true"
        problem = _check_value(name, kind, value)
        if problem:
            return FlagError(problem)
        values[name] = value
        index += 1
    return values


def _check_value(name: str, kind: FlagType, value: str) -> str | None:
    if kind is FlagType.BOOL and value not in _TRUE_FALSE:
        return f"invalid boolean value {value!r} for -{name}"
    if kind is FlagType.INT and not _is_go_int(value):
        return f"invalid value {value!r} for flag -{name}: parse error"
    return None


def _is_go_int(value: str) -> bool:
    try:
        number = int(value, 0)
    except ValueError:
        return False
    return -(2**63) <= number < 2**63


def validate_plugins(plugins: Mapping[str, Sequence[str]] | None, *, path: str = "spec.plugins") -> Iterator[Violation]:
    if not plugins:
        return
    if len(plugins) > MAX_PLUGINS:
        yield Violation(path, "plugins-count", f"may not have more than {MAX_PLUGINS} plugins, got {len(plugins)}")
        return
    for name, args in plugins.items():
        flags = PLUGIN_FLAGS.get(name)
        if flags is None:
            yield Violation(f"{path}.{name[:64]}", "plugin-known", f"unable to find job plugin: {name[:64]}")
            continue
        yield from _validate_args(name, args or [], flags, f"{path}.{name}")


def _validate_args(name: str, args: Sequence[str], flags: Mapping[str, FlagType], path: str) -> Iterator[Violation]:
    if len(args) > MAX_PLUGIN_ARGS:
        yield Violation(
            path, "plugin-args-count", f"may not have more than {MAX_PLUGIN_ARGS} arguments, got {len(args)}"
        )
        return
    for index, arg in enumerate(args):
        if len(arg) > MAX_PLUGIN_ARG_LENGTH:
            yield Violation(
                f"{path}[{index}]", "plugin-arg-length", f"must be no more than {MAX_PLUGIN_ARG_LENGTH} characters"
            )
            return
    result = parse_flags(args, flags)
    if isinstance(result, FlagError):
        yield Violation(path, "plugin-args", f"invalid arguments for job plugin {name}: {result.message}")


def flag_value(args: Sequence[str] | None, plugin: str, flag: str, default: str) -> str:
    """A parsed flag's value, or `default` when absent or unparsable."""
    parsed = parse_flags(args or [], PLUGIN_FLAGS.get(plugin, {}))
    if isinstance(parsed, FlagError):
        return default
    return parsed.get(flag, default)


def with_dependencies(plugins: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """`plugins` plus the ones its frameworks need (empty args), existing entries untouched."""
    merged = dict(plugins)
    for name in plugins:
        for needed in PLUGIN_DEPENDENCIES.get(name, ()):
            merged.setdefault(needed, [])
    return merged
