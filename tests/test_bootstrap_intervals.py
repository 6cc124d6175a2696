"""Every interval lvu prints agrees with an independent, plain numpy bootstrap on the same seed.

The reference here is the textbook one: draw `n_boot` rows of `n` indices with
`np.random.default_rng(seed).integers(0, n, (n_boot, n))`, take each row's mean (a label cell:
the mean over the row's positions that carry the label; A/B: the difference of the two runs' means
on the *same* rows) and the 2.5 / 97.5 percentiles. A resample holds repeated samples; each
repeat must count (the haystack / jsonl tables once collapsed them, so intervals were too narrow).
"""

from __future__ import annotations

import math
import numpy as np
import pytest

from analysis_runs import result
from lvu.analysis import analyses, sweeps
from lvu.analysis.compare import compare_runs, run_values
from lvu.analysis.report import build_report
from lvu.analysis.runs import RunData
from lvu.analysis.stats import bootstrap_tables, format_p, paired_bootstrap_tables
from lvu.benchmarks import load_all
from lvu.benchmarks.base import BENCHMARKS
from lvu.runs.store import RunInfo
from lvu.types import RunSpec, SampleResult

load_all()  # every benchmark registered, for the parametrised aggregate test
B, SEED = 400, 3
DEPTHS = ("0-20%", "20-40%", "40-60%", "60-80%", "80-100%")


# ---- the independent reference ----------------------------------------------------------------------


def _rows(n: int, n_boot: int = B, seed: int = SEED) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _interval(draws: np.ndarray) -> tuple[float, float]:
    draws = draws[~np.isnan(draws)]
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def _cell_draws(scores: np.ndarray, mask: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per resample row: mean score (%) over the row's positions in the cell (NaN: none there)."""
    hits, right = mask[rows].sum(axis=1), (scores * mask)[rows].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(hits > 0, 100.0 * right / hits, np.nan)


def plain_ci(scores, mask=None) -> tuple[float, float]:
    scores = np.asarray(scores, dtype=float)
    mask = np.ones_like(scores) if mask is None else np.asarray(mask, dtype=float)
    return _interval(_cell_draws(scores, mask, _rows(scores.size)))


def paired_ci_p(a, b, mask=None) -> tuple[float, float, float]:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    mask = np.ones_like(a) if mask is None else np.asarray(mask, dtype=float)
    rows = _rows(a.size)
    d = _cell_draws(b, mask, rows) - _cell_draws(a, mask, rows)
    d = d[~np.isnan(d)]
    p = min(1.0, 2 * min(float(np.mean(d <= 0)), float(np.mean(d >= 0))))
    return (*_interval(d), p)


def mcnemar_reference(only_a: int, only_b: int) -> float:
    n = only_a + only_b
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2**n) if n else 1.0


def close(estimate, low: float, high: float) -> bool:
    return estimate.low == pytest.approx(low, abs=1e-9) and estimate.high == pytest.approx(high, abs=1e-9)


# ---- haystack-like and jsonl-like runs -----------------------------------------------------------------


def haystack_results(n: int = 60, n_right: int = 38, seed: int = 0) -> list[SampleResult]:
    right = np.random.default_rng(seed).permutation([True] * n_right + [False] * (n - n_right))
    return [result(f"hay-{i}", bool(ok), {"kind": "read" if i % 3 else "count", "depth": DEPTHS[i % 5]})
            for i, ok in enumerate(right)]


def jsonl_results(n: int = 50, seed: int = 1) -> list[SampleResult]:
    """A user's JSONL: a category, multi-label tags, and one failed sample (counts as wrong)."""
    right = np.random.default_rng(seed).random(n) < 0.55
    out = [result(f"q{i}", bool(ok), {"category": "ocr" if i % 2 else "action",
                                       "tags": ["a", "b"] if i % 4 == 0 else ["a"]}) for i, ok in enumerate(right)]
    out[7] = SampleResult(sample_id="q7", labels=out[7].labels, answer=0, n_options=4, error="timeout")
    return out


def _score(r: SampleResult) -> float:
    return r.score if r.score is not None else 0.0


def _mask(results: list[SampleResult], key: str, value: str) -> list[bool]:
    return [value in (r.labels.get(key) if isinstance(r.labels.get(key), list) else [r.labels.get(key)])
            for r in results]


def run_of(benchmark: str, results: list[SampleResult], run_id: str = "a", **settings) -> RunData:
    """A stored-run stand-in (no store, no data files: only the results and the benchmark object)."""
    spec = RunSpec(benchmark=benchmark, model="random", settings=settings)
    run = RunData(RunInfo(run_id=run_id, benchmark=benchmark, model="random", spec=spec, env={}, created=0.0,
                          updated=0.0, status="done"), results)
    run.__dict__["bench"] = BENCHMARKS.get(benchmark)(**settings)  # what benchmark_of(spec) gives
    return run


