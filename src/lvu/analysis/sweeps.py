"""Analyses across runs: accuracy vs frames (LongVideoBench Table 5 / Fig. 1, per duration group),
the single-frame-bias score, and the modality ablation (frames / subtitles / audio / blind;
LongVideoBench Table 6, Video-MME w/ and w/o subtitles and Table 5's +Audios, Neptune's QAD and
QAD+ASR rows).

All of them compare runs on the samples the runs share (a `--limit` run against a full one
compares the common part), so differences are paired and their intervals come from resampling
samples jointly across runs.
"""

from __future__ import annotations

import numpy as np

from lvu.analysis.analyses import duration_key, label_order
from lvu.analysis.runs import MODALITY_ORDER, RunData
from lvu.analysis.stats import DEFAULT_BOOTSTRAP, DEFAULT_LEVEL, Estimate, bootstrap_cells, bootstrap_mean, mcnemar_exact
from lvu.analysis.table import Analysis, accuracy, chance_of, choice_results, label_values, ordered, value
from lvu.errors import LvuError
from lvu.types import SampleResult


def aligned(runs: list[RunData]) -> tuple[list[str], list[dict[str, SampleResult]]]:
    """The multiple-choice sample ids every run has (in the first run's order), and each run's
    results by id."""
    by_id = [{r.sample_id: r for r in choice_results(run.results)} for run in runs]
    shared = set.intersection(*(set(d) for d in by_id)) if by_id else set()
    ids = [sid for sid in by_id[0] if sid in shared] if by_id else []
    if not ids:
        raise LvuError("the runs share no scored multiple-choice samples — compare runs of one benchmark")
    return ids, by_id


def _shared_note(runs: list[RunData], ids: list[str]) -> list[str]:
    sizes = [len(choice_results(r.results)) for r in runs]
    return [] if all(n == len(ids) for n in sizes) else [
        f"compared on the {len(ids)} samples all runs share (runs have {', '.join(map(str, sizes))})"]


def _in_group(r: SampleResult, group: str, key: str | None) -> bool:
    """Whether a result counts in a curve's group: "all" takes every one, another group the results
    whose duration label (`key`) names it."""
    return group == "all" or (key is not None and group in label_values(r, key))


