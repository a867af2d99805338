"""Open a JetStream key-value bucket, creating it the first time: the one way every service does it.

Several instances start at once, so two may both find the bucket missing and both create it. JetStream
answers the second creation with the existing bucket when the settings are equal, and with an error when
they differ (then the bucket that won is opened, as the first instance made it)."""

from __future__ import annotations

from nats.js import JetStreamContext, api
from nats.js.errors import BadRequestError, BucketNotFoundError
from nats.js.kv import KeyValue


async def open_bucket(
    js: JetStreamContext, name: str, *, replicas: int = 1, ttl_s: float | None = None, history: int = 1
) -> KeyValue:
    """The bucket `name`, made on file storage with these settings when it does not exist yet."""
    try:
        return await js.key_value(name)
    except BucketNotFoundError:
        pass
    try:
        return await js.create_key_value(
            bucket=name, history=history, storage=api.StorageType.FILE, replicas=replicas, ttl=ttl_s
        )
    except BadRequestError:  # another instance created it in between, with other settings: theirs stands
        return await js.key_value(name)
