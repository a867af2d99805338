"""The scheduler scale-out benchmark's arithmetic (benchmarks/scheduler_scaleout.py): from what one run
of k instances measured, its rate, CPU per pod and CPU per cycle, and the ratios of k = 2 and k = 4 to
k = 1 on the summary line. Pure: the measuring is the benchmark's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# The summary line's fields, in this order; a field whose k was not run, did not bind every pod or has
# no figure to divide by is left out.
SUMMARY_FIELDS = ("k2_rate", "k2_cpu", "k4_rate", "k4_cpu", "k4_cycle")


@dataclass(frozen=True, slots=True)
class RunFigures:
    """What one run of `instances` schedulers measured: `bound` of `pods` bound after `seconds`; each
    instance's CPU seconds over the run (from its start), its cycle count and the milliseconds its
    sessions took to open (from its /metrics)."""

    instances: int
    pods: int
    bound: int
    seconds: float
    cpu_s: Mapping[str, float]
    cycles: Mapping[str, float]
    opening_ms: Mapping[str, float] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.bound >= self.pods

    @property
    def pods_per_s(self) -> float:
        return self.bound / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_ms_per_pod(self) -> float:
        """Every scheduler's CPU together, per pod bound."""
        return 1000 * sum(self.cpu_s.values()) / max(1, self.bound)

    def cycle_cpu_ms(self) -> dict[str, float | None]:
        """Each instance's CPU per cycle in ms (None: it ran no cycle)."""
        return {
            name: (1000 * cpu / self.cycles[name] if self.cycles.get(name) else None)
            for name, cpu in self.cpu_s.items()
        }

    @property
    def mean_cycle_cpu_ms(self) -> float | None:
        """One instance's mean CPU per cycle: all instances' CPU over all their cycles (each cycle weighs
        the same, so an instance that ran few cycles does not skew it); None without any cycle."""
        cycles = sum(self.cycles.get(name, 0.0) for name in self.cpu_s)
        return 1000 * sum(self.cpu_s.values()) / cycles if cycles else None

    @property
    def mean_opening_ms(self) -> float | None:
        """One instance's mean session opening (wall time): the part of a cycle that depends on its share
        of the cluster, not on the binds it decides; None without any cycle."""
        cycles = sum(self.cycles.get(name, 0.0) for name in self.opening_ms)
        return sum(self.opening_ms.values()) / cycles if cycles else None


def together(runs: Sequence[RunFigures]) -> RunFigures:
    """Several runs of one k as one: their pods, time, CPU and cycles added up, so the rate is every pod
    over every second and the CPU per pod and per cycle are weighed by what each run did. A k measured
    before and after the others (k = 1 first and last) so gives a reference that drifts with the
    machine as the runs between did."""
    first = runs[0]
    cpu: dict[str, float] = {}
    cycles: dict[str, float] = {}
    opening: dict[str, float] = {}
    for run in runs:
        for name, seconds in run.cpu_s.items():
            cpu[name] = cpu.get(name, 0.0) + seconds
        for name, count in run.cycles.items():
            cycles[name] = cycles.get(name, 0.0) + count
        for name, ms in run.opening_ms.items():
            opening[name] = opening.get(name, 0.0) + ms
    return RunFigures(
        instances=first.instances,
        pods=sum(run.pods for run in runs),
        bound=sum(run.bound for run in runs),
        seconds=sum(run.seconds for run in runs),
        cpu_s=cpu,
        cycles=cycles,
        opening_ms=opening,
    )


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def scaleout_ratios(runs: Mapping[int, RunFigures]) -> dict[str, float]:
    """`k2_rate`, `k2_cpu`, `k4_rate`, `k4_cpu`, `k4_cycle` (those that can be had), each k's figure over
    k = 1's in the same run: pods/s, the schedulers' summed CPU per pod, one instance's CPU per cycle.
    Only runs that bound every pod count."""
    base = runs.get(1)
    if base is None or not base.complete:
        return {}
    out: dict[str, float] = {}
    for k in (2, 4):
        run = runs.get(k)
        if run is None or not run.complete:
            continue
        figures = {
            "rate": ratio(run.pods_per_s, base.pods_per_s),
            "cpu": ratio(run.cpu_ms_per_pod, base.cpu_ms_per_pod),
            "cycle": ratio(run.mean_cycle_cpu_ms, base.mean_cycle_cpu_ms) if k == 4 else None,
        }
        out |= {f"k{k}_{name}": value for name, value in figures.items() if value is not None}
    return out


def openings_line(runs: Mapping[int, RunFigures]) -> str:
    """`opening per cycle: k=1 .. ms, k=2 .. ms (0.xx of k = 1), ...`: how a session's opening, the part
    of a cycle that follows the share's size, scales with the instances (the summary's k4_cycle counts
    whole cycles, and a cycle's binds are bounded alike for every k)."""
    base = runs[1].mean_opening_ms if 1 in runs else None
    parts = []
    for k, run in sorted(runs.items()):
        mean = run.mean_opening_ms
        if mean is None:
            continue
        share = ratio(mean, base) if k != 1 else None
        parts.append(f"k={k} {mean:,.0f} ms" + (f" ({share:.2f} of k = 1)" if share is not None else ""))
    return "opening per cycle: " + (", ".join(parts) if parts else "no cycle")


def fixed_part(runs: Mapping[int, RunFigures]) -> tuple[float, float] | None:
    """(F, W) in CPU seconds for the k = 4 run's pods: the schedulers' summed CPU fitted as k times a
    part F that every instance pays whatever its share (start-up, following the cluster) plus W, the
    placing, which the instances divide. From the CPU per pod of k = 1 and k = 4 (c1 = F + W and
    c4 = 4F + W, per pod); None without both runs complete."""
    base, four = runs.get(1), runs.get(4)
    if base is None or four is None or not (base.complete and four.complete):
        return None
    per_pod = (four.cpu_ms_per_pod - base.cpu_ms_per_pod) / 3
    return per_pod * four.pods / 1000, (base.cpu_ms_per_pod - per_pod) * four.pods / 1000


def fixed_part_line(runs: Mapping[int, RunFigures]) -> str:
    """`fixed part per instance: F = .. s of CPU, placing W = .. s; k4_cpu <= 1.25 needs F <= W / 11 =
    .. s`: k4_cpu = (4F + W) / (F + W), so the target holds when F <= W / 11. Where scale-out stands,
    in the part that more instances repeat."""
    fitted = fixed_part(runs)
    if fitted is None:
        return "fixed part per instance: needs complete runs of k = 1 and k = 4"
    fixed, placing = fitted
    return (
        f"fixed part per instance: F = {fixed:.1f} s of CPU, placing W = {placing:.1f} s; "
        f"k4_cpu <= 1.25 needs F <= W / 11 = {placing / 11:.1f} s"
    )


def summary_line(runs: Mapping[int, RunFigures]) -> str:
    """The benchmark's last line: `scaleout k2_rate=.. k2_cpu=.. k4_rate=.. k4_cpu=.. k4_cycle=..`, two
    decimals, the fields of k not run (or not complete) left out."""
    ratios = scaleout_ratios(runs)
    return " ".join(["scaleout", *(f"{name}={ratios[name]:.2f}" for name in SUMMARY_FIELDS if name in ratios)])


def per_pod(count: float, pods: int) -> float:
    return count / max(1, pods)