def frames_curve(runs: list[RunData], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Analysis:
    """Accuracy vs frames per sample, overall and per duration group, from runs that differ only
    in frames (a sweep). Cells where no sample of a group got more frames than at the previous
    point are marked "s.a." in the notes, as Table 5 prints them (the 1 fps cap)."""
    runs = sorted([r for r in runs if r.frames], key=lambda r: r.frames or 0)  # (all have frames)
    if len(runs) < 2:
        raise LvuError("frames-curve needs two or more runs that differ in frames — e.g. "
                       "lvu run --frames 8, then --frames 32 (or a sweep)")
    ids, by_id = aligned(runs)
    first = [by_id[0][sid] for sid in ids]
    key = duration_key(first)
    groups = ["all", *ordered({g for r in first for g in label_values(r, key)}, label_order(key))] if key else ["all"]
    members = {g: [sid for sid in ids if _in_group(by_id[0][sid], g, key)] for g in groups}
    # group cells resample the whole shared list (as the official tables do), not each group alone
    positions = {g: [i for i, sid in enumerate(ids) if _in_group(by_id[0][sid], g, key)]
                 for g in groups}
    per_run = [bootstrap_cells([value(d[sid]) for sid in ids], positions, n_boot=n_boot, seed=seed) for d in by_id]
    series: dict[str, list[Estimate]] = {g: [cells[g] for cells in per_run] for g in groups}
    notes = _shared_note(runs, ids)
    for g in groups[1:] if key else groups:
        for k in range(1, len(runs)):
            used = [tuple(int(by_id[j][sid].prompt.get("n_frames") or 0) for sid in members[g]) for j in (k - 1, k)]
            if used[0] == used[1] and members[g]:
                notes.append(f"{g}: {runs[k].frames} frames gives the same frames as {runs[k - 1].frames} (s.a.)")
    best = [f"{g}: {max(zip(series[g], runs), key=lambda p: p[0].value)[1].frames} frames" for g in groups]
    chance, _ = chance_of(first)
    return Analysis("frames-curve", f"Accuracy vs frames — {runs[0].label.split(' [')[0]}", "frames per sample",
                    [str(r.frames) for r in runs], series, x_values=[float(r.frames) for r in runs],  # type: ignore[arg-type]
                    log_x=True, chance=chance, summary=[("best frame count", "; ".join(best))], notes=notes)


def _bias(scores: np.ndarray, chance: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """(acc at the first point - chance) / (best acc over the points - chance), per resample row."""
    acc = scores[:, idx].mean(axis=-1)  # points x resamples
    c = chance[idx].mean(axis=-1)
    gain = acc.max(axis=0) - c
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gain > 0, (acc[0] - c) / gain, np.nan)


def single_frame_bias(runs: list[RunData], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                      level: float = DEFAULT_LEVEL) -> Analysis:
    """How much of the accuracy a benchmark grants to one frame: (acc₁ − chance) / (acc_best − chance)
    over a frame sweep that starts at 1 frame (or a single-frame probe run). 0: one frame is no
    better than chance; 1: one frame already reaches the best accuracy of the sweep (the
    "single-frame bias" LongVideoBench says earlier benchmarks suffer from). Per duration group too."""
    runs = sorted([r for r in runs if r.frames], key=lambda r: r.frames or 0)  # (all have frames)
    if len(runs) < 2:
        raise LvuError("single-frame-bias needs a 1-frame run and runs with more frames of the same model")
    ids, by_id = aligned(runs)
    first = [by_id[0][sid] for sid in ids]
    scores = np.array([[value(d[sid]) for sid in ids] for d in by_id])
    chance = np.array([1 / r.n_options if r.n_options else 0.25 for r in first])
    key = duration_key(first)
    groups = ["all", *ordered({g for r in first for g in label_values(r, key)}, label_order(key))] if key else ["all"]
    rng = np.random.default_rng(seed)
    points: list[Estimate | None] = []
    for g in groups:
        pos = np.array([i for i, r in enumerate(first) if _in_group(r, g, key)])
        point = float(_bias(scores, chance, pos)) if pos.size else np.nan
        low = high = np.nan
        if n_boot > 0 and pos.size >= 2:
            draws = _bias(scores, chance, pos[rng.integers(0, pos.size, size=(n_boot, pos.size))])
            draws = draws[~np.isnan(draws)]
            if draws.size:
                low, high = np.percentile(draws, [50 * (1 - level), 100 - 50 * (1 - level)])
        points.append(Estimate(point, float(low), float(high), int(pos.size), digits=2))
    notes = _shared_note(runs, ids)
    if runs[0].frames != 1:
        notes.append(f"the smallest point has {runs[0].frames} frames, not 1: this is a {runs[0].frames}-frame bias")
    if not chance_of(first)[1]:
        notes.append("option counts were not stored with these runs: chance taken as 25 %")
    summary = [(f"single-frame bias, {g}", p.fmt()) for g, p in zip(groups, points) if p is not None]
    return Analysis("single-frame-bias", f"Single-frame bias — {runs[0].label.split(' [')[0]}",
                    "group", groups, {"bias": points}, y_label="(acc₁ − chance) / (acc_best − chance)",
                    kind="bar", summary=summary, notes=notes)


_CONTRASTS = (("frames + subtitles", "frames", "subtitles add to frames"),
              ("frames + audio", "frames", "audio adds to frames"),
              ("frames + subtitles + audio", "frames + subtitles", "audio adds to frames + subtitles"),
              ("frames + audio", "frames + subtitles", "audio instead of subtitles"),
              ("frames", "blind", "frames add to the question alone"),
              ("subtitles", "blind", "subtitles add to the question alone"),
              ("frames + subtitles", "blind", "frames and subtitles add to the question alone"),
              ("frames + subtitles", "subtitles", "frames add to subtitles"))


def paired_delta(a: list[SampleResult], b: list[SampleResult], *, n_boot: int, seed: int) -> tuple[Estimate, float | None]:
    """(B − A in points with a paired-bootstrap CI, exact McNemar p when every score is 0/1)."""
    va, vb = [value(r) for r in a], [value(r) for r in b]
    delta = bootstrap_mean([y - x for x, y in zip(va, vb)], n_boot=n_boot, seed=seed)
    if all(v in (0.0, 1.0) for v in va + vb):
        only_a = sum(1 for x, y in zip(va, vb) if x > y)
        only_b = sum(1 for x, y in zip(va, vb) if y > x)
        return delta, mcnemar_exact(only_a, only_b)
    return delta, None


def modality(runs: list[RunData], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Analysis:
    """Accuracy of one model given frames, subtitles, both, or neither (the question alone), on the
    samples all runs share, with the paired gain of each added modality (CI + exact McNemar p)."""
    by_mod: dict[str, RunData] = {}
    for run in sorted(runs, key=lambda r: r.info.updated):
        by_mod[run.modality] = run  # the newest run of a modality wins
    if len(by_mod) < 2:
        raise LvuError("modality needs runs with two or more inputs (frames, subtitles, audio, blind) — "
                       f"got {', '.join(by_mod) or 'none'}")
    mods = [m for m in MODALITY_ORDER if m in by_mod]
    ids, by_id = aligned([by_mod[m] for m in mods])
    rows = {m: [d[sid] for sid in ids] for m, d in zip(mods, by_id)}
    series = {"accuracy": [accuracy(rows[m], n_boot=n_boot, seed=seed) for m in mods]}
    summary = []
    for b, a, what in _CONTRASTS:
        if a in rows and b in rows:
            delta, p = paired_delta(rows[a], rows[b], n_boot=n_boot, seed=seed)
            summary.append((f"{what} ({b} − {a})", f"{delta.fmt()} points" + (f", McNemar p = {p:.3g}" if p is not None else "")))
    chance, _ = chance_of(rows[mods[0]])
    notes = _shared_note([by_mod[m] for m in mods], ids) + [f"{m}: run {by_mod[m].run_id} ({by_mod[m].label})" for m in mods]
    return Analysis("modality", "Accuracy by input modality", "input", mods, series, kind="bar", chance=chance,
                    summary=summary, notes=notes)


MULTI_RUN = {"frames-curve": frames_curve, "single-frame-bias": single_frame_bias, "modality": modality}
"""Analyses of several runs, by their `lvu analyse` name."""
