"""`lvu data check`: what a benchmark's data holds (counts) and what is wrong with it (problems).

    checked = check_data(make_benchmark("jsonl", {"data": "q.jsonl"}))
    print("\\n".join(checked.lines()))          # counts, then one line per problem, then OK / N problem(s)
    checked.as_json()                           # the same, for --json

The counts come from the loaded samples: questions (and bad records), distinct videos found
and missing, options per question, label values, subtitle files found and missing. The problems
are the benchmark's own `check()` (the generic checks of benchmarks/base.py plus each benchmark's
counts against its paper), one line each, exactly the lines a run stores for its data errors.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import Benchmark

SHOWN_VALUES = 6
"""Label values listed per key; the rest are counted as '+N more'."""


@dataclass
class DataCheck:
    name: str
    """What was checked, as the user named it (`q.jsonl`, `videomme`)."""
    questions: int = 0
    bad_records: int = 0
    """Records that could not become a sample (counted in `questions`)."""
    videos_found: int = 0
    videos_missing: int = 0
    options: Counter[int] = field(default_factory=Counter)
    """Options per question -> questions (0: open-ended)."""
    labels: dict[str, Counter[str]] = field(default_factory=dict)
    subtitles_found: int = 0
    subtitles_missing: int = 0
    without_subtitles: int = 0
    """Questions whose sample names no subtitle file."""
    problems: list[str] = field(default_factory=list)

    @property
    def videos(self) -> int:
        return self.videos_found + self.videos_missing

    def lines(self) -> list[str]:
        """The counts, then the problems one per line, then '<name>: OK' or '<name>: N problem(s)'."""
        loaded = self.questions - self.bad_records
        out = [f"questions  {self.questions}" + (f" ({self.bad_records} bad record(s): not loaded)" if self.bad_records else ""),
               f"videos     {self.videos} distinct: {self.videos_found} found, {self.videos_missing} missing",
               "options    " + (" · ".join(f"{n} options: {k}" if n else f"open-ended: {k}"
                                           for n, k in sorted(self.options.items())) or "-")]
        for key, values in self.labels.items():
            shown = ", ".join(f"{v} {n}" for v, n in values.most_common(SHOWN_VALUES))
            more = f", +{len(values) - SHOWN_VALUES} more" if len(values) > SHOWN_VALUES else ""
            out.append(f"label      {key}: {shown}{more}")
        files = self.subtitles_found + self.subtitles_missing
        if files:
            out.append(f"subtitles  {files} file(s): {self.subtitles_found} found, {self.subtitles_missing} missing"
                       + (f"; {self.without_subtitles} of {loaded} questions have none" if self.without_subtitles else ""))
        else:
            out.append("subtitles  none named")
        out += self.problems
        out.append(f"{self.name}: {len(self.problems)} problem(s)" if self.problems else f"{self.name}: OK")
        return out

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": not self.problems, "questions": self.questions, "bad_records": self.bad_records,
                "videos": self.videos, "videos_found": self.videos_found, "videos_missing": self.videos_missing,
                "options": {str(n): k for n, k in sorted(self.options.items())},
                "labels": {key: dict(values.most_common()) for key, values in self.labels.items()},
                "subtitles_found": self.subtitles_found, "subtitles_missing": self.subtitles_missing,
                "without_subtitles": self.without_subtitles, "problems": self.problems}


def check_data(bench: Benchmark, name: str | None = None) -> DataCheck:
    """Counts of `bench`'s loaded data and the problems its `check()` finds."""
    samples, bad = bench.loaded()
    out = DataCheck(name=name or bench.name, questions=len(samples) + len(bad), bad_records=len(bad))
    videos = {s.video.path for s in samples}
    out.videos_found = sum(1 for v in videos if Path(v).exists())
    out.videos_missing = len(videos) - out.videos_found
    out.options = Counter(len(s.options) for s in samples)
    labels: dict[str, Counter[str]] = {}
    for s in samples:
        for key, value in s.labels.items():
            for v in value if isinstance(value, list) else [value]:
                labels.setdefault(key, Counter())[str(v)] += 1
    out.labels = dict(sorted(labels.items()))
    subtitles = {s.subtitles.path for s in samples if s.subtitles is not None}
    out.subtitles_found = sum(1 for p in subtitles if Path(p).exists())
    out.subtitles_missing = len(subtitles) - out.subtitles_found
    out.without_subtitles = sum(1 for s in samples if s.subtitles is None)
    out.problems = bench.check()
    return out
