"""`vcctl sim cycle`: run the scheduler core on a snapshot file, print the decisions as JSON."""

from __future__ import annotations

from vc_sched_core.sim.cycle_cmd import main, simulate

__all__ = ["main", "simulate"]
