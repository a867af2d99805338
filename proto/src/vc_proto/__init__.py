"""Tephra wire contract: Kubernetes/Volcano API types, events, subjects."""
