"""The papers' analyses on fixture runs: statistics, frame sweeps, single-frame bias, modality,
depth (haystack labels and LongVideoBench positions), clue / video length, answer letters, A/B
comparison and the temporal certificate."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fakes  # noqa: F401  (registers the fake benchmark)
from analysis_runs import (
    LVB_POSITIONS,
    LVB_VIDEO,
    haystack_runs,
    lvb_release,
    result,
    store_run,
    videomme_results,
)
from lvu.analysis import analyses, sweeps
from lvu.analysis.compare import compare_runs
from lvu.analysis.runs import RunData, frame_sweeps, load_runs, modality_groups
from lvu.analysis.stats import bootstrap_mean, bootstrap_tables, mcnemar_exact, paired_bootstrap_tables
from lvu.benchmarks.base import Breakdown
from lvu.benchmarks.lvbench import CLUE_BINS, clue_bin
from lvu.errors import LvuError
from lvu.api import run
from lvu.runs.store import Store

pytest.importorskip("rapidocr")
B = 300  # resamples: enough for the properties tested, fast on 2 cores


@pytest.fixture(scope="module")
def hay(tmp_path_factory):
    return haystack_runs(tmp_path_factory.mktemp("analysis"))


def runs_of(results_dir, ids) -> list[RunData]:
    return load_runs(Store(results_dir), list(ids))


# ---- statistics --------------------------------------------------------------------------------------


def test_bootstrap_ci_contains_the_estimate_narrows_with_n_and_is_seeded():
    small = [1.0] * 24 + [0.0] * 16  # 60 %
    large = small * 10
    a, b = bootstrap_mean(small, n_boot=2000), bootstrap_mean(large, n_boot=2000)
    assert a.value == b.value == 60.0
    assert a.low < a.value < a.high and b.low < b.value < b.high
    assert (b.high - b.low) < 0.5 * (a.high - a.low)  # ~1/sqrt(10) as wide
    graded = list(np.random.default_rng(7).random(50))  # off-lattice scores: seeds give different bounds
    g0 = bootstrap_mean(graded, n_boot=500, seed=0)
    assert bootstrap_mean(graded, n_boot=500, seed=0) == g0 and bootstrap_mean(graded, n_boot=500, seed=1) != g0
    assert not bootstrap_mean(small, n_boot=0).has_ci


def test_exact_mcnemar_matches_the_binomial_tail():
    # 10 pairs right only in A, 2 only in B: p = 2 * P(X <= 2), X ~ Bin(12, 1/2) = 2 * 79 / 4096
    assert math.isclose(mcnemar_exact(10, 2), 2 * (1 + 12 + 66) / 2**12)
    assert mcnemar_exact(2, 10) == mcnemar_exact(10, 2)
    assert mcnemar_exact(5, 5) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 10) < 0.002 < mcnemar_exact(1, 10)


def test_paired_bootstrap_per_cell():
    def agg(rs):
        groups: dict[str, list[float]] = {}
        for r in rs:
            groups.setdefault(r.labels["g"], []).append(r.score)
        return [Breakdown(title="overall", rows=[("all", len(rs), 100 * np.mean([r.score for r in rs]))]),
                Breakdown(title="g", rows=[(g, len(v), 100 * np.mean(v)) for g, v in sorted(groups.items())])]

    a = [result(f"s{i}", i % 2 == 0, {"g": "x" if i < 40 else "y"}) for i in range(80)]
    b = [result(f"s{i}", i < 40 or i % 2 == 0, {"g": "x" if i < 40 else "y"}) for i in range(80)]
    cells = paired_bootstrap_tables(a, b, agg, agg, n_boot=B)
    x, y = cells[("g", "x")], cells[("g", "y")]
    assert (x.a, x.b, x.delta) == (50.0, 100.0, 50.0) and x.p < 0.01 and x.low > 0
    assert (y.delta, y.p, y.low, y.high) == (0.0, 1.0, 0.0, 0.0)  # identical answers: no difference at all
    overall = cells[("overall", "all")]
    assert overall.delta == 25.0 and overall.low < 25.0 < overall.high
    cis = bootstrap_tables(a, agg, n_boot=B)
    assert all(c.low <= c.value <= c.high for c in cis.values())


# ---- frame sweeps, single-frame bias, modality ----------------------------------------------------------


@pytest.mark.slow
def test_frames_curve_single_frame_bias_and_grouping(hay):
    everything = [RunData(i, Store(hay.results_dir).results(i.run_id)) for i in Store(hay.results_dir).runs()]
    groups = frame_sweeps(everything)
    assert [[r.run_id for r in g] for g in groups] == [[hay.by_frames[f] for f in sorted(hay.by_frames)]]
    curve = sweeps.frames_curve(groups[0], n_boot=B)
    stored = [r.tables[0].rows[0][2] for r in groups[0]]  # each run's official overall
    assert curve.x == ["1", "4", "8"] and [p.value for p in curve.series["all"]] == pytest.approx(stored)
    assert all(p.low <= p.value <= p.high for p in curve.series["all"])
    assert 20 < curve.chance < 25  # 4-5 options
    assert stored[-1] > stored[0]  # more frames, more needles seen

    bias = sweeps.single_frame_bias(groups[0], n_boot=B)
    first = groups[0][0].results
    chance = 100 * np.mean([1 / r.n_options for r in first])
    expected = (stored[0] - chance) / (max(stored) - chance)
    assert bias.series["bias"][0].value == pytest.approx(expected)


def test_sweep_tags_group_runs_the_spec_would_not(tmp_path):
    tag = {"name": "seeds-vs-frames", "axes": {"frames": [4, 8]}}
    rs = [result(f"s{i}", i % 3 == 0) for i in range(12)]
    a = store_run(tmp_path, "haystack", "random", rs, settings={"data": "x.jsonl", "frames": 4},
                  model_args={"seed": 1}, env={"sweep": {**tag, "point": {"frames": 4}}})
    b = store_run(tmp_path, "haystack", "random", rs, settings={"data": "x.jsonl", "frames": 8},
                  model_args={"seed": 2}, env={"sweep": {**tag, "point": {"frames": 8}}})
    untagged = store_run(tmp_path, "haystack", "random", rs, settings={"data": "x.jsonl", "frames": 16},
                         model_args={"seed": 2})
    runs = runs_of(tmp_path, [a, b, untagged])
    assert [[r.run_id for r in g] for g in frame_sweeps(runs)] == [[a, b]]  # seed 2 at 16 frames: not this sweep
    assert frame_sweeps(runs_of(tmp_path, [b, untagged])) == []


def test_modality_ablation(hay):
    runs = runs_of(hay.results_dir, [hay.blind, hay.by_frames[8]])
    assert [r.modality for r in runs] == ["blind", "frames + subtitles"]
    everything = runs_of(hay.results_dir, [hay.blind, *hay.by_frames.values()])
    # the blind run (no frames) joins every frame count's group of its base model
    assert [[r.run_id for r in g] for g in modality_groups(everything)] == [
        [hay.blind, hay.by_frames[f]] for f in sorted(hay.by_frames)]
    a = sweeps.modality(runs, n_boot=B)
    assert a.x == ["blind", "frames + subtitles"]
    blind, full = (r.results for r in runs)
    assert [p.value for p in a.series["accuracy"]] == pytest.approx(
        [100 * np.mean([r.score for r in rs]) for rs in (blind, full)])
    only_full = sum(1 for x, y in zip(blind, full) if y.correct and not x.correct)
    only_blind = sum(1 for x, y in zip(blind, full) if x.correct and not y.correct)
    line = dict(a.summary)["frames and subtitles add to the question alone (frames + subtitles − blind)"]
    assert f"McNemar p = {mcnemar_exact(only_blind, only_full):.3g}" in line


# ---- single-run analyses ---------------------------------------------------------------------------------


def test_depth_from_haystack_labels(hay):
    (r8,) = runs_of(hay.results_dir, [hay.by_frames[8]])
    a = analyses.depth(r8, n_boot=B)
    labelled = [r for r in r8.results if "depth" in r.labels]
    assert a.x == [b for b in analyses.DEPTH_BINS if any(r.labels["depth"] == b for r in labelled)]
    for x, p in zip(a.x, a.series["all"]):
        members = [r for r in labelled if r.labels["depth"] == x]
        assert p.value == pytest.approx(100 * np.mean([r.score for r in members])) and p.n == len(members)


def test_depth_from_longvideobench_positions(tmp_path):
    root = lvb_release(tmp_path / "lvb")
    s = run("longvideobench-frames", "random", settings={"data": str(root), "frames": 4}, results_dir=tmp_path,
            show_progress=False, report=False, frame_cache=False)
    (r,) = runs_of(tmp_path, [s.run_id])
    depths = analyses.referred_depths(r)
    total = LVB_VIDEO["seconds"] * LVB_VIDEO["fps"]
    assert depths == {q: analyses.depth_bin(np.mean(p) / total) for q, p in LVB_POSITIONS.items()}
    assert depths["q0"] == "0-20%" and depths["q1"] == "20-40%" and depths["q4"] == "80-100%"
    a = analyses.depth(r, n_boot=B)
    assert list(a.series) == ["all", "(15,60]"] and sum(p.n for p in a.series["all"] if p) == len(LVB_POSITIONS)


def test_clue_length_and_video_length(tmp_path):
    seconds = [2, 5, 9, 30, 45, 59, 61, 120, 400, 8]
    rs = [result(f"u{i}", i % 2 == 0, {"question_type": ["KIR"], "video_type": "Sports", "clue_length": clue_bin(s),
                                       "video_length": "60-90 min" if i < 5 else "90-120 min"})
          for i, s in enumerate(seconds)]
    (r,) = runs_of(tmp_path, [store_run(tmp_path, "lvbench", "random", rs)])
    a = analyses.clue_length(r, n_boot=B)
    assert a.x == list(CLUE_BINS)
    for x, p in zip(a.x, a.series["all"]):
        members = [q for q in rs if q.labels["clue_length"] == x]
        assert p.n == len(members) and p.value == pytest.approx(100 * np.mean([q.score for q in members]))
    v = analyses.video_length(r, n_boot=B)
    assert v.x == ["60-90 min", "90-120 min"] and [p.n for p in v.series["all"]] == [5, 5]
    unlabelled = store_run(tmp_path, "haystack", "random", [result("x", True)], settings={"data": str(tmp_path / "no.jsonl")})
    with pytest.raises(LvuError, match="no sample has a 'clue_length' label"):
        analyses.clue_length(runs_of(tmp_path, [unlabelled])[0])


def test_letters_counts_outside_and_unanswered():
    results = videomme_results(replies={"001-1": "I cannot tell from the video."})  # no letter: not answered
    rs = [result("o1", False, prediction="N"), result("o2", False, prediction=4, n_options=4)]
    from lvu.runs.store import RunInfo
    from lvu.types import RunSpec

    info = RunInfo(run_id="x", benchmark="videomme", model="m", spec=RunSpec(benchmark="videomme", model="m"),
                   env={}, created=0, updated=0, status="done")
    a = analyses.letters(RunData(info, results + rs), n_boot=B)
    shares = dict(zip(a.x, a.series["predictions"]))
    n = len(results) + 2
    unanswered = sum(1 for r in results if r.prediction is None)
    assert unanswered == 1 and not next(r for r in results if r.sample_id == "001-1").counted
    assert shares["none"].value == pytest.approx(100 * unanswered / n)
    assert shares["outside"].value == pytest.approx(100 * 2 / n)  # "N" (text) and E on a 4-option question
    assert sum(p.value for p in a.series["predictions"]) == pytest.approx(100)
    key = dict(zip(a.x, a.series["answer key"]))
    assert key["A"].value == pytest.approx(100 * sum(r.answer == 0 for r in results + rs) / n)


# ---- A/B comparison ------------------------------------------------------------------------------------


def test_compare_runs_pairs_shared_samples(tmp_path):
    a = [result(f"s{i}", i % 4 == 0, {"parity": "even" if i % 2 == 0 else "odd"}) for i in range(40)]
    b = [result(f"s{i}", i % 2 == 0, {"parity": "even" if i % 2 == 0 else "odd"}) for i in range(44)]
    ra, rb = runs_of(tmp_path, [store_run(tmp_path, "fake", "random", a, settings={"n": 40}),
                                store_run(tmp_path, "fake", "random", b, settings={"n": 44})])
    cmp = compare_runs(ra, rb, n_boot=B)
    rows = {(t, name): (va, vb, d) for t, name, va, vb, d, *_ in cmp.table.rows}
    assert rows[("overall", "all")][:2] == (25.0, 50.0) and rows[("parity", "odd")][2].value == 0.0
    assert rows[("parity", "even")][2].value == 50.0 and rows[("parity", "even")][2].low > 0
    assert any("4 only in B" in n for n in cmp.table.notes)
    (_, mcnemar), = cmp.summary
    assert "0 right only in A, 10 right only in B of 40" in mcnemar and f"{mcnemar_exact(0, 10):.3g}" in mcnemar


# ---- temporal certificate ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_certificate_reaches_the_known_needles(hay, tmp_path):
    from lvu.analysis.certificate import run_certificates, schedule, summarize
    from lvu.benchmarks.jsonl import read_samples

    steps = schedule(40.0, fps=(1.0,), min_clip=2)
    assert [s.frames for s in steps] == [2, 4, 8, 16, 32, 40]
    assert all(abs((s.start + s.end) / 2 - 20.0) < 1e-9 for s in steps)  # centred on the middle
    samples = {s.id: s for s in read_samples(hay.data)[0]}
    certs = run_certificates("haystack", "ocr-match", settings={"data": str(hay.data)},
                             model_args={"cache": str(hay.ocr_cache)}, limit=3, fps=(1.0,), show_progress=False,
                             results_dir=tmp_path)  # committed to the ledger there (tests/test_certificate_ledger.py)
    reads = [c for c in certs if samples[c.sample_id].labels["kind"] == "read"]
    assert len(reads) >= 2 and all(c.frames for c in reads)
    for c in reads:
        mid = c.duration / 2
        (needle,) = samples[c.sample_id].extra["needles"]
        nearest = 0.0 if needle["start"] <= mid <= needle["end"] else min(abs(needle["start"] - mid),
                                                                         abs(needle["end"] - mid))
        assert c.seconds / 2 >= nearest - 1.0, (c, needle)  # the certificate clip reaches the needle
        assert c.max_incorrect_frames < c.frames and 0 <= c.effort < 1
        assert c.trail[-1][3] and not any(ok for *_, ok in c.trail[:-1])
    table, dist = summarize(certs)
    assert len(table.rows) == 3 and dict(dist.summary)["samples with a certificate"].startswith(
        f"{sum(1 for c in certs if c.frames)} of 3")
