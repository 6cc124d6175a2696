"""Single-run analyses from the papers, each a function of a stored run returning an Analysis
(table + plot): accuracy vs referred-context depth (LongVideoBench Fig. 4), accuracy vs clue
length and vs video length (LVBench Sec. 4.5 / Fig. 5), and the answer-letter distribution with
the out-of-option / no-answer rates (LVBench Sec. 4.2.2). docs/analysis.md says what each needs.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from lvu.analysis.runs import RunData
from lvu.analysis.stats import DEFAULT_BOOTSTRAP, Estimate, bootstrap_cells, bootstrap_mean
from lvu.analysis.table import Analysis, chance_of, choice_results, label_values, ordered, value
from lvu.errors import LvuError
from lvu.types import LETTERS, SampleResult

DEPTH_BINS = ("0-20%", "20-40%", "40-60%", "60-80%", "80-100%")
"""Quintiles of the referred moment's position in the video (the haystack's `depth` label too)."""
DURATION_KEYS = ("duration_group", "duration", "video_length")
"""Labels that hold a duration group: LongVideoBench, Video-MME, LVBench (in that order)."""


def label_order(key: str) -> tuple[str, ...]:
    """The paper's order of a label's groups (unknown keys: sorted)."""
    from lvu.benchmarks.longvideobench_ref import DURATIONS
    from lvu.benchmarks.lvbench import CLUE_BINS, LENGTH_BINS

    return {"duration_group": DURATIONS, "duration": ("short", "medium", "long"), "video_length": LENGTH_BINS,
            "clue_length": CLUE_BINS, "depth": DEPTH_BINS}.get(key, ())


def duration_key(results: list[SampleResult]) -> str | None:
    """The first duration-group label the results carry."""
    return next((k for k in DURATION_KEYS if any(k in r.labels for r in results)), None)


def depth_bin(fraction: float) -> str:
    return DEPTH_BINS[min(len(DEPTH_BINS) - 1, max(0, int(fraction * len(DEPTH_BINS))))]


def _extras(run: RunData) -> dict[str, tuple[Any, dict[str, Any]]]:
    """sample id -> (Sample, extra) from the run's benchmark files (when they can be read here)."""
    bench = run.bench
    if bench is None:
        return {}
    try:
        samples, _ = bench.load()
    except LvuError as e:
        run.notes.append(f"the benchmark's files cannot be read here ({e})")
        return {}
    return {s.id: (s, s.extra) for s in samples}


def referred_depths(run: RunData) -> dict[str, str]:
    """sample id -> depth bin of the referred moment: the `depth` label when the benchmark sets one
    (the haystack), else LongVideoBench's `position` (annotated referred frame numbers) divided by
    the video's frame count — their mean, i.e. the centre of the referred context. That needs the
    release files and videos (the frame count comes from the file); samples without are left out."""
    labelled = {r.sample_id: label_values(r, "depth")[0] for r in run.results if label_values(r, "depth")}
    if labelled:
        return labelled
    out: dict[str, str] = {}
    missing = 0
    from lvu.media.video import probe_frames

    for sid, (sample, extra) in _extras(run).items():
        position = extra.get("position")
        if not position:
            continue
        try:
            _, total = probe_frames(sample.video.path)
        except LvuError:
            missing += 1
            continue
        positions = position if isinstance(position, list) else [position]
        out[sid] = depth_bin(sum(float(p) for p in positions) / len(positions) / max(1, total))
    if missing:
        run.notes.append(f"{missing} samples left out of the depth analysis: their videos cannot be read "
                         "(the frame count turns `position` into a depth)")
    return out


