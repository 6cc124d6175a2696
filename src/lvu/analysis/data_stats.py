"""`lvu data stats`: the papers' data tables, computed from any benchmark's loaded samples.

    stats = data_stats(make_benchmark("videomme", {"data": "VideoMME/"}))
    for table in stats.tables: ...           # text; stats.charts for --plot

Works on every registered benchmark, on lvu JSONL (`jsonl`) and on what `lvu build` writes (its
benchmark.jsonl / neptune_full.json), so a new benchmark gets its statistics page for free:

- overview: questions, videos, unreadable records, questions per video, options, hours and
  length of video (the release's durations, else the files' probe);
- counts per label (category / task / duration / subset...), with the share of questions and
  videos; multi-label keys (LVBench's capabilities) count a question under each of its labels, so
  the shares are per-capability proportions, and their combinations get a table of their own
  (LVBench's 26 question types);
- words per duration group (Video-MME Table 2): question, all options, the answer, one decoy
  (Neptune's QAD lengths), and subtitles per video with a subtitle file;
- answer letters; video length in the paper's buckets and mean length per duration group;
- subtitle files present and videos with an audio track (Video-MME's 713 / 869).

The paper's values (each benchmark's `*_ref.DATA_STATS`) stand beside ours when the release is the
paper's — as many questions as the paper counts for the split — or when asked (`paper=True`).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.analysis.analyses import label_order
from lvu.analysis.table import Table, ordered
from lvu.benchmarks.base import Benchmark
from lvu.types import LETTERS, Sample

DURATION_KEYS = ("duration_group", "duration", "video_length")
DEFAULT_BUCKETS = [("< 1 min", 0, 60, None), ("1-3 min", 60, 180, None), ("3-10 min", 180, 600, None),
                   ("10-30 min", 600, 1800, None), ("30-60 min", 1800, 3600, None), ("> 1 h", 3600, None, None)]
MAX_VALUES = 60
"""Labels with more distinct values than this (ids, free text) get no count table."""


@dataclass
class Chart:
    """A bar chart: series of values over named groups (`lvu.analysis.plots.plot_bars`)."""

    name: str
    title: str
    names: list[str]
    series: dict[str, list[float | None]]
    y_label: str = "% of questions"


@dataclass
class DataStats:
    title: str
    tables: list[Table] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def paper_stats(bench: Benchmark) -> dict[str, Any] | None:
    """The paper's data statistics for the benchmark's family and split (None: no paper numbers)."""
    family = bench.name.split("-")[0]
    if family == "videomme":
        from lvu.benchmarks.videomme_ref import DATA_STATS
    elif family == "lvbench":
        from lvu.benchmarks.lvbench_ref import DATA_STATS
    elif family == "neptune":
        from lvu.benchmarks.neptune_ref import DATA_STATS
    elif family == "longvideobench":
        from lvu.benchmarks.longvideobench_ref import DATA_STATS
    elif family == "mlvu":
        from lvu.benchmarks.mlvu_ref import DATA_STATS
    else:
        return None
    split = bench.settings.get("split") or bench.settings.get("subset")
    return {**DATA_STATS, **DATA_STATS.get("by_split", {}).get(str(split), {})}


# ---- per-sample facts ----------------------------------------------------------------------------


def words(text: Any) -> int:
    return len(str(text or "").split())


def is_mcq(s: Sample) -> bool:
    return bool(s.options) and isinstance(s.answer, int) and not isinstance(s.answer, bool)


def answer_text(s: Sample) -> str | None:
    if is_mcq(s) and isinstance(s.answer, int) and s.options and 0 <= s.answer < len(s.options):  # (is_mcq: both)
        return s.options[s.answer]
    return s.answer if isinstance(s.answer, str) else s.extra.get("reference")


def _values(s: Sample, key: str) -> list[str]:
    v = s.labels.get(key)
    return [] if v is None else [str(x) for x in v] if isinstance(v, list) else [str(v)]


class _Videos:
    """Per video file: duration (release, else probe), audio track, subtitle words — each read once."""

    def __init__(self, probe: bool) -> None:
        self.probe = probe
        self._durations: dict[str, float | None] = {}
        self._audio: dict[str, bool | None] = {}

    def duration(self, s: Sample) -> float | None:
        path = s.video.path
        if path not in self._durations:
            given = s.video.duration or s.extra.get("duration_s")
            value = float(given) if isinstance(given, (int, float)) and given > 0 else None
            if value is None and self.probe and Path(path).exists():
                from lvu.errors import LvuError
                from lvu.media.video import probe_cached

                try:
                    value = float(probe_cached(path).duration)
                except (LvuError, OSError):
                    value = None
            self._durations[path] = value
        return self._durations[path]

    def has_audio(self, path: str) -> bool | None:
        """Whether the file has an audio track; None when it cannot be read (missing, or no probing)."""
        if path not in self._audio:
            result = None
            if self.probe and Path(path).exists():
                import av

                try:
                    with av.open(path) as container:
                        result = bool(container.streams.audio)
                except (av.FFmpegError, OSError):
                    result = None
            self._audio[path] = result
        return self._audio[path]


def _subtitle_words(path: str, offset: float) -> int | None:
    from lvu.errors import LvuError
    from lvu.media.subtitles import load_cues

    try:
        return sum(words(c.text) for c in load_cues(path, offset=offset))
    except (LvuError, OSError, ValueError):
        return None


# ---- the tables ------------------------------------------------------------------------------------


def _pct(n: float, total: float) -> float | None:
    return 100.0 * n / total if total else None


def _beside(ours: float | None, paper: Any, digits: int = 1) -> str:
    text = "–" if ours is None else f"{ours:.{digits}f}"
    return text if paper is None else f"{text} (paper {paper})"


def data_stats(bench: Benchmark, *, paper: bool | None = None, probe: bool = True) -> DataStats:
    """The data tables of `bench`'s loaded samples. `paper`: show the paper's values (None: only
    when the release is the paper's — its question count); `probe`: open video files for durations
    the release does not give and for audio tracks."""
    samples, bad = bench.loaded()
    ref = paper_stats(bench)
    out = DataStats(f"{bench.name}: data statistics")
    expected = ref.get("questions") if ref else None
    n = len(samples) + len(bad)
    show = bool(ref) and (paper if paper is not None else n == expected)
    if ref and not show:
        out.notes.append(f"paper values left out: this release has {n:,} questions, the paper's {expected:,} "
                         "(--paper shows them anyway)" if expected else "paper values left out (--paper shows them)")
    if show and ref:  # (show implies ref)
        out.notes.append(f"paper: {ref['source']}")
        out.notes += list(ref.get("notes", []))
    p: dict[str, Any] = ref if show and ref else {}
    videos = _Videos(probe)
    by_video: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        by_video[s.video.path].append(s)
    dkey = next((k for k in DURATION_KEYS if any(k in s.labels for s in samples)), None)
    out.tables.append(_overview(samples, bad, by_video, videos, p))
    out.tables += _label_tables(samples, by_video, dkey, p, out)
    out.tables.append(_words(samples, by_video, dkey, p))
    if letters := _letters(samples, p, out):
        out.tables.append(letters)
    out.tables += _lengths(samples, by_video, videos, dkey, p, out)
    out.tables.append(_availability(samples, by_video, videos, p))
    if bad:
        out.notes.append(f"{len(bad)} unreadable record(s) left out of every table (`lvu data check` lists them)")
    return out


def _overview(samples: list[Sample], bad: list, by_video: dict[str, list[Sample]], videos: _Videos,
              p: dict[str, Any]) -> Table:
    durations = [d for path in by_video if (d := videos.duration(by_video[path][0])) is not None]
    mcq = [s for s in samples if is_mcq(s)]
    options = Counter(len(s.options) for s in mcq)
    mean_ref = (p.get("mean_seconds") or {}).get("all")
    rows: list[list[Any]] = [["questions", len(samples) + len(bad), p.get("questions")],
            ["videos", len(by_video), p.get("videos")],
            ["unreadable records", len(bad), None],
            ["questions per video", round(len(samples) / len(by_video), 2) if by_video else None, None],
            ["multiple-choice / open-ended", f"{len(mcq)} / {len(samples) - len(mcq)}", None],
            ["options per question", ", ".join(f"{k} ({v})" for k, v in sorted(options.items())) or "–",
             p.get("options")],
            ["hours of video", f"{sum(durations) / 3600:.2f} ({sum(durations):,.0f} s)" if durations else None, None],
            ["mean video length (s)", round(statistics.mean(durations), 1) if durations else None, mean_ref],
            ["median / min / max length (s)", " / ".join(f"{v:.1f}" for v in (statistics.median(durations),
                                                                          min(durations), max(durations)))
             if durations else None, f"max {p['max_seconds']}" if p.get("max_seconds") else None],
            ["videos with a known length", f"{len(durations)} of {len(by_video)}", None]]
    columns = ["statistic", "this release"] + (["paper"] if p else [])
    return Table("Overview", columns, [r if p else r[:2] for r in rows])


def _label_tables(samples: list[Sample], by_video: dict[str, list[Sample]], dkey: str | None, p: dict[str, Any],
                  out: DataStats) -> list[Table]:
    keys = list(dict.fromkeys(k for s in samples for k in s.labels))
    tables = []
    for key in keys:
        counts: Counter[str] = Counter()
        vids: dict[str, set[str]] = defaultdict(set)
        multi = False
        for s in samples:
            values = _values(s, key)
            multi = multi or isinstance(s.labels.get(key), list)
            for v in dict.fromkeys(values):
                counts[v] += 1
                vids[v].add(s.video.path)
        if not counts or len(counts) > MAX_VALUES:
            continue
        ref = {k.lower(): v for k, v in (p.get("label_counts") or {}).get(key, {}).items()}
        order = [k for k in (p.get("label_counts") or {}).get(key, {}) if k in counts]
        if not order:  # the paper's order of duration groups, LVBench's length bins, depths...
            order = [k for k in label_order(key) if k in counts]
        names = order + [k for k, _ in counts.most_common() if k not in order]
        if ref:
            names += [k for k in (p.get("label_counts") or {}).get(key, {}) if k not in counts]
        rows = [[name, counts.get(name, 0), _pct(counts.get(name, 0), len(samples)), len(vids.get(name, ())),
                 *([ref.get(name.lower())] if ref else [])] for name in names]
        notes = ["multi-label: a question counts under each of its labels, so the shares (per-label "
                 "proportions) sum to more than 100 %"] if multi else []
        title = f"Questions per {key}" + (" (multi-label)" if multi else "")
        tables.append(Table(title, [key, "questions", "% of questions", "videos", *(["paper"] if ref else [])],
                            rows, notes))
        if len(names) <= 30 and key != dkey:
            out.charts.append(Chart(f"label-{key}", title, names,
                                    {"this release": [_pct(counts.get(x, 0), len(samples)) for x in names],
                                     **({"paper": [_pct(ref.get(x.lower()) or 0, sum(ref.values())) for x in names]}
                                        if ref else {})}))
        if multi:
            tables.append(_combinations(samples, key, p))
    return tables


def _combinations(samples: list[Sample], key: str, p: dict[str, Any]) -> Table:
    combos = Counter(" + ".join(sorted(set(_values(s, key)))) or "(none)" for s in samples)
    rows = [[c, k, _pct(k, len(samples))] for c, k in combos.most_common()]
    paper = (p.get("combinations") or {}).get(key)
    note = f"{len(combos)} distinct combinations" + (f" (paper: {paper})" if paper else "")
    return Table(f"{key} combinations", ["combination", "questions", "% of questions"], rows, [note])


def _words(samples: list[Sample], by_video: dict[str, list[Sample]], dkey: str | None, p: dict[str, Any]) -> Table:
    groups = ["all"]
    if dkey:
        present = {v for s in samples for v in _values(s, dkey)}
        groups = ordered(present, label_order(dkey)) + ["all"]
    subtitle_words: dict[str, int | None] = {}
    for path, ss in by_video.items():
        sub = ss[0].subtitles
        if sub is not None and Path(sub.path).exists():
            subtitle_words[path] = _subtitle_words(sub.path, sub.offset)
    ref_words = p.get("words") or {}
    rows = []
    for g in groups:
        members = [s for s in samples if g == "all" or g in _values(s, dkey or "")]
        mcq = [s for s in members if is_mcq(s)]
        decoys = [words(o) for s in mcq for i, o in enumerate(s.options) if i != s.answer]
        answers = [words(a) for s in members if (a := answer_text(s)) is not None]
        subs = [w for path in {s.video.path for s in members} if (w := subtitle_words.get(path)) is not None]
        ours = {"question": statistics.mean(words(s.question) for s in members) if members else None,
                "options": statistics.mean(sum(words(o) for o in s.options) for s in mcq) if mcq else None,
                "answer": statistics.mean(answers) if answers else None,
                "decoy": statistics.mean(decoys) if decoys else None,
                "subtitles": statistics.mean(subs) if subs else None}
        ref = ref_words.get(g, {})
        rows.append([g, len(members), *(_beside(ours[c], ref.get(c)) for c in ours)])
    notes = ["mean words (whitespace-separated); options = all options of a question together, decoy = one "
             "wrong option, subtitles = per video with a subtitle file"]
    return Table("Words per question, options, answer and subtitles" + (f" by {dkey}" if dkey else ""),
                 [dkey or "group", "questions", "question", "options", "answer", "decoy", "subtitles"], rows, notes)


def _letters(samples: list[Sample], p: dict[str, Any], out: DataStats) -> Table | None:
    mcq = [s for s in samples if is_mcq(s)]
    if not mcq:
        return None
    n_letters = max(len(s.options) for s in mcq)
    answers = [s.answer for s in mcq if isinstance(s.answer, int)]  # (every one: is_mcq)
    counts = Counter(LETTERS[a] for a in answers if a < n_letters)
    ref = p.get("letters") or {}
    xs = list(LETTERS[:n_letters])
    rows = [[x, counts.get(x, 0), _pct(counts.get(x, 0), len(mcq)), *([ref.get(x)] if ref else [])] for x in xs]
    out.charts.append(Chart("letters", "Answer letters", xs, {"this release": [_pct(counts.get(x, 0), len(mcq)) for x in xs],
                                                             **({"paper": [ref.get(x) for x in xs]} if ref else {})}))
    return Table("Answer letters", ["answer", "questions", "% of MCQs", *(["paper %"] if ref else [])], rows,
                 [f"chance of always answering the most frequent letter: {max(counts.values()) / len(mcq) * 100:.1f} %"])


def _lengths(samples: list[Sample], by_video: dict[str, list[Sample]], videos: _Videos, dkey: str | None,
             p: dict[str, Any], out: DataStats) -> list[Table]:
    lengths = {path: videos.duration(ss[0]) for path, ss in by_video.items()}
    known = [d for d in lengths.values() if d is not None]
    if not known:
        out.notes.append("no video length known (the release gives none and the files cannot be read): "
                         "the length tables are left out — pass --video-dir")
        return []
    buckets = p.get("length_buckets") or DEFAULT_BUCKETS
    counts = [sum(1 for d in known if d >= lo and (hi is None or d < hi)) for _, lo, hi, _ in buckets]
    has_ref = any(b[3] is not None for b in buckets)
    rows = [[name, k, _pct(k, len(known)), *([ref] if has_ref else [])] for (name, _, _, ref), k in zip(buckets, counts)]
    tables = [Table("Video length", ["length", "videos", "% of videos", *(["paper %"] if has_ref else [])], rows,
                    [f"{len(known)} of {len(by_video)} videos with a known length"])]
    out.charts.append(Chart("video-length", "Video length", [b[0] for b in buckets],
                            {"this release": [_pct(k, len(known)) for k in counts],
                             **({"paper": [b[3] for b in buckets]} if has_ref else {})}, "% of videos"))
    if dkey:
        per: dict[str, list[float]] = defaultdict(list)
        for path, ss in by_video.items():
            if (d := lengths[path]) is not None:
                for g in dict.fromkeys(v for s in ss for v in _values(s, dkey)):
                    per[g].append(d)
        ref = p.get("mean_seconds") or {}
        names = ordered(set(per), label_order(dkey)) + ["all"]
        per["all"] = known
        rows = [[g, len(per[g]), _beside(statistics.mean(per[g]), ref.get(g)), f"{min(per[g]):.1f}",
                 f"{max(per[g]):.1f}"] for g in names]
        tables.append(Table(f"Video length by {dkey} (s)", [dkey, "videos", "mean", "min", "max"], rows))
    return tables


def _availability(samples: list[Sample], by_video: dict[str, list[Sample]], videos: _Videos,
                  p: dict[str, Any]) -> Table:
    named = [ss[0].subtitles for ss in by_video.values() if ss[0].subtitles is not None]
    present = sum(1 for sub in named if Path(sub.path).exists())
    audio = [videos.has_audio(path) for path in by_video]
    read = [a for a in audio if a is not None]
    ref = p.get("availability") or {}
    rows = [["videos with a subtitle file", f"{present} of {len(by_video)}"
             + (f" ({len(named) - present} named but missing)" if len(named) > present else ""), ref.get("subtitles")],
            ["videos with an audio track", f"{sum(read)} of {len(read)} read" if read else "– (no file read)",
             ref.get("audio")]]
    columns = ["modality", "this release"] + (["paper"] if ref else [])
    return Table("Subtitles and audio", columns, [r if ref else r[:2] for r in rows],
                 [] if read or not videos.probe else ["no video file could be opened: pass --video-dir"])
