"""Video-MME Table 5's layout for a modality ablation: per duration group and domain, accuracy with
frames, then +subtitles and +audio with their gain over frames ("85.6 (+5.8)", "(-)" for none).

    lvu sweep -b videomme -m gemini -a model=... --subtitles none,all --audio none,whole
    lvu analyse modality            # the generic ablation, then this table and the paper's

Each run is scored as its benchmark scores it (Video-MME: correct / answered, failed samples
wrong), on the questions every run of the group has; the paper's own Table 5 (Gemini 1.5 Pro)
comes beside it from lvu.benchmarks.videomme_ref.TABLE_5.
"""

from __future__ import annotations

from lvu.analysis.runs import RunData, family
from lvu.analysis.table import Table
from lvu.types import SampleResult

ROWS = (("frames", "Frames"), ("frames + subtitles", "+Subs"), ("frames + audio", "+Audios"))
"""The run modalities Table 5 compares, with the paper's row names."""
SUBSETS = ("short", "medium", "long", "overall")


def _accuracy(results: list[SampleResult]) -> float | None:
    counted = [r for r in results if r.counted]
    if not counted:
        return None
    return 100.0 * sum(r.score if r.score is not None and not r.error else 0.0 for r in counted) / len(counted)


def _cell(value: float | None, base: float | None) -> str:
    if value is None:
        return "–"
    if base is None:
        return f"{value:.1f}"
    delta = round(value - base, 1)
    return f"{value:.1f} (-)" if delta == 0 else f"{value:.1f} ({delta:+.1f})"


def videomme_table5(group: list[RunData]) -> list[Table]:
    """[the runs' Table 5, the paper's] for a Video-MME modality group with a frames run and a
    +subtitles or +audio run of the same frames; [] for any other group."""
    from lvu.benchmarks.videomme_ref import TABLE_5, TABLE_5_DOMAINS

    if not group or family(group[0].spec.benchmark) != "videomme":
        return []
    by_mod = {r.modality: r for r in sorted(group, key=lambda r: r.info.updated)}
    runs = [(name, by_mod[mod]) for mod, name in ROWS if mod in by_mod]
    if len(runs) < 2 or runs[0][0] != "Frames":
        return []
    shared = set.intersection(*({r.sample_id for r in run.results} for _, run in runs))
    rows = []
    for subset in SUBSETS:
        base: dict[str, float | None] = {}
        for name, run in runs:
            mine = [r for r in run.results if r.sample_id in shared
                    and (subset == "overall" or r.labels.get("duration") == subset)]
            cells = []
            for domain in TABLE_5_DOMAINS:
                acc = _accuracy([r for r in mine if domain == "Overall" or r.labels.get("domain") == domain])
                cells.append(_cell(acc, None if name == "Frames" else base.get(domain)))
                if name == "Frames":
                    base[domain] = acc
            rows.append([subset.capitalize(), name, *cells])
    notes = [f"{name}: run {run.run_id} ({run.label})" for name, run in runs]
    notes.append(f"on the {len(shared)} questions all runs have; each run scored as its benchmark scores it")
    ours = Table("Video-MME Table 5 layout: accuracy % by duration, domain and modality (Δ vs frames)",
                 ["subset", "modality", *TABLE_5_DOMAINS], rows, notes)
    paper_rows = []
    for subset in SUBSETS:
        frames = TABLE_5[(subset, "frames")]
        for key, name in (("frames", "Frames"), ("+subs", "+Subs"), ("+audios", "+Audios")):
            values = TABLE_5[(subset, key)]
            paper_rows.append([subset.capitalize(), name,
                               *(_cell(v, None if key == "frames" else f) for v, f in zip(values, frames))])
    paper = Table("Video-MME Table 5 (paper): Gemini 1.5 Pro, 1 fps (0.5 fps long), all subtitles / the audio",
                  ["subset", "modality", *TABLE_5_DOMAINS], paper_rows,
                  ["deltas recomputed from the cells: the paper prints Medium/Multilingual +Subs as +4.1 "
                   "(95.8 -> 91.7 is -4.1) and Long/Film +Subs as +2.5 (70.1 -> 73.6 is +3.5)"])
    return [ours, paper]
