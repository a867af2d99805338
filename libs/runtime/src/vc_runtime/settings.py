"""Settings every service shares: command-line flags with environment fallbacks (`VC_<GROUP>__<FIELD>`).

A service's own flags (those its `add_arguments` declares) reach its app as `RuntimeSettings.flags` and
are read typed through `options_of(settings, SchedulerOptions)`, a frozen msgspec Struct next to
`add_arguments` whose fields carry the defaults. argparse gives those flags no default, only an
environment fallback where one exists: a flag left out (None) takes its field's default, so the
defaults live in the options class alone (tests/unit/runtime/test_service_options.py holds each
service's flags and class to that).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

import msgspec

from vc_core.errors import ConfigError

Backend = Literal["nats", "kube"]
# JetStream allows at most 5 replicas of a stream (and so of a KV bucket).
MAX_NATS_REPLICAS = 5


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    service: str
    nats_url: str = "nats://127.0.0.1:4222"
    # Replicas of every KV bucket and stream this service creates (R3 on a 3-server cluster). A bucket
    # keeps the count it was created with: whichever service creates it first decides.
    nats_replicas: int = 1
    backend: Backend = "nats"
    kubeconfig: str | None = None
    health_host: str = "127.0.0.1"
    # 0 picks a free port (logged at start); `vcctl up` gives each process its own.
    health_port: int = 0
    log_level: str = "info"
    log_json: bool | None = None
    instance: str = ""
    grace_s: float = 20.0
    # The service's own flags by argparse dest, as parsed (None: not given); read through options_of.
    flags: Mapping[str, object] = field(default_factory=dict)
    # This process's NATS identity (a credentials file, vc_security.credentials) and the CA its server
    # certificate is checked against when the file carries none. None: connect anonymously.
    nats_creds: str | None = None
    nats_ca: str | None = None


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def parse(
    service: str,
    argv: Sequence[str] | None = None,
    *,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> RuntimeSettings:
    parser = argparse.ArgumentParser(prog=f"vc-{service}", description=f"Tephra {service}")
    parser.add_argument("--nats", default=_env("VC_NATS__URL", _env("VC_SERVER", "nats://127.0.0.1:4222")))
    parser.add_argument(
        "--nats-replicas",
        default=_env("VC_NATS__REPLICAS", "1"),
        help=f"replicas of the KV buckets and streams created (1-{MAX_NATS_REPLICAS})",
    )
    parser.add_argument("--nats-creds", default=_env("VC_NATS__CREDS"), help="this service's NATS credentials file")
    parser.add_argument("--nats-ca", default=_env("VC_NATS__CA"), help="CA certificate (PEM) of the NATS server")
    parser.add_argument("--backend", choices=["nats", "kube"], default=_env("VC_BACKEND", "nats"))
    parser.add_argument("--kubeconfig", default=_env("KUBECONFIG"))
    parser.add_argument("--health-host", default=_env("VC_PROBES__HOST", "127.0.0.1"))
    parser.add_argument("--health-port", type=int, default=int(_env("VC_PROBES__PORT", "0") or 0))
    parser.add_argument("--log-level", default=_env("VC_LOG__LEVEL", "info"))
    parser.add_argument("--log-format", choices=["json", "console", "auto"], default=_env("VC_LOG__FORMAT", "json"))
    parser.add_argument("--instance", default=_env("VC_INSTANCE", ""))
    parser.add_argument("--grace", type=float, default=float(_env("VC_GRACE_S", "20") or 20))
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    for url in str(args.nats).split(","):
        if not url.startswith(("nats://", "tls://")):
            raise ConfigError(f"--nats: {url!r} is not a nats:// URL")
    known = {
        "nats",
        "nats_replicas",
        "backend",
        "kubeconfig",
        "health_host",
        "health_port",
        "log_level",
        "log_format",
        "instance",
        "grace",
        "nats_creds",
        "nats_ca",
    }
    return RuntimeSettings(
        service=service,
        nats_url=args.nats,
        nats_replicas=_replicas(args.nats_replicas),
        backend=args.backend,
        kubeconfig=args.kubeconfig,
        health_host=args.health_host,
        health_port=args.health_port,
        log_level=args.log_level,
        log_json={"json": True, "console": False, "auto": None}[args.log_format],
        instance=args.instance or f"{socket.gethostname()}-{os.getpid()}",
        grace_s=args.grace,
        flags={k: v for k, v in vars(args).items() if k not in known},
        nats_creds=args.nats_creds or None,
        nats_ca=args.nats_ca or None,
    )


def _replicas(text: str) -> int:
    """--nats-replicas / VC_NATS__REPLICAS: a whole number of replicas JetStream accepts."""
    try:
        replicas = int(text)
    except ValueError:
        raise ConfigError(f"--nats-replicas: {text!r} is not a whole number") from None
    if not 1 <= replicas <= MAX_NATS_REPLICAS:
        raise ConfigError(f"--nats-replicas: {replicas} must be between 1 and {MAX_NATS_REPLICAS}")
    return replicas


OptionsT = TypeVar("OptionsT", bound=msgspec.Struct)
# msgspec's "Expected `float`, got `str` - at `$.schedule_period`" (the got part not always there).
_AT_FIELD = re.compile(r"(?P<what>.*?)(?:, got `[^`]*`)? - at `\$\.(?P<field>\w+)")


def options_of(settings: RuntimeSettings, options: type[OptionsT]) -> OptionsT:
    """The service's own flags as its options class; a flag it lacks or a value of the wrong type is a
    ConfigError naming the flag. A flag left out (None) takes the class's default."""
    names = {f.name for f in msgspec.structs.fields(options)}
    for dest in settings.flags:
        if dest not in names:
            raise ConfigError(f"{_flag(dest)}: {options.__name__} has no field {dest!r} for this flag")
    given = {dest: value for dest, value in settings.flags.items() if value is not None}
    try:
        return msgspec.convert(given, options)
    except msgspec.ValidationError as exc:
        raise ConfigError(_config_error(str(exc), given, options)) from None


def _config_error(message: str, given: Mapping[str, object], options: type[msgspec.Struct]) -> str:
    """msgspec's message, said of the flag: "--schedule-period: expected `float`, got 'abc'"."""
    at = _AT_FIELD.match(message)
    if at is None:
        return f"{options.__name__}: {message}"
    what = at["what"][:1].lower() + at["what"][1:]
    return f"{_flag(at['field'])}: {what}, got {given.get(at['field'])!r}"


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")
