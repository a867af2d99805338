"""Settings every service shares: the NATS replica count and server list (flags and environment), and
a service's own flags read as its typed options class (options_of)."""

from __future__ import annotations

import argparse
import re
from typing import Annotated

import msgspec
import pytest

from vc_core.errors import ConfigError
from vc_runtime.settings import RuntimeSettings, options_of, parse


def test_replicas_default_to_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VC_NATS__REPLICAS", raising=False)
    assert parse("gc", []).nats_replicas == 1


def test_replicas_from_the_environment_as_the_production_overlay_sets_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VC_NATS__REPLICAS", "3")
    settings = parse("gc", [])
    assert settings.nats_replicas == 3
    assert "nats_replicas" not in settings.flags


def test_the_flag_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VC_NATS__REPLICAS", "3")
    assert parse("gc", ["--nats-replicas", "1"]).nats_replicas == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("0", "--nats-replicas: 0 must be between 1 and 5", id="zero"),
        pytest.param("6", "--nats-replicas: 6 must be between 1 and 5", id="above-jetstream-max"),
        pytest.param("three", "--nats-replicas: 'three' is not a whole number", id="not-a-number"),
    ],
)
def test_bad_replicas_are_refused_naming_the_flag(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse("gc", ["--nats-replicas", value])
    assert str(caught.value) == message


def test_a_server_list_is_accepted_and_each_url_checked() -> None:
    urls = "nats://127.0.0.1:4222,nats://127.0.0.1:4223"
    assert parse("gc", ["--nats", urls]).nats_url == urls
    with pytest.raises(ConfigError, match=re.escape("'127.0.0.1:4223' is not a nats:// URL")):
        parse("gc", ["--nats", "nats://127.0.0.1:4222,127.0.0.1:4223"])


class DemoOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    period: float = 1.0
    workers: Annotated[int, msgspec.Meta(ge=1)] = 4
    names: tuple[str, ...] = ("volcano",)
    conf: str | None = None


def demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--period")  # no type=: the string reaches options_of as given
    parser.add_argument("--workers", type=int)
    parser.add_argument("--names", action="append")
    parser.add_argument("--conf")


def demo(*argv: str) -> DemoOptions:
    return options_of(parse("demo", list(argv), add_arguments=demo_arguments), DemoOptions)


def test_flags_not_given_take_the_defaults_of_the_options_class() -> None:
    assert demo() == DemoOptions()


def test_given_flags_become_typed_fields() -> None:
    options = demo("--workers", "8", "--names", "a", "--names", "b", "--conf", "c.yaml")
    assert options == DemoOptions(workers=8, names=("a", "b"), conf="c.yaml")
    flags = {"period": 2, "workers": 3}  # as an in-process test passes them: an int is a good float
    assert options_of(RuntimeSettings(service="demo", flags=flags), DemoOptions) == DemoOptions(period=2.0, workers=3)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(("--period", "abc"), "--period: expected `float`, got 'abc'", id="wrong-type"),
        pytest.param(("--workers", "0"), "--workers: expected `int` >= 1, got 0", id="out-of-bounds"),
    ],
)
def test_a_bad_value_is_a_config_error_naming_the_flag(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        demo(*argv)
    assert str(caught.value) == message


@pytest.mark.parametrize("value", [None, 3], ids=["not-given", "given"])
def test_a_flag_the_options_class_lacks_is_refused_given_or_not(value: object) -> None:
    settings = RuntimeSettings(service="demo", flags={"period": 2.0, "lease_ttl": value})
    with pytest.raises(ConfigError) as caught:
        options_of(settings, DemoOptions)
    assert str(caught.value) == "--lease-ttl: DemoOptions has no field 'lease_ttl' for this flag"
