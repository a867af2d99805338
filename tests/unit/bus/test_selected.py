"""A selector that fails lets the change through to the decoder (reported), never skips it."""

from __future__ import annotations

from prometheus_client import REGISTRY

from vc_bus.decoding import selected


def failing(data: bytes) -> bool:
    raise KeyError("a selector's own bug")


def counted() -> float:
    return REGISTRY.get_sample_value("tephra_decode_errors_total", {"source": "unit", "kind": "Selector"}) or 0.0


def test_a_failing_selector_admits_and_is_counted() -> None:
    before = counted()
    assert selected(failing, b"{}", source="unit")
    assert counted() == before + 1


def test_a_working_selector_decides() -> None:
    assert not selected(lambda data: False, b"{}", source="unit")
    assert selected(lambda data: True, b"{}", source="unit")
