"""The soak's judgement on hand-made samples (pure)."""

from __future__ import annotations

from tests.soak.verdict import FD_SLACK, TASK_SLACK, WINDOW, Sample, judge, table


def series(rss: list[float], *, fds: int = 20, tasks: list[int] | None = None) -> list[Sample]:
    tasks = tasks or [30] * len(rss)
    return [Sample(at_s=10.0 * i, rss_mib=r, fds=fds, tasks=t) for i, (r, t) in enumerate(zip(rss, tasks, strict=True))]


def test_a_level_process_passes_and_warm_up_is_not_judged() -> None:
    samples = series([20, 40, 60] + [100.0, 101, 99, 100, 102] * 4)  # grows only during the first 30 s
    growth = judge("gc", samples, warmup_s=30)
    assert growth.problems == () and growth.rss_first_mib == 100 and growth.rss_peak_mib == 102
    assert "| gc | 100.0 | 100.0 | +0.0 | 102.0 | 20 -> 20 | 30 -> 30 | ok |" in table([growth])


def test_steady_rss_growth_beyond_the_bound_is_a_problem() -> None:
    samples = series([100.0 + 1.5 * i for i in range(20)])  # 1.5 MiB per sample: ~22 MiB over the run
    (problem,) = judge("scheduler", samples, warmup_s=0).problems
    assert problem == "RSS grew 22.5 MiB (from 103.0; at most 10.3)"


def test_one_spike_does_not_decide_but_the_bound_scales_with_the_process() -> None:
    spike = series([100.0] * 19 + [180.0])
    assert judge("admission", spike, warmup_s=0).problems == ()  # the median of the last window
    big = series([400.0] * 10 + [435.0] * 10)
    assert judge("nats-server", big, warmup_s=0).problems == ()  # 35 MiB < 10% of 400
    assert judge("nats-server", series([40.0] * 10 + [90.0] * 10), warmup_s=0, rss_slack_mib=64).problems == ()


def test_leaked_tasks_and_files_are_problems() -> None:
    tasks = [30 + 3 * i for i in range(20)]
    grown = series([100.0] * 20, tasks=tasks)
    assert any("asyncio tasks grew" in p for p in judge("job-controller", grown, warmup_s=0).problems)
    files = [Sample(10.0 * i, 100.0, 20 + i, 30) for i in range(20)]
    assert any("open files grew" in p for p in judge("node-sim", files, warmup_s=0).problems)
    level = series([100.0] * 20, tasks=[30 + TASK_SLACK] * 10 + [30] * 10)
    assert judge("gc", level, warmup_s=0).problems == ()
    assert FD_SLACK > 0


def test_too_few_samples_after_warm_up_is_said() -> None:
    (problem,) = judge("gc", series([100.0] * (2 * WINDOW)), warmup_s=1000).problems
    assert problem == "only 0 samples after warm-up"
