"""A tenant's consumers, made by admission: the same reader as `pull.PullConsumer`, fed by a push consumer.

A tenant may not create consumers (vc_security.identities: nats-server would not check where they
deliver). `use_admission_consumers(nc, identity)` makes every consumer a reader on `nc` opens
(`pull.consumer_for`: KV watches and listings, the history) ask admission for one instead, on
`vc.rpc.admission.consumers.<identity>`. Admission makes a push consumer within the identity's
namespaces that delivers to an inbox of its own this reader subscribed to first
(vc_security.consumer_requests). Its deliveries and heartbeats carry what a pull consumer's do, so
the reader's checks (a gap in the sequence, a heartbeat counting more than arrived, silence, a
reconnect) are the same, and any of them ends the consumer for the caller to open another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

import msgspec
from nats.aio.client import Client
from nats.js import api
from nats.js.errors import APIError, BadRequestError

from vc_bus.pull import BATCH, PullConsumer, check_filter, register_opener
from vc_proto import subjects

REQUEST_TIMEOUT_S: Final = 10.0
_UNBOUNDED: Final = 1 << 62  # a push consumer never stops delivering: there is no request to renew


class _Reply(msgspec.Struct):
    name: str = ""
    pending: int = 0
    error: dict[str, object] | None = None


class AdmissionConsumer(PullConsumer):
    """A consumer with `config`'s filter and start on `stream`, made by admission for `identity`."""

    def __init__(
        self,
        nc: Client,
        identity: str,
        stream: str,
        config: api.ConsumerConfig,
        *,
        batch: int = BATCH,
        on_forbidden: Callable[[Exception], None] | None = None,
    ) -> None:
        super().__init__(nc, stream, config, batch=batch)
        self._identity = identity
        self._on_forbidden = on_forbidden

    async def open(self) -> int:
        check_filter(self._config)  # a filter no subject can carry is refused here, as for a consumer of one's own
        await self._listen()  # before the consumer exists, so that no delivery finds nobody
        request = {
            "stream": self._stream,
            "filter_subject": self._config.filter_subject or "",
            "deliver_inbox": self._inbox,
            "start_sequence": int(self._config.opt_start_seq or 0)
            if self._config.deliver_policy == api.DeliverPolicy.BY_START_SEQUENCE
            else 0,
        }
        msg = await self._nc.request(
            subjects.admission_consumers_subject(self._identity),
            msgspec.json.encode(request),
            timeout=REQUEST_TIMEOUT_S,
        )
        reply = msgspec.json.decode(msg.data, type=_Reply)
        if reply.error is not None:
            refusal = _refusal(reply.error)
            if refusal.code == 403 and self._on_forbidden is not None:
                # Said as the server says a refused consumer of the tenant's own: the same report follows.
                filter_subject = request["filter_subject"]
                self._on_forbidden(
                    PermissionError(
                        f'nats: permissions violation for publish to "$JS.API.CONSUMER.CREATE.'
                        f'{self._stream}.admission.{filter_subject}" ({refusal.description})'
                    )
                )
            raise refusal
        self._name = reply.name
        await self._send_request()
        return reply.pending

    async def _send_request(self) -> None:
        self._owed = _UNBOUNDED  # always "out": silence beyond the heartbeats means the consumer is gone
        self._heard_at = asyncio.get_running_loop().time()

    async def _delete(self) -> None:
        """Nothing to ask: it may not delete consumers, and this one goes once nobody listens (closed)."""


def _refusal(error: dict[str, object]) -> APIError:
    code = error.get("code")
    err_code = error.get("err_code")
    description = str(error.get("message", ""))
    status = code if isinstance(code, int) else 500
    kind = BadRequestError if status == 400 else APIError
    return kind(code=status, err_code=err_code if isinstance(err_code, int) else None, description=description)


def use_admission_consumers(
    nc: Client, identity: str, *, on_forbidden: Callable[[Exception], None] | None = None
) -> None:
    """Every consumer a reader opens on `nc` from now on is made by admission for `identity`;
    `on_forbidden` hears of a request for what the identity may not read (which no retry changes)."""

    def opener(nc: Client, stream: str, config: api.ConsumerConfig, batch: int) -> PullConsumer:
        return AdmissionConsumer(nc, identity, stream, config, batch=batch, on_forbidden=on_forbidden)

    register_opener(nc, opener)
