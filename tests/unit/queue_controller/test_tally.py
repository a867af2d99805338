"""The incremental tally equals the full recomputation (count_phases, inqueue_resources) after any
sequence of PodGroup arrivals, changes and departures, down to quantities finer than nano-units."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.queue_controller.queue_builders import podgroup
from vc_bus.testing import MemoryStore
from vc_proto.scheduling import PodGroup
from vc_queue_controller.caches import QueueCaches
from vc_queue_controller.logic.status import count_phases, inqueue_resources, queue_of
from vc_queue_controller.logic.tally import QueueTally

QUANTITIES = ["1", "250m", "0", "1Gi", "1.5", "2e3", "1e-12", "0.0000000004", "-1", "3n", "not-a-quantity", "7"]
PHASES = [None, "Pending", "Inqueue", "Running", "Unknown", "Completed", "Inqueue"]
RESOURCES = ["cpu", "memory", "nvidia.com/gpu"]

min_resources = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(RESOURCES), st.sampled_from(QUANTITIES), max_size=3)
)
versions = st.builds(
    lambda name, phase, queue, res: podgroup(name, phase, queue=queue, min_resources=res),
    st.sampled_from([f"pg{i}" for i in range(6)]),
    st.sampled_from(PHASES),
    st.sampled_from(["q", "other", None]),
    min_resources,
)


def test_the_tally_of_a_list_is_the_full_recomputation() -> None:
    pgs = [
        podgroup("a", "Inqueue", min_resources={"cpu": "1", "memory": "1Gi"}),
        podgroup("b", "Inqueue", min_resources={"cpu": "1500m", "nvidia.com/gpu": "1"}),
        podgroup("c", "Running", min_resources={"cpu": "9"}),
        podgroup("d", "Inqueue", min_resources={"cpu": "1e-12"}),
        podgroup("e", None),
    ]
    tally = QueueTally.of(pgs)
    assert tally.inqueue() == inqueue_resources(pgs)
    assert tally.inqueue()["cpu"] == Fraction(5, 2) + Fraction(1, 10**12)
    assert tally.counts() == count_phases(pgs) and tally.members == 5


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(versions, st.booleans()), max_size=40))
def test_incremental_add_and_remove_match_the_full_recomputation(steps: list[tuple[PodGroup, bool]]) -> None:
    """Through QueueCaches' change handler (old and new versions, as the informer reports them)."""
    caches = QueueCaches(MemoryStore(), submit_queue=lambda _: None, submit_command=lambda _: None)
    current: dict[str, PodGroup] = {}
    for version, delete in steps:
        name = version.metadata.name or ""
        old = current.get(name)
        if delete:
            if old is None:
                continue
            del current[name]
            caches._podgroup_changed(old, None)
        else:
            current[name] = version
            caches._podgroup_changed(old, version)
        for queue in ("q", "other", "default"):
            members = [pg for pg in current.values() if queue_of(pg) == queue]
            tally = caches.tally(queue)
            assert tally.counts() == count_phases(members)
            assert tally.inqueue() == inqueue_resources(members)
            assert tally.members == len(members)
