"""The scheduler configuration in Volcano's YAML shape (actions, tiers, configurations)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from vc_core.errors import ConfigError
from vc_sched_core.framework.interfaces import ENABLE_KEYS, OTHER_ENABLE_KEYS, ExtensionPoint

# Volcano's built-in default (pkg/scheduler/util.go DefaultSchedulerConf); deploy/scheduler ships the same.
DEFAULT_CONF_YAML: Final = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

# Volcano's in-tree plugins (pkg/scheduler/plugins/factory.go) that Tephra does not implement. A conf
# naming one still loads, without it, so a migrated ConfigMap does not stop the scheduler; each one
# is named in `SchedulerConf.skipped` (the scheduler logs them). A strict load refuses instead.
VOLCANO_PLUGINS_NOT_IN_TEPHRA: Final = frozenset(
    {
        "cdp",
        "extender",
        "nodegroup",
        "numa-aware",
        "rescheduling",
        "resource-strategy-fit",
        "task-topology",
        "tdm",
        "usage",
    }
)

# Plugin arguments that switch on Volcano behaviour Tephra does not implement: a conf setting one (true,
# or a non-empty value) loads, the argument ignored with a warning (`SchedulerConf.ignored`), or is
# refused when strict.
UNIMPLEMENTED_ARGUMENTS: Final[Mapping[str, tuple[str, ...]]] = {
    "deviceshare": (
        "deviceshare.GPUSharingEnable",
        "deviceshare.GPUNumberEnable",
        "deviceshare.AscendMindClusterVNPUEnable",
        "deviceshare.AscendHAMiVNPUEnable",
        "deviceshare.GPUExclusiveRules",
    ),
}


def argument_bool(value: object) -> bool | None:
    """A plugin argument as Volcano's Arguments.GetBool reads it: a bool, or a string Go's ParseBool
    takes; None for anything else (Volcano logs it and keeps the default)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value in ("1", "t", "T", "TRUE", "true", "True"):
            return True
        if value in ("0", "f", "F", "FALSE", "false", "False"):
            return False
    return None


class ConfError(ConfigError):
    """A bad scheduler configuration; `field` names where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"scheduler conf: {field}: {message}")
        self.field = field


@dataclass(frozen=True, slots=True)
class PluginOption:
    name: str
    arguments: Mapping[str, object] = field(default_factory=dict)
    disabled: frozenset[ExtensionPoint] = frozenset()
    flags: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, point: ExtensionPoint) -> bool:
        return point not in self.disabled


@dataclass(frozen=True, slots=True)
class Tier:
    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True, slots=True)
class SchedulerConf:
    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    # Volcano plugins the conf names that Tephra lacks and left out, as "tiers[i].plugins[j]: name".
    skipped: tuple[str, ...] = ()
    # Arguments Tephra does not act on, as "tiers[i].plugins[j]: name: argument" (UNIMPLEMENTED_ARGUMENTS).
    ignored: tuple[str, ...] = ()

    def warnings(self) -> list[str]:
        """One line per plugin left out or argument ignored, naming it (empty when the conf loaded whole)."""
        return [f"{entry}: Volcano plugin not implemented by Tephra; loaded without it" for entry in self.skipped] + [
            f"{entry}: not implemented by Tephra; ignored" for entry in self.ignored
        ]

    def action_arguments(self, name: str) -> Mapping[str, object]:
        return self.configurations.get(name, {})

    def plugin_names(self) -> list[str]:
        return [p.name for tier in self.tiers for p in tier.plugins]


def load_conf(
    text: str | bytes, *, known_actions: list[str], known_plugins: list[str], strict: bool = False
) -> SchedulerConf:
    """Parse and validate; unknown action or plugin names are errors (Volcano: "failed to find Action"),
    except Volcano plugins Tephra lacks: left out and listed in `skipped`, or refused when `strict`."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfError("(document)", f"not valid YAML: {exc}") from exc
    if not isinstance(raw, Mapping):
        raise ConfError("(document)", "expected a mapping with actions and tiers")
    actions = _actions(raw.get("actions", ""), known_actions)
    skipped: list[str] = []
    ignored: list[str] = []
    raw_tiers = _list(raw.get("tiers"), "tiers")
    tiers = tuple(
        _tier(i, t, known_plugins, strict=strict, skipped=skipped, ignored=ignored) for i, t in enumerate(raw_tiers)
    )
    configurations = _configurations(raw.get("configurations"))
    conf = SchedulerConf(actions, tiers, configurations, tuple(skipped), tuple(ignored))
    _check_conflicts(conf)
    return conf


