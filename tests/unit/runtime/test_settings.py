"""Settings every service shares: the NATS replica count and server list (flags and environment)."""

from __future__ import annotations

import re

import pytest

from vc_core.errors import ConfigError
from vc_runtime.settings import parse


def test_replicas_default_to_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VC_NATS__REPLICAS", raising=False)
    assert parse("gc", []).nats_replicas == 1


def test_replicas_from_the_environment_as_the_production_overlay_sets_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VC_NATS__REPLICAS", "3")
    settings = parse("gc", [])
    assert settings.nats_replicas == 3
    assert "nats_replicas" not in settings.extra


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
