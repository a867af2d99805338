"""SHELL: admission makes the JetStream consumers tenants read through (vc_security.consumer_requests).

A request on `vc.rpc.admission.consumers.<identity>` is answered with `{"name": ..., "pending": N}`
(the consumer, and the messages it has to deliver) or `{"error": {"code": ..., "message": ...}}`:
400 for a malformed request (the field and the rule named), 403 for a stream or filter the identity
may not read or an identity admission does not know, else JetStream's own code and description.
"""

from __future__ import annotations

import secrets
from typing import Any, Final

import msgspec
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg

from vc_admission.callers import Callers
from vc_proto import subjects
from vc_security.consumer_requests import ConsumerForbidden, ConsumerRefused, decode_request, grant_consumer
from vc_security.identities import Grant, admin_grant, tenant_grant

log = structlog.get_logger(__name__)
CREATE_TIMEOUT_S: Final = 5.0


async def serve_consumer_request(nc: Client, callers: Callers, msg: Msg) -> None:
    if not msg.reply:
        return
    try:
        answer = await _answer(nc, callers, msg)
    except Exception as exc:  # handler boundary: the asker gets an answer, the service lives on
        log.error("consumers.request_failed", subject=msg.subject, exc_info=exc)
        answer = _error(500, f"admission failed on this request: {type(exc).__name__}")
    try:
        await msg.respond(msgspec.json.encode(answer))
    except Exception as exc:  # the asker is gone or the connection dropped: its retry asks again
        log.warning("consumers.reply_failed", error=repr(exc))


async def _answer(nc: Client, callers: Callers, msg: Msg) -> dict[str, Any]:
    identity = subjects.consumer_asker_of(msg.subject)
    grant = _grant_of(callers, identity) if identity else None
    if identity is None or grant is None:
        return _error(403, f"identity {identity!r} is not one admission knows")
    try:
        granted = grant_consumer(identity, grant, decode_request(msg.data))
    except ConsumerForbidden as exc:
        return _error(403, str(exc))
    except ConsumerRefused as exc:
        return _error(400, str(exc))
    name = secrets.token_hex(11)
    config = granted.config | {"name": name}
    body = msgspec.json.encode({"stream_name": granted.stream, "config": config})
    # The filter in the subject as well: the server refuses a body whose filter differs from it.
    create = f"$JS.API.CONSUMER.CREATE.{granted.stream}.{name}.{config['filter_subject']}"
    reply = msgspec.json.decode((await nc.request(create, body, timeout=CREATE_TIMEOUT_S)).data)
    if error := reply.get("error"):
        return _error(int(error.get("code", 500)), str(error.get("description", "")), err_code=error.get("err_code"))
    log.info("consumers.created", identity=identity, stream=granted.stream, filter=config["filter_subject"])
    return {"name": name, "pending": int(reply.get("num_pending") or 0)}


def _grant_of(callers: Callers, identity: str) -> Grant | None:
    person = callers.lookup(identity)
    if person is None:
        return None
    return tenant_grant(identity, person.namespaces) if person.role == "tenant" else admin_grant()


def _error(code: int, message: str, *, err_code: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if isinstance(err_code, int):
        error["err_code"] = err_code
    return {"error": error}
