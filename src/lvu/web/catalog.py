"""What the viewer can see: read access to one results directory's run store.

Every lookup is by exact run id and exact sample id against the store; nothing a request names is
ever turned into a file path. A sample's frames are found from its stored record only (its video
path and its stored frame timestamps).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lvu.benchmarks.base import Breakdown
from lvu.errors import LvuError
from lvu.runs.headline import Headline, headline_of_tables
from lvu.runs.store import DB_NAME, RunInfo, Store
from lvu.runs.summaries import Listed, run_listing
from lvu.types import SampleResult

T = TypeVar("T")
SHOWS: tuple[str, ...] = ("all", "wrong", "failed", "correct")


@dataclass
class Tables:
    """A run's breakdown tables, and why they are not the benchmark's own when they are not."""

    tables: list[Breakdown]
    note: str | None = None


def outcome(r: SampleResult) -> str:
    """One word for a sample: failed (error), correct, wrong, or uncounted / unscored."""
    if r.error:
        return "failed"
    if not r.counted:
        return "uncounted"
    if r.correct is True or (r.correct is None and r.score is not None and r.score >= 1.0):
        return "correct"
    if r.correct is False or r.score is not None:
        return "wrong"
    return "unscored"


def matches(r: SampleResult, show: str, label: tuple[str, str] | None) -> bool:
    """The run page's filters: by outcome, and by one label `key=value` (multi-label aware)."""
    if show != "all" and outcome(r) != show:
        return False
    if label is not None:
        value = r.labels.get(label[0])
        values = value if isinstance(value, list) else [value]
        if label[1] not in [str(v) for v in values if v is not None]:
            return False
    return True


