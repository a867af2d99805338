"""Helpers several subcommands share: parsing `k=v,...` resource lists, building Commands."""

from __future__ import annotations

from vc_cli.errors import CliError
from vc_core.errors import InvalidObject
from vc_core.quantity import parse_quantity
from vc_proto.bus import BUS_V1ALPHA1
from vc_proto.meta import OwnerReference


def parse_resource_list(text: str | None, *, flag: str) -> dict[str, str] | None:
    """`cpu=4,memory=8Gi,nvidia.com/gpu=2` -> a ResourceList, each quantity checked."""
    if not text:
        return None
    out: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise CliError(f"{flag}: {part!r} is not NAME=QUANTITY (e.g. cpu=4,memory=8Gi)", code=2)
        try:
            parse_quantity(value.strip(), field=f"{flag} {name.strip()}")
        except InvalidObject as exc:
            raise CliError(f"{flag}: {exc.message}", code=2) from exc
        out[name.strip()] = value.strip()
    return out


def command_document(*, action: str, namespace: str | None, target: OwnerReference) -> dict[str, object]:
    """A bus.volcano.sh Command as vcctl creates it: generateName `<target>-<action>-`, owner = target."""
    metadata: dict[str, object] = {
        "generateName": f"{target.name}-{action.lower()}-",
        "ownerReferences": [
            {
                "apiVersion": target.api_version,
                "kind": target.kind,
                "name": target.name,
                "uid": target.uid,
                "controller": True,
            }
        ],
    }
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": BUS_V1ALPHA1,
        "kind": "Command",
        "metadata": metadata,
        "action": action,
        "target": {"apiVersion": target.api_version, "kind": target.kind, "name": target.name, "uid": target.uid},
    }
