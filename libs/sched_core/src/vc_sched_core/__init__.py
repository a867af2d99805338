"""Tephra's scheduling core: Volcano sessions, actions and plugins over an immutable snapshot.

PURE: no event loop, no transport, no clock of its own (tests/unit/test_architecture.py). The scheduler
service (vc_scheduler) runs it on the live cache; `vcctl sim cycle` runs it on a snapshot file.
"""
