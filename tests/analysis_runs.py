"""Fixture runs for the analysis and report tests, all made here (nothing downloaded):

- a tiny haystack run by the real `ocr-match` at 1, 4 and 8 frames and as a blind probe;
- runs stored straight from constructed results (`store_run`), for layouts and sweep tags;
- a tiny LongVideoBench release (generated videos, annotated `position`s) run by `random`;
- Video-MME's official example results file scored with `lvu score`'s path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvu.benchmarks.haystack import generate
from lvu.media.testing import make_video
from lvu.api import run
from lvu.runs.engine import make_benchmark, score_saved
from lvu.runs.store import Store
from lvu.types import RunSpec, SampleResult

FIXTURES = Path(__file__).parent / "fixtures"
HAYSTACK_FRAMES = (1, 4, 8)


@dataclass
class HaystackRuns:
    data: Path
    results_dir: Path
    ocr_cache: Path
    by_frames: dict[int, str]
    """frames -> run id of ocr-match."""
    blind: str
    """The blind probe of ocr-match (8 frames asked for, none given)."""


def haystack_runs(root: Path) -> HaystackRuns:
    data = generate(root / "hay", seed=0, n_videos=2, scale=0.25)
    results, cache = root / "results", root / "ocr"
    common = {"results_dir": results, "show_progress": False, "report": False, "frame_cache": False}
    by_frames = {f: run("haystack", "ocr-match", settings={"data": str(data), "frames": f},
                        model_args={"cache": str(cache)}, **common).run_id for f in HAYSTACK_FRAMES}
    blind = run("haystack", "blind", settings={"data": str(data), "frames": 8},
                model_args={"base": "ocr-match", "base.cache": str(cache)}, **common).run_id
    return HaystackRuns(data, results, cache, by_frames, blind)


def store_run(results_dir: Path, benchmark: str, model: str, results: list[SampleResult], *,
              settings: dict[str, Any] | None = None, model_args: dict[str, Any] | None = None,
              env: dict[str, Any] | None = None) -> str:
    """Store constructed results as a finished run whose spec holds the benchmark's effective settings."""
    effective = make_benchmark(benchmark, settings).settings  # constructed records: no data to fingerprint
    spec = RunSpec(benchmark=benchmark, model=model, model_args=model_args or {}, settings=effective)
    store = Store(results_dir)
    try:
        run_id = store.begin_run(spec, {"lvu": "test", **(env or {})})
        for i, r in enumerate(results):
            store.put(run_id, r, i)
        store.finish_run(run_id)
    finally:
        store.close()
    return run_id


def result(sid: str, correct: bool, labels: dict | None = None, *, answer: int = 0, n_options: int = 4,
           prediction: int | str | None = None, **kw: Any) -> SampleResult:
    """A scored multiple-choice record; the prediction defaults to the answer when correct."""
    if prediction is None:
        prediction = answer if correct else (answer + 1) % n_options
    return SampleResult(sample_id=sid, labels=labels or {}, answer=answer, n_options=n_options, prediction=prediction,
                        score=float(correct), correct=correct, **kw)


# ---- LongVideoBench: a tiny release with annotated referred positions ------------------------------

LVB_VIDEO = {"seconds": 20.0, "fps": 10}  # 200 frames: position p lies at depth p / 200
LVB_POSITIONS = {"q0": [10], "q1": [50, 70], "q2": [100], "q3": [150], "q4": [190], "q5": [0, 199]}
"""Referred frame numbers; their mean over 200 frames: 5%, 30%, 50%, 75%, 95%, 49.75%."""


def lvb_release(root: Path) -> Path:
    (root / "videos").mkdir(parents=True)
    make_video(root / "videos" / "vidA", seconds=LVB_VIDEO["seconds"], fps=LVB_VIDEO["fps"], gop=10, size=(64, 48))
    records = [{"video_id": "vidA", "question": f"What happens in {qid}?", "candidates": ["a", "b", "c", "d"],
                "correct_choice": i % 4, "position": pos, "question_category": "T2E", "level": "L1-Perception",
                "id": qid, "video_path": "vidA.mp4", "duration_group": 60, "duration": LVB_VIDEO["seconds"],
                "starting_timestamp_for_subtitles": 0}
               for i, (qid, pos) in enumerate(LVB_POSITIONS.items())]
    (root / "lvb_val.json").write_text(json.dumps(records), encoding="utf-8")
    return root


# ---- Video-MME: the official example results file, scored as `lvu score` does ----------------------


def videomme_results(benchmark: str = "videomme", replies: dict[str, str] | None = None) -> list[SampleResult]:
    """The official output_test_template.json scored by `benchmark`; `replies` replaces the
    responses of those question ids ("right" = the correct letter): a second "model"."""
    bench = make_benchmark(benchmark)
    pairs = bench.read_predictions(FIXTURES / "videomme_output_test_template.json")
    replies = replies or {}
    pairs = [(s, ("ABCD"[s.answer] if replies[s.id] == "right" else replies[s.id]) if s.id in replies else text)
             for s, text in pairs]
    return score_saved(bench, pairs)