@pytest.fixture()
def stored():
    return {"haystack": run_of("haystack", haystack_results(), data="x.jsonl", frames=8),
            "jsonl": run_of("jsonl", jsonl_results(), data="x.jsonl")}


# ---- a resample's repeats count -------------------------------------------------------------------------


def test_a_repeated_sample_counts_every_time_it_is_drawn():
    wrong3_right1 = [result("w0", False), result("w1", False), result("w2", False), result("r", True)]
    resample = [wrong3_right1[i] for i in (0, 0, 0, 3)]  # w0 drawn three times: 1 right of 4
    for name in ("haystack", "jsonl"):
        tables = BENCHMARKS.get(name)(data="x.jsonl").aggregate(resample)
        assert tables[0].rows[0][1:] == (4, 25.0), name


@pytest.mark.parametrize("name", BENCHMARKS.names())
def test_every_benchmark_counts_repeats_as_distinct_samples(name):
    """aggregate(a resample with repeats) == aggregate(the same list made of distinct copies)."""
    bench = BENCHMARKS.get(name)()
    labels = [{"duration_group": "600", "question_category": "T2O", "level": "L1-Perception", "duration": "short",
               "domain": "Knowledge", "sub_category": "Humanity & History", "task_type": "OCR Problems",
               "question_type": ["entity recognition"], "video_type": "documentary", "task": "plotQA",
               "subset": "full", "kind": "read", "depth": "0-20%"}] * 4
    base = [result(f"s{i}", i == 3, labels[i]) for i in range(4)]
    idx = (0, 0, 0, 3, 1, 1)
    def tables(rs: list[SampleResult]) -> list[str]:
        return [repr(t.model_dump()) for t in bench.aggregate(rs)]  # repr: NaN cells compare equal

    assert tables([base[i] for i in idx]) == tables([base[i].model_copy() for i in idx])


# ---- the report path ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("benchmark", ["haystack", "jsonl"])
def test_report_intervals_are_the_plain_bootstrap(stored, benchmark):
    run = stored[benchmark]
    scores = [_score(r) for r in run.results]
    cis = bootstrap_tables(run.results, run.aggregate, n_boot=B, seed=SEED)
    overall = cis[("overall", "all")]
    assert close(overall, *plain_ci(scores))
    cell_key, cell_value = ("depth", "40-60%") if benchmark == "haystack" else ("tags", "b")
    assert close(cis[(cell_key, cell_value)], *plain_ci(scores, _mask(run.results, cell_key, cell_value)))
    # the report prints exactly these
    report = build_report([run], n_boot=B, seed=SEED, plots=False)
    head = next(s for s in report.sections if s.anchor == f"run-{run.run_id}")
    printed = {(t.title, row[0]): row[2] for t in head.tables for row in t.rows}
    assert printed[("overall", "all")] == overall
    assert printed[(cell_key, cell_value)] == cis[(cell_key, cell_value)]
    assert run_values(run, n_boot=B, seed=SEED)["all"] == overall  # `lvu compare --paper`'s row


def test_report_overall_for_60_samples_38_right(stored):
    """The issue's case: 63.3 % with the plain bootstrap's [51.7, 75.0] at the default 1000 resamples."""
    run = stored["haystack"]
    overall = bootstrap_tables(run.results, run.aggregate, n_boot=1000, seed=0)[("overall", "all")]
    low, high = _interval(_cell_draws(np.array([_score(r) for r in run.results]), np.ones(60), _rows(60, 1000, 0)))
    assert overall.fmt() == f"63.3 [{low:.1f}, {high:.1f}]" and close(overall, low, high)


def test_depth_cells_have_one_interval_in_the_table_and_the_depth_analysis(stored):
    run = stored["haystack"]
    cis = bootstrap_tables(run.results, run.aggregate, n_boot=B, seed=SEED)
    depth = analyses.depth(run, n_boot=B, seed=SEED)
    scores = [_score(r) for r in run.results]
    for x, estimate in zip(depth.x, depth.series["all"]):
        assert estimate == cis[("depth", x)], x
        assert close(estimate, *plain_ci(scores, _mask(run.results, "depth", x)))


# ---- the compare path -------------------------------------------------------------------------------------------


def _other(results: list[SampleResult], seed: int) -> list[SampleResult]:
    """The same samples answered by another model: ~30 % of the answers flipped."""
    flip = np.random.default_rng(seed).random(len(results)) < 0.3
    return [r.model_copy(update={"score": float(not r.score) if r.score is not None else 1.0,
                                 "correct": not r.correct, "error": None}) if f else r.model_copy()
            for r, f in zip(results, flip)]