def default_conf(*, known_actions: list[str], known_plugins: list[str]) -> SchedulerConf:
    return load_conf(DEFAULT_CONF_YAML, known_actions=known_actions, known_plugins=known_plugins)


def _list(value: object, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfError(field, "expected a list")
    return value


def _actions(value: object, known: list[str]) -> tuple[str, ...]:
    if not isinstance(value, str):
        raise ConfError("actions", 'expected a comma separated string such as "enqueue, allocate, backfill"')
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    for name in names:
        if name not in known:
            raise ConfError("actions", f"failed to find Action {name} (known: {', '.join(known)})")
    return names


def _tier(index: int, raw: object, known: list[str], *, strict: bool, skipped: list[str], ignored: list[str]) -> Tier:
    if not isinstance(raw, Mapping):
        raise ConfError(f"tiers[{index}]", "expected a mapping with plugins")
    plugins = _list(raw.get("plugins"), f"tiers[{index}].plugins")
    options = (
        _plugin(f"tiers[{index}].plugins[{i}]", p, known, strict=strict, skipped=skipped, ignored=ignored)
        for i, p in enumerate(plugins)
    )
    return Tier(tuple(option for option in options if option is not None))


def _plugin(
    field: str, raw: object, known: list[str], *, strict: bool, skipped: list[str], ignored: list[str]
) -> PluginOption | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise ConfError(field, "expected a mapping with a name")
    name = raw["name"]
    if name not in known and name in VOLCANO_PLUGINS_NOT_IN_TEPHRA:
        if strict:
            message = f"Volcano plugin {name} is not implemented by Tephra (strict conf refuses it)"
            raise ConfError(f"{field}.name", message)
        skipped.append(f"{field}: {name}")
        return None
    if name not in known:
        raise ConfError(f"{field}.name", f"failed to find Plugin {name} (known: {', '.join(known)})")
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise ConfError(f"{field}.arguments", "expected a mapping")
    ignored.extend(_ignored(field, name, arguments, strict=strict))
    flags = {k: v for k, v in raw.items() if k in set(ENABLE_KEYS.values()) | OTHER_ENABLE_KEYS}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise ConfError(f"{field}.{key}", "expected true or false")
    # An absent flag means enabled (Volcano ApplyPluginConfDefaults).
    disabled = frozenset(point for point, key in ENABLE_KEYS.items() if flags.get(key) is False)
    return PluginOption(name, dict(arguments), disabled, flags)


def _configurations(value: object) -> dict[str, Mapping[str, object]]:
    out: dict[str, Mapping[str, object]] = {}
    for i, item in enumerate(_list(value, "configurations")):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ConfError(f"configurations[{i}]", "expected a mapping with a name")
        arguments = item.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise ConfError(f"configurations[{i}].arguments", "expected a mapping")
        out[item["name"]] = dict(arguments)
    return out


def _ignored(field: str, name: str, arguments: Mapping[str, object], *, strict: bool) -> list[str]:
    """The set arguments of UNIMPLEMENTED_ARGUMENTS, as "tiers[i].plugins[j]: name: argument <key>"."""
    out = []
    for key in UNIMPLEMENTED_ARGUMENTS.get(name, ()):
        value = arguments.get(key)
        if value is None or argument_bool(value) is False or value in ("", [], {}):
            continue
        if strict:
            raise ConfError(
                f"{field}.arguments", f"argument {key} is not implemented by Tephra (strict conf refuses it)"
            )
        out.append(f"{field}: {name}: argument {key}")
    return out


def _check_conflicts(conf: SchedulerConf) -> None:
    for i, tier in enumerate(conf.tiers):
        names = {p.name for p in tier.plugins}
        if "proportion" in names and any(p.name == "drf" and p.flags.get("enableHierarchy") for p in tier.plugins):
            raise ConfError(f"tiers[{i}]", "proportion and drf with hierarchy enabled conflicts")
        for j, plugin in enumerate(tier.plugins):
            if plugin.name == "deviceshare":
                _check_deviceshare(f"tiers[{i}].plugins[{j}].arguments", plugin.arguments)


def _check_deviceshare(field: str, arguments: Mapping[str, object]) -> None:
    """Volcano's deviceshare stops the scheduler (klog.Fatal) on these; here they are conf errors."""
    sharing, number, vgpu = (
        argument_bool(arguments.get(f"deviceshare.{name}")) is True
        for name in ("GPUSharingEnable", "GPUNumberEnable", "VGPUEnable")
    )
    if sharing and number:
        raise ConfError(field, "can not define true in both gpu sharing and gpu number")
    if (sharing or number) and vgpu:
        raise ConfError(field, "gpu-share and vgpu can't be used together")
