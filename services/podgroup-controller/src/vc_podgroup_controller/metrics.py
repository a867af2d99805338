"""Counters of the podgroup controller's work."""

from __future__ import annotations

from prometheus_client import Counter

CREATED = Counter("tephra_podgroup_controller_podgroups_created_total", "PodGroups created for plain pods")
ANNOTATED = Counter("tephra_podgroup_controller_pods_annotated_total", "Pods annotated with their group name")
