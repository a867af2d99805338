"""Job `volumes` (Volcano `validateIO`): a mount path, unique, and exactly one of claim or claim name."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import msgspec

from vc_proto.batch import VolumeSpec
from vc_proto.core import PersistentVolumeClaimSpec
from vc_validation.limits import MAX_VOLUMES
from vc_validation.names import dns1123_subdomain_errors, format_errors
from vc_validation.verdict import Violation

CONFLICT_MESSAGE = (
    "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
    "If you want to create a new PVC, you do not need to specify VolumeClaimName"
)


def validate_volumes(volumes: Sequence[VolumeSpec] | None) -> Iterator[Violation]:
    if not volumes:
        return
    if len(volumes) > MAX_VOLUMES:
        yield Violation("spec.volumes", "volumes-count", f"may not have more than {MAX_VOLUMES} volumes")
        return
    seen: set[str] = set()
    for index, volume in enumerate(volumes):
        yield from _validate_one(volume, f"spec.volumes[{index}]", seen)


def _validate_one(volume: VolumeSpec, path: str, seen: set[str]) -> Iterator[Violation]:
    mount = volume.mount_path or ""
    if not mount:
        yield Violation(f"{path}.mountPath", "volume-mount-path", "mountPath is required")
    elif ":" in mount:
        yield Violation(f"{path}.mountPath", "volume-mount-path", "mountPath must not contain ':'")
    elif mount in seen:
        yield Violation(f"{path}.mountPath", "volume-duplicate-mount-path", f"duplicated mountPath: {mount[:256]}")
    seen.add(mount)
    claim_name = volume.volume_claim_name or ""
    if volume.volume_claim is None and not claim_name:
        yield Violation(path, "volume-claim", "either VolumeClaim or VolumeClaimName must be specified")
    elif volume.volume_claim is not None and claim_name:
        yield Violation(path, "volume-claim", CONFLICT_MESSAGE)
    elif volume.volume_claim is not None and (error := _claim_spec_error(volume.volume_claim)):
        yield Violation(f"{path}.volumeClaim", "volume-claim-spec", f"not a PersistentVolumeClaimSpec: {error}")
    elif claim_name and (errors := dns1123_subdomain_errors(claim_name)):
        yield Violation(
            f"{path}.volumeClaimName",
            "volume-claim-name",
            f"invalid VolumeClaimName {claim_name[:256]} : {format_errors(errors)}",
        )


def _claim_spec_error(raw: dict[str, object]) -> str:
    """Why `volumeClaim` is no PersistentVolumeClaimSpec the job controller could create, or ""."""
    try:
        msgspec.convert(raw, PersistentVolumeClaimSpec, strict=False)
    except msgspec.ValidationError as exc:
        return str(exc)[:256]
    return ""
