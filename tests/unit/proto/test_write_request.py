"""A write request is one of four types, told apart by its `operation`; the wire format is the one
vcctl and every other producer already send, so requests from either side of a change still decode."""

from __future__ import annotations

import msgspec
import pytest

from vc_proto import api

DECODER = msgspec.json.Decoder(api.WriteRequest)
QUEUE = msgspec.Raw(b'{"kind":"Queue","metadata":{"name":"q1"}}')


@pytest.mark.parametrize(
    ("wire", "request_"),
    [
        pytest.param(
            b'{"operation":"create","object":{"kind":"Queue","metadata":{"name":"q1"}},"namespace":"ns"}',
            api.Create(object=QUEUE, namespace="ns"),
            id="create",
        ),
        pytest.param(
            b'{"operation":"update","object":{"kind":"Queue","metadata":{"name":"q1"}}}',
            api.Update(object=QUEUE),
            id="update",
        ),
        pytest.param(
            b'{"operation":"apply","object":{"kind":"Queue","metadata":{"name":"q1"}}}',
            api.Apply(object=QUEUE),
            id="apply",
        ),
        pytest.param(
            b'{"operation":"delete","kind":"Job","namespace":"ns","name":"j","resourceVersion":"7","uid":"u-1"}',
            api.Delete(kind="Job", namespace="ns", name="j", resource_version="7", uid="u-1"),
            id="delete",
        ),
    ],
)
def test_each_write_decodes_to_its_type_and_encodes_as_it_was_sent(wire: bytes, request_: api.WriteRequest) -> None:
    decoded = DECODER.decode(wire)
    assert type(decoded) is type(request_) and decoded == request_
    assert msgspec.json.encode(request_) == wire


def test_fields_in_another_order_or_of_another_operation_still_decode() -> None:
    """The request was one struct with every field: a producer may still send a field its operation
    does not use, or `user` last."""
    wire = b'{"operation":"delete","object":null,"kind":"Queue","name":"q1","user":"admin"}'
    assert DECODER.decode(wire) == api.Delete(kind="Queue", name="q1", user="admin")
    create = DECODER.decode(b'{"operation":"create","kind":"Queue","name":"q1"}')
    assert isinstance(create, api.Create) and api.is_absent(create.object)  # admission refuses it, naming `object`


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        pytest.param(b'{"operation":"explode"}', "Invalid value 'explode' - at `$.operation`", id="unknown"),
        pytest.param(b'{"object":null}', "Object missing required field `operation`", id="missing"),
    ],
)
def test_an_operation_that_is_not_one_of_the_four_is_refused_naming_the_field(wire: bytes, message: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=message.replace("$", r"\$").replace(".", r"\.")):
        DECODER.decode(wire)


def test_the_operation_name_is_the_types_tag() -> None:
    assert [api.operation_of(w) for w in (api.Create(), api.Update(), api.Apply(), api.Delete())] == [
        "create",
        "update",
        "apply",
        "delete",
    ]
