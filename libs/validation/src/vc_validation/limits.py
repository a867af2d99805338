"""Every bound on user input, in one place.

Volcano's admission CVEs were all unbounded input (huge replica counts, task lists, plugin arguments).
Each number here caps the work any service does for one object, so no submission can make a service
spin or run out of memory. Sizes are checked on the raw bytes before anything is parsed.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

from vc_validation.verdict import Verdict, deny

# The Kubernetes API server's own request limit is 3 MiB; we refuse anything larger before decoding.
MAX_REQUEST_BYTES: Final = 3 * 1024 * 1024

# Job shape.
MAX_TASKS: Final = 128
MAX_REPLICAS_PER_TASK: Final = 10_000
MAX_TOTAL_REPLICAS: Final = 100_000
MAX_POLICIES: Final = 64
MAX_EVENTS_PER_POLICY: Final = 16
MAX_PLUGINS: Final = 16
MAX_PLUGIN_ARGS: Final = 32
MAX_PLUGIN_ARG_LENGTH: Final = 1024
MAX_VOLUMES: Final = 64
MAX_CONTAINERS: Final = 64
MAX_RESOURCE_NAMES: Final = 32
MAX_MAX_RETRY: Final = 1_000

# Names: those that become parts of pod names or label values are DNS-1123 labels (63); the rest
# are DNS-1123 subdomains (253).
MAX_LABEL_NAME_LENGTH: Final = 63
MAX_SUBDOMAIN_LENGTH: Final = 253

# Metadata, as the API server bounds them (TotalAnnotationSizeLimitB is 256 KiB).
MAX_ANNOTATIONS_BYTES: Final = 256 * 1024
MAX_LABELS: Final = 64
MAX_LABEL_VALUE_LENGTH: Final = 63
MAX_LABEL_KEY_LENGTH: Final = 253 + 1 + 63

# Label selectors (a PodDisruptionBudget's pods, a HyperNode's nodes): each term is matched against
# every pod or node they are checked on.
MAX_SELECTOR_TERMS: Final = 32
MAX_SELECTOR_TERM_VALUES: Final = 64

# Queues.
MAX_QUEUE_DEPTH: Final = 5  # Volcano's --max-queue-depth default
MAX_ALLOWED_NAMESPACES: Final = 256
MAX_QUEUE_WEIGHT: Final = 65_535

# Kubernetes int32 fields.
INT32_MAX: Final = 2**31 - 1

# Quantities: Kubernetes computes with int64 milli-units (Quantity.MilliValue), so anything larger
# overflows there; ours would be accepted and then wrap nothing but sense (cpu `1e29`).
MAX_QUANTITY: Final = Fraction(2**63 - 1, 1000)


def check_request_size(size: int) -> Verdict | None:
    """Deny a request body over MAX_REQUEST_BYTES; call with len(body) before decoding it."""
    if size <= MAX_REQUEST_BYTES:
        return None
    return deny(
        "request",
        "request-size",
        f"request body of {size} bytes exceeds the limit of {MAX_REQUEST_BYTES} bytes",
    )