def _series_by(results: list[SampleResult], x_of: dict[str, str], x_order: tuple[str, ...], group_key: str | None,
               n_boot: int, seed: int) -> tuple[list[str], dict[str, list[Estimate | None]]]:
    """Accuracy per x bin, overall ("all") and per value of `group_key` (e.g. duration group).
    `results` is the run's whole list: the multiple-choice samples fill the cells, but every
    sample is resampled, as for the official tables, so a cell that is also a table cell (the
    haystack's depth) gets the same interval in both places."""
    choice = {id(r) for r in choice_results(results)}
    cells: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(results):
        if id(r) not in choice or r.sample_id not in x_of:
            continue
        x = x_of[r.sample_id]
        cells[("all", x)].append(i)
        for g in label_values(r, group_key) if group_key else []:
            cells[(g, x)].append(i)
    estimates = bootstrap_cells([value(r) for r in results], cells, n_boot=n_boot, seed=seed)
    xs = ordered({x for _, x in cells}, x_order)
    names = ["all", *ordered({g for g, _ in cells} - {"all"}, label_order(group_key or ""))]
    series = {name: [estimates.get((name, x)) for x in xs] for name in names if any((name, x) in cells for x in xs)}
    return xs, series


def depth(run: RunData, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Analysis:
    """Accuracy vs where the referred moment lies in the video (0% = start), per duration group:
    LongVideoBench Sec. 4.4 / Fig. 4 (its depth effect), the haystack's needle depth."""
    results = choice_results(run.results)
    depths = referred_depths(run)
    if not depths:
        raise LvuError(f"run {run.run_id}: no referred-moment depths — the depth analysis needs a `depth` label "
                       "(haystack) or LongVideoBench's `position` with its release files and videos")
    key = duration_key(results)
    numbered = sorted(set(depths.values()) - set(DEPTH_BINS), key=lambda d: (leading_number(d), d))
    xs, series = _series_by(run.results, depths, (*DEPTH_BINS, *numbered), key, n_boot, seed)  # "5%" < "25%" < "100%"
    chance, _ = chance_of(results)
    return Analysis("depth", f"Accuracy vs referred-context depth — {run.label}", "depth of the referred moment",
                    xs, series, chance=chance, notes=list(dict.fromkeys(run.notes)))


def leading_number(text: str) -> float:
    """The number a label starts with ("25%" -> 25.0, `lvu build needle` depths), inf when none."""
    import re

    m = re.match(r"\s*(-?\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m else float("inf")


def by_label(run: RunData, key: str, *, name: str, title: str, x_label: str, fallback: dict[str, str] | None = None,
             n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Analysis:
    """Accuracy per value of one label (with CIs); `fallback` gives values for samples without it."""
    results = choice_results(run.results)
    x_of = {r.sample_id: label_values(r, key)[0] for r in results if label_values(r, key)}
    for sid, v in (fallback or {}).items():
        x_of.setdefault(sid, v)
    if not x_of:
        raise LvuError(f"run {run.run_id}: no sample has a {key!r} label — see docs/analysis.md for what {name} needs")
    xs, series = _series_by(run.results, x_of, label_order(key), None, n_boot, seed)
    chance, _ = chance_of(results)
    return Analysis(name, f"{title} — {run.label}", x_label, xs, series, kind="bar", chance=chance,
                    notes=list(dict.fromkeys(run.notes)))


def clue_length(run: RunData, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Analysis:
    """Accuracy by clue duration, LVBench Sec. 4.5: the `time_reference` span length binned 0-10 s,
    10-60 s, > 60 s (label `clue_length`; older runs: from the release file's time_reference)."""
    fallback: dict[str, str] = {}
    if not any("clue_length" in r.labels for r in run.results):
        from lvu.benchmarks.lvbench import clue_bin

        fallback = {sid: clue_bin(extra["clue_seconds"]) for sid, (_, extra) in _extras(run).items()
                    if isinstance(extra.get("clue_seconds"), (int, float))}
    return by_label(run, "clue_length", name="clue-length", title="Accuracy vs clue length",
                    x_label="clue duration (time_reference)", fallback=fallback, n_boot=n_boot, seed=seed)


def video_length(run: RunData, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Analysis:
    """Accuracy by video length: LVBench's 30-minute bins (`video_length`), LongVideoBench's
    duration groups, Video-MME's short/medium/long — whichever the run's samples carry."""
    key = duration_key(choice_results(run.results))
    if key is None:
        raise LvuError(f"run {run.run_id}: no duration label (duration_group, duration or video_length) — "
                       "video-length works on LongVideoBench, Video-MME and LVBench runs")
    return by_label(run, key, name="video-length", title="Accuracy vs video length", x_label=key,
                    n_boot=n_boot, seed=seed)


# ---- answer letters --------------------------------------------------------------------------------

OUTSIDE, NONE = "outside", "none"


def predicted_letter(r: SampleResult) -> str:
    """The option letter predicted; 'outside' for an answer that is not one of the options (a letter
    past the last option, or text: LVBench's "None of the above"), 'none' when nothing was extracted."""
    p = r.prediction
    if p is None or p == "":
        return NONE
    if isinstance(p, int) and not isinstance(p, bool) and 0 <= p < (r.n_options or len(LETTERS)):
        return LETTERS[p]
    return OUTSIDE


def posed_options(r: SampleResult) -> bool:
    """Whether the sample was a multiple-choice question: an option-index answer and options stored
    with the record. Records from before lvu stored options (no question either) count unless
    their prediction is free text."""
    if not isinstance(r.answer, int) or isinstance(r.answer, bool):
        return False
    if r.n_options or r.options:
        return True
    return r.question is None and not (isinstance(r.prediction, str) and r.prediction.strip())


def letters(run: RunData, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Analysis:
    """Predicted-letter shares beside the answer key's, with the out-of-option and no-answer rates
    (LVBench Sec. 4.2.2: Gemini answered outside the options 20.9 %, MovieChat favoured A).
    Failed samples (no response) are left out; uncounted ones (Video-MME's unanswered) are kept.
    Samples asked without options are left out (`posed_options`): an open-ended reply is no letter."""
    open_ended = bool(getattr(run.bench, "open_ended", False))
    rs = [r for r in run.results if not r.error and not open_ended and posed_options(r)]
    if not rs:
        why = " (an open-ended run: its questions are asked without options)" if open_ended else ""
        raise LvuError(f"run {run.run_id}: no answered multiple-choice samples{why} — letters needs MCQ results")
    answers = [r.answer for r in rs if isinstance(r.answer, int)]  # (every one: posed_options)
    n_letters = max(max(r.n_options or 0 for r in rs), max(answers) + 1)
    preds = [predicted_letter(r) for r in rs]
    xs = [*LETTERS[:n_letters], OUTSIDE, NONE]
    pred = {x: bootstrap_mean([p == x for p in preds], n_boot=n_boot, seed=seed) for x in xs}
    key = {x: bootstrap_mean([LETTERS[a] == x for a in answers], n_boot=0) for x in xs}
    tv = 0.5 * sum(abs(pred[x].value - key[x].value) for x in xs)
    top = max(LETTERS[:n_letters], key=lambda x: pred[x].value)
    fallback = sum(1 for r in rs if (r.explanation or "").startswith("random pick"))
    summary = [
        ("answers outside the options", f"{pred[OUTSIDE].fmt()} %"),
        ("no answer extracted", f"{pred[NONE].fmt()} %"),
        ("most chosen letter", f"{top}: {pred[top].value:.1f} % of predictions, {key[top].value:.1f} % of answers"),
        ("letter bias (total variation from the answer key)", f"{tv:.1f} points"),
    ]
    if fallback:
        summary.append(("no letter in the reply, scored as the protocol's random pick", f"{fallback} samples"))
    return Analysis("letters", f"Answer letters — {run.label}", "answer", xs,
                    {"predictions": [pred[x] for x in xs], "answer key": [key[x] for x in xs]},
                    y_label="share of samples %", kind="bar", summary=summary,
                    notes=[f"{len(rs)} answered multiple-choice samples"])


SINGLE_RUN = {"depth": depth, "clue-length": clue_length, "video-length": video_length, "letters": letters}
"""Analyses of one run, by their `lvu analyse` name."""
