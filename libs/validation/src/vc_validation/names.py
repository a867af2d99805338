"""Kubernetes name formats (apimachinery `validation.IsDNS1123Label` and friends) and metadata bounds."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Final

from vc_proto.meta import ObjectMeta
from vc_validation.limits import (
    MAX_ANNOTATIONS_BYTES,
    MAX_LABEL_KEY_LENGTH,
    MAX_LABEL_NAME_LENGTH,
    MAX_LABEL_VALUE_LENGTH,
    MAX_LABELS,
    MAX_SUBDOMAIN_LENGTH,
)
from vc_validation.verdict import Violation

_DNS1123_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

LABEL_MESSAGE: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
SUBDOMAIN_MESSAGE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
QUALIFIED_MESSAGE: Final = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def dns1123_label_errors(value: str) -> list[str]:
    """Messages (empty when valid), worded as apimachinery words them."""
    errors = []
    if len(value) > MAX_LABEL_NAME_LENGTH:
        errors.append(f"must be no more than {MAX_LABEL_NAME_LENGTH} characters")
    if not _DNS1123_LABEL.match(value):
        errors.append(LABEL_MESSAGE)
    return errors


def dns1123_subdomain_errors(value: str, *, max_length: int = MAX_SUBDOMAIN_LENGTH) -> list[str]:
    errors = []
    if len(value) > max_length:
        errors.append(f"must be no more than {max_length} characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errors.append(SUBDOMAIN_MESSAGE)
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """`IsQualifiedName` without a prefix: what Volcano checks for pod and job names."""
    errors = []
    if len(value) > MAX_LABEL_NAME_LENGTH:
        errors.append(f"name part must be no more than {MAX_LABEL_NAME_LENGTH} characters")
    if not _QUALIFIED_NAME.match(value):
        errors.append(QUALIFIED_MESSAGE)
    return errors


def format_errors(errors: list[str]) -> str:
    """Go's `%v` of a []string, so messages read like Volcano's (`[a b]`)."""
    return "[" + " ".join(errors) + "]"


def validate_metadata_bounds(meta: ObjectMeta | None, *, path: str = "metadata") -> Iterator[Violation]:
    """Label count and sizes, total annotation size: the API server's own limits."""
    if meta is None:
        return
    yield from label_violations(meta.labels or {}, f"{path}.labels")
    size = sum(len(k) + len(v) for k, v in (meta.annotations or {}).items())
    if size > MAX_ANNOTATIONS_BYTES:
        yield Violation(
            f"{path}.annotations",
            "annotations-size",
            f"may not have more than {MAX_ANNOTATIONS_BYTES} bytes in total, got {size}",
        )


def label_violations(labels: Mapping[str, str], path: str) -> Iterator[Violation]:
    if len(labels) > MAX_LABELS:
        yield Violation(path, "labels-count", f"may not have more than {MAX_LABELS} labels, got {len(labels)}")
        return
    for key, value in labels.items():
        if len(key) > MAX_LABEL_KEY_LENGTH:
            yield Violation(
                f"{path}[{key[:64]}]", "label-key", f"must be no more than {MAX_LABEL_KEY_LENGTH} characters"
            )
        if len(value) > MAX_LABEL_VALUE_LENGTH or not _LABEL_VALUE.match(value):
            yield Violation(
                f"{path}[{key[:64]}]",
                "label-value",
                f"a valid label value must be {MAX_LABEL_VALUE_LENGTH} characters or less and consist of "
                "alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character",
            )
