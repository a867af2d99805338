"""vcctl's connection to a running Tephra: reads from the shared store, writes through admission."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import nats
import nats.errors
from nats.aio.client import Client

from vc_bus.decoding import UNDECODABLE, describe
from vc_bus.store import NatsStore
from vc_cli.errors import CliError
from vc_proto import api, codec, subjects
from vc_proto.kinds import KubeObject

_reply = msgspec.json.Decoder(api.WriteReply)
WRITE_TIMEOUT_S = 15.0


class Tephra:
    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self.store = NatsStore(nc)

    async def write(self, request: api.WriteRequest) -> KubeObject | None:
        data = msgspec.json.encode(request)
        if len(data) > api.MAX_REQUEST_BYTES:
            limit = api.MAX_REQUEST_BYTES
            raise CliError(f"the request is {len(data):,} bytes; the limit is {limit:,} (3 MiB)", code=2)
        try:
            msg = await self.nc.request(subjects.ADMISSION_WRITE, data, timeout=WRITE_TIMEOUT_S)
        except nats.errors.NoRespondersError as exc:
            raise CliError("no admission service is running (start Tephra with `vcctl up` or `make run`)") from exc
        except nats.errors.TimeoutError as exc:
            raise CliError("admission did not answer within 15 s; the request may or may not have been applied") from exc
        try:
            reply = _reply.decode(msg.data)
            if reply.error is not None:
                raise CliError(format_error(reply.error))
            return None if api.is_absent(reply.object) else codec.decode_object(bytes(reply.object))
        except UNDECODABLE as exc:  # whoever answered on that subject did not answer as admission does
            raise CliError(f"the answer to the write is not readable: {describe(exc)}") from exc

    async def submit(self, operation: api.Operation, document: dict[str, Any], *, namespace: str | None = None) -> KubeObject:
        try:
            raw = msgspec.Raw(msgspec.json.encode(document))
        except (msgspec.EncodeError, OverflowError, TypeError, ValueError) as exc:  # e.g. an integer past 64 bits
            raise CliError(f"the document cannot be sent as JSON: {describe(exc)}", code=2) from exc
        obj = await self.write(api.WriteRequest(operation=operation, object=raw, namespace=namespace))
        assert obj is not None
        return obj


def format_error(error: api.ApiError) -> str:
    lines = [f"Error from server ({error.code}): {error.message}"]
    for cause in error.causes or []:
        if cause.field and cause.field not in error.message:
            lines.append(f"  {cause.field}: {cause.message} [{cause.rule}]")
    return "\n".join(lines)


@contextlib.asynccontextmanager
async def connect(url: str) -> AsyncIterator[Tephra]:
    """Fail fast with a clear message when nothing listens at `url`."""
    async def quiet(_: Exception) -> None:
        """nats-py prints a traceback per failed attempt by default; vcctl says it once, plainly."""

    try:
        nc = await nats.connect(
            servers=[url], name="vcctl", connect_timeout=3, max_reconnect_attempts=1, allow_reconnect=False, error_cb=quiet
        )
    except (OSError, nats.errors.NoServersError, TimeoutError) as exc:
        raise CliError(f"cannot reach Tephra at {url}: is it running? (`vcctl up` or `make run`; or set --server/VC_SERVER)") from exc
    try:
        await NatsStore(nc).ensure()
        yield Tephra(nc)
    finally:
        with contextlib.suppress(Exception):
            await nc.drain()