@pytest.mark.parametrize("benchmark", ["haystack", "jsonl"])
def test_compare_delta_interval_p_and_mcnemar_are_the_paired_bootstrap(benchmark):
    a = haystack_results() if benchmark == "haystack" else jsonl_results()
    ra = run_of(benchmark, a, "a", data="x.jsonl")
    rb = run_of(benchmark, _other(a, seed=5), "b", data="x.jsonl", resize=224)
    sa, sb = [_score(r) for r in ra.results], [_score(r) for r in rb.results]
    cmp = compare_runs(ra, rb, n_boot=B, seed=SEED)
    rows = {(t, name): (d, p) for t, name, _, _, d, p, *_ in cmp.table.rows}
    cell_key, cell_value = ("depth", "0-20%") if benchmark == "haystack" else ("category", "ocr")
    for key, mask in ((("overall", "all"), None), ((cell_key, cell_value), _mask(ra.results, cell_key, cell_value))):
        low, high, p = paired_ci_p(sa, sb, mask)
        delta, p_text = rows[key]
        assert close(delta, low, high), key
        assert p_text == format_p(p, B), key
        cell = paired_bootstrap_tables(ra.results, rb.results, ra.aggregate, rb.aggregate, n_boot=B, seed=SEED)[key]
        assert cell.p == pytest.approx(p) and cell.low == pytest.approx(low) and cell.high == pytest.approx(high)
    only_a = sum(1 for x, y in zip(sa, sb) if x > y)
    only_b = sum(1 for x, y in zip(sa, sb) if y > x)
    (_, mcnemar), = cmp.summary
    assert f"{only_a} right only in A, {only_b} right only in B" in mcnemar
    assert mcnemar.endswith(f"p = {mcnemar_reference(only_a, only_b):.3g}")


def test_modality_gain_is_the_paired_bootstrap_of_the_differences():
    a = haystack_results()
    b = _other(a, seed=9)
    delta, p = sweeps.paired_delta(a, b, n_boot=B, seed=SEED)
    sa, sb = [_score(r) for r in a], [_score(r) for r in b]
    assert close(delta, *paired_ci_p(sa, sb)[:2])
    assert p == mcnemar_reference(sum(x > y for x, y in zip(sa, sb)), sum(y > x for x, y in zip(sa, sb)))


def test_a_run_without_its_benchmark_uses_the_same_intervals(stored):
    """Label tables (benchmark not rebuildable) resample the same way."""
    run = stored["jsonl"]
    bare = RunData(run.info, run.results)
    bare.__dict__["bench"] = None
    cis = bootstrap_tables(bare.results, bare.aggregate, n_boot=B, seed=SEED)
    assert close(cis[("overall", "all")], *plain_ci([_score(r) for r in run.results]))


def test_duration_groups_have_one_interval_in_the_table_and_video_length():
    groups = ("(8,15]", "(15,60]", "(180,600]", "(900,3600]")  # the release's duration_group values
    rs = [result(f"lvb{i}", i % 3 != 0, {"duration_group": groups[i % 4], "question_category": "T2O",
                                         "level": "L1-Perception"}) for i in range(48)]
    rs[5] = rs[5].model_copy(update={"score": None, "correct": None, "error": "timeout"})  # counts as wrong
    run = run_of("longvideobench", rs, frames=16)
    cis = bootstrap_tables(run.results, run.aggregate, n_boot=B, seed=SEED)
    curve = analyses.video_length(run, n_boot=B, seed=SEED)
    assert curve.x == list(groups)
    for g, estimate in zip(curve.x, curve.series["all"]):
        assert estimate == cis[("duration_group", g)], g


def test_label_breakdown_fast_path_gives_the_same_intervals() -> None:
    """bootstrap_tables(by_label=True) counts the resamples with matrix products instead of calling
    breakdowns_by_label per resample: every cell, point, n and interval must be the same."""
    import random

    from lvu.analysis.stats import bootstrap_tables
    from lvu.scoring.choice import breakdowns_by_label
    from lvu.types import SampleResult

    rng = random.Random(7)
    results = []
    for i in range(300):
        labels = {"kind": rng.choice(["a", "b", "c"]), "tags": rng.sample(["x", "y", "z"], rng.randint(0, 2))}
        if i % 17 == 0:
            labels["rare"] = "only-some"
        results.append(SampleResult(sample_id=f"s{i}", labels=labels,
                                    score=None if i % 23 == 0 else float(rng.random() < 0.6),
                                    counted=i % 31 != 0, error="boom" if i % 23 == 0 else None))
    slow = bootstrap_tables(results, breakdowns_by_label, n_boot=200, seed=3)
    fast = bootstrap_tables(results, breakdowns_by_label, n_boot=200, seed=3, by_label=True)
    assert list(fast) == list(slow)
    for key in slow:
        a, b = slow[key], fast[key]
        assert a.n == b.n, key
        for x, y in ((a.value, b.value), (a.low, b.low), (a.high, b.high)):
            assert x == pytest.approx(y, abs=1e-9), key
