"""An event as a CloudEvent (CloudEvents 1.0, JSON structured mode), for platforms that route CloudEvents.
Pure.

    specversion  "1.0"
    id           the event's id (the same fact published twice has the same id)
    source       "tephra/<service>" (the service that published it)
    type         "dev.tephra.<kind>.<Reason>", e.g. "dev.tephra.pod.PodExited"
    subject      "<namespace>/<kind>/<name>" ("<kind>/<name>" for a Queue or Node)
    time         when it happened (RFC 3339)
    tephracursor the cursor to resume after it (an extension attribute)
    data         the event itself, as docs/events.md lists its fields
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from vc_cli.sdk.cursor import Cursor
from vc_proto.events import DomainEvent

SPEC_VERSION: Final = "1.0"
TYPE_PREFIX: Final = "dev.tephra"


def to_cloudevent(event: DomainEvent, cursor: Cursor) -> dict[str, Any]:
    subject = f"{event.kind}/{event.name}"
    return {
        "specversion": SPEC_VERSION,
        "id": event.id,
        "source": f"tephra/{event.source}",
        "type": f"{TYPE_PREFIX}.{event.kind.lower()}.{event.reason}",
        "subject": f"{event.namespace}/{subject}" if event.namespace else subject,
        "time": event.occurred_at,
        "datacontenttype": "application/json",
        "tephracursor": str(cursor),
        "data": msgspec.to_builtins(event),
    }
