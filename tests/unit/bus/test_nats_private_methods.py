"""The bus overrides private methods of nats-py's client (for raw delivery, coalesced flushes and
cheaper requests): nats-py may change them in any release without notice. nats-py is pinned exactly,
and these tests fail when the source of a method the bus overrides, or leans on, differs from the one
the overrides were written against, saying what to re-check."""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import tomllib
from pathlib import Path

import pytest
from nats.aio.client import Client

from vc_bus.connection import CoalescingClient
from vc_bus.rawsub import RawDeliveryClient

ROOT = Path(__file__).resolve().parents[3]
NATS_PY = "2.16.0"

# nats-py's method -> (sha256 of its source in NATS_PY, what to re-check in ours when it changed).
PINNED = {
    "_flusher": (
        "43957ffb357d6d94fb9f8d89c52523a02bd82bdba1104150c304d6ba5c867f41",
        "vc_bus.connection.CoalescingClient._flusher: the pending buffer, the flush queue's futures and "
        "the error path (_error_cb, _process_op_err) it copies",
    ),
    "_send_ping": (
        "d57b2f820443afb4ed739d9c0bf771f3881c6a7acd9ded3f3db7edc60305d682",
        "vc_bus.rawsub.RawDeliveryClient._send_ping: _pongs, the pending buffer written ahead of the PING",
    ),
    "_request_new_style": (
        "78cc35ce5ad4f81109703521e302e221d9cca9a7172e577531bad66a0e3e54af",
        "vc_bus.rawsub.RawDeliveryClient._request_new_style: its signature, _resp_map, _resp_sub_prefix, "
        "the errors it raises",
    ),
    "_init_request_sub": (
        "14571cd9117edb1c1e31b3f6f7ede5a8a38f294b3e9d9e48f11c0c70a2bbcf5a",
        "vc_bus.rawsub.RawDeliveryClient._init_request_sub: the inbox prefix and the reply subscription",
    ),
    "_process_msg": (
        "6cff75947e97717a14ec0ed53f1679b8179e81d18a2fafff780baa08160ecc0a",
        "vc_bus.rawsub.RawDeliveryClient._process_msg: its arguments as the parser passes them, the stats",
    ),
    "subscribe": (
        "30bf1c4cc1c9480663089c0e97996ceda0d7826a0f4a6fa635fa29fd363f1494",
        "vc_bus.rawsub.RawDeliveryClient.subscribe_raw: that a subscription is numbered _sid + 1 before "
        "subscribe's first await",
    ),
}


def test_nats_py_is_pinned_to_the_version_the_overrides_were_written_against() -> None:
    project = tomllib.loads((ROOT / "libs" / "bus" / "pyproject.toml").read_text())["project"]
    assert f"nats-py=={NATS_PY}" in project["dependencies"], "pin nats-py exactly: the bus overrides its privates"
    assert importlib.metadata.version("nats-py") == NATS_PY


@pytest.mark.parametrize("method", sorted(PINNED))
def test_a_nats_py_method_the_bus_overrides_is_the_one_it_was_written_against(method: str) -> None:
    digest, recheck = PINNED[method]
    source = inspect.getsource(getattr(Client, method))
    assert hashlib.sha256(source.encode()).hexdigest() == digest, (
        f"nats-py's Client.{method} changed: re-check {recheck}, then update its digest here"
    )


def test_every_nats_py_method_the_bus_overrides_is_pinned() -> None:
    overridden = {
        name
        for cls in (RawDeliveryClient, CoalescingClient)
        for name in vars(cls)
        if hasattr(Client, name) and not name.startswith("__")
    }
    assert overridden <= PINNED.keys(), f"pin the source of {sorted(overridden - PINNED.keys())} here"
