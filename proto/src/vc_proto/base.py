"""The base of every wire type: frozen, keyword-only, camelCase keys, absent fields stay absent.

Every optional field defaults to None (never to `[]` or `0`) so that a user's object encodes back to
exactly what they wrote: `omit_defaults` drops only what was absent, and an explicit `[]` or `0` stays.
"""

from __future__ import annotations

from typing import Any

import msgspec

# Free-form JSON for the parts of Kubernetes objects that Tephra passes through without interpreting
# (probes, security contexts, volume sources...). Kept verbatim, so nothing a user writes is lost.
Raw = dict[str, Any]
# A Kubernetes ResourceList: resource name -> quantity text (or a bare number, as YAML allows).
ResourceList = dict[str, str | int | float]
# IntOrString fields such as a Service targetPort.
IntOrString = int | str


class Wire(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel"):
    """Base for nested wire types."""
