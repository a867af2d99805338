"""Open a JetStream key-value bucket, creating it the first time: the one way every service does it.

Several instances start at once, so two may both find the bucket missing and both create it. JetStream
answers the second creation with the existing bucket when the settings are equal, and with an error when
they differ (then the bucket that won is opened, as the first instance made it).

Buckets allow direct gets (`$JS.API.DIRECT.GET.<stream>.<key subject>`): the key is in the subject, so
the server's permissions can hold a reader to some keys (a tenant to its namespaces). A direct get may
be answered by any replica, a moment behind the leader, so only readers that ask for it use them
(vcctl); the services read through the leader (`STREAM.MSG.GET`), as before.
"""

from __future__ import annotations

from nats.js import JetStreamContext, api
from nats.js.errors import BadRequestError, NotFoundError
from nats.js.kv import KeyValue


async def open_bucket(
    js: JetStreamContext,
    name: str,
    *,
    replicas: int = 1,
    ttl_s: float | None = None,
    history: int = 1,
    direct_gets: bool = False,
) -> KeyValue:
    """The bucket `name`, made on file storage with these settings when it does not exist yet; its gets
    are direct when `direct_gets` and the bucket allows them (one made before it did does not)."""
    stream = f"KV_{name}"
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        try:
            await js.create_key_value(
                bucket=name, history=history, storage=api.StorageType.FILE, replicas=replicas, ttl=ttl_s, direct=True
            )
        except BadRequestError:  # another instance created it in between, with other settings: theirs stands
            pass
        info = await js.stream_info(stream)
    direct = direct_gets and bool(info.config.allow_direct)
    return KeyValue(name=name, stream=stream, pre=f"$KV.{name}.", js=js, direct=direct)