class Catalog:
    """Read-only access to the runs stored under `results_dir` (one short connection per call, so
    the viewer's worker threads never share a SQLite connection and a live run keeps writing)."""

    def __init__(self, results_dir: str | Path) -> None:
        self.dir = Path(results_dir)
        self.db_path = self.dir / DB_NAME
        if not self.db_path.is_file():
            raise LvuError(f"{self.db_path}: no run store here — run `lvu run` first or pass --results-dir")
        self._lock = threading.Lock()
        self._tables: dict[str, tuple[tuple[Any, ...], Tables]] = {}
        self._videos: dict[str, dict[str, str]] = {}
        self._remembered: tuple[Any, Any] | None = None

    @contextmanager
    def store(self) -> Iterator[Store]:
        store = Store(self.dir, read_only=True)  # the viewer never writes (and works on a full disk)
        try:
            yield store
        finally:
            store.close()

    # ---- runs ------------------------------------------------------------------------------------

    def runs(self) -> list[RunInfo]:
        with self.store() as store:
            return store.runs()

    def run(self, run_id: str) -> RunInfo | None:
        """The run with exactly this id (no prefix matching: URLs name one run)."""
        return next((r for r in self.runs() if r.run_id == run_id), None)

    def results(self, run_id: str) -> list[SampleResult]:
        with self.store() as store:
            return store.results(run_id)

    def sample_ids(self, run_id: str) -> list[str]:
        """The run's sample ids in run order (for previous / next links)."""
        with self.store() as store:
            rows = store.db.execute("SELECT sample_id FROM samples WHERE run_id = ? ORDER BY ordinal, sample_id",
                                    (run_id,))
            return [r[0] for r in rows]

    def record(self, run_id: str, sample_id: str) -> dict[str, Any] | None:
        """The stored record of one sample as a dict (keys newer than this viewer included)."""
        with self.store() as store:
            row = store.db.execute("SELECT record FROM samples WHERE run_id = ? AND sample_id = ?",
                                   (run_id, sample_id)).fetchone()
        return None if row is None else json.loads(row[0])

    # ---- breakdown tables ------------------------------------------------------------------------

    def tables(self, info: RunInfo, results: list[SampleResult] | None = None) -> Tables:
        """`benchmark.aggregate` over the stored results (read here when not given), as `lvu results
        show` prints them; cached until the run's samples change. A run whose benchmark cannot be
        rebuilt here (a plugin not installed, settings it no longer accepts) gets per-label tables
        and a note."""
        key = (info.updated, info.samples_version)  # read with `info`, before any of these results
        with self._lock:
            cached = self._tables.get(info.run_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        if results is None:
            results = self.results(info.run_id)
        from lvu.runs.engine import benchmark_of

        try:
            tables = Tables(benchmark_of(info.spec).aggregate(results))
        except Exception as e:  # the viewer must still show the samples
            from lvu.scoring.choice import breakdowns_by_label

            tables = Tables(breakdowns_by_label(results),
                            note=f"benchmark {info.benchmark!r} could not aggregate here ({e}); tables by label")
        with self._lock:
            self._tables[info.run_id] = (key, tables)
        return tables

    def headline(self, info: RunInfo) -> Headline | None:
        """The run's headline score (lvu.runs.headline: the official overall row, as `lvu results
        list` shows it), from its tables (the run page, which has them anyway)."""
        return headline_of_tables(self.tables(info).tables, info.spec.settings.get("subset"))

    def listing(self, runs: list[RunInfo]) -> dict[str, Listed]:
        """Every listed run's headline and count of unreadable replies, as `lvu results list` has
        them, from the store's per-run cache (lvu.runs.summaries.run_listing: the run list reads
        O(runs) rows; a run's results only when its samples changed)."""
        with self.store() as store:
            return run_listing(store, runs)

    def remembered(self, key: Any, make: Callable[[], T]) -> T:
        """`make()`, or what it gave for the same `key` last time (one entry: the comparison page,
        whose key holds its runs' samples versions, so a reload costs nothing and a change recomputes)."""
        with self._lock:
            if self._remembered is not None and self._remembered[0] == key:
                return self._remembered[1]
        value = make()
        with self._lock:
            self._remembered = (key, value)
        return value

    # ---- where a sample's frames come from ---------------------------------------------------------

    def video_of(self, info: RunInfo, record: dict[str, Any]) -> str | None:
        """The sample's video path: from its record (prompt summary `video`), else — records stored
        before the summary kept it — from the run's benchmark, reloaded once per run."""
        video = (record.get("prompt") or {}).get("video")
        if isinstance(video, str) and video:
            return video
        sample_id = record.get("sample_id")
        with self._lock:
            known = self._videos.get(info.run_id)
        if known is None:
            from lvu.runs.engine import benchmark_of

            try:
                samples, _ = benchmark_of(info.spec).load()
                known = {s.id: s.video.path for s in samples}
            except Exception:  # data moved or benchmark unavailable: no frames, the rest still shows
                known = {}
            with self._lock:
                self._videos[info.run_id] = known
        return known.get(str(sample_id))


# ---- a record's prompt, part by part ---------------------------------------------------------------

_FRAME_MARKER = re.compile(r"<frame t=-?[\d.]+>")


def prompt_parts(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The sample's prompt in its interleaved order: {"kind": "frame", "index", "timestamp"} (index
    into the stored frame timestamps, None if not among them), {"kind": "subtitle", "text", "start",
    "end"}, {"kind": "text", "text"}. Older records without `parts` are split at their frame markers
    (cue text then reads as plain text)."""
    prompt = record.get("prompt") or {}
    times = [float(t) for t in record.get("frame_timestamps") or []]
    parts = prompt.get("parts")
    out: list[dict[str, Any]] = []
    if isinstance(parts, list):
        used: set[int] = set()
        for p in parts:
            if "frame" in p:
                t = float(p["frame"])
                index = next((i for i, x in enumerate(times) if i not in used and abs(x - t) < 1e-6), None)
                if index is not None:
                    used.add(index)
                out.append({"kind": "frame", "index": index, "timestamp": t})
            elif "subtitle" in p:
                out.append({"kind": "subtitle", "text": p["subtitle"], "start": p.get("start"), "end": p.get("end")})
            else:
                out.append({"kind": "text", "text": str(p.get("text", ""))})
        return out
    text = prompt.get("text")
    if not isinstance(text, str):
        return [{"kind": "frame", "index": i, "timestamp": t} for i, t in enumerate(times)]
    lines: list[str] = []
    k = 0
    for line in text.split("\n"):
        if _FRAME_MARKER.fullmatch(line) and k < len(times):
            if lines:
                out.append({"kind": "text", "text": "\n".join(lines)})
                lines = []
            out.append({"kind": "frame", "index": k, "timestamp": times[k]})
            k += 1
        else:
            lines.append(line)
    if lines:
        out.append({"kind": "text", "text": "\n".join(lines)})
    return out
