"""`lvu build ladder`: MLVU's Time-ladder cuts. A question is kept at a length only when its evidence
lies inside the cut; each cut is the first L seconds, frame for frame, its subtitles clipped. The MLVU
release (no evidence positions) is refused with the reason; release records that carry a span are cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lvu.benchmarks.jsonl import read_samples
from lvu.construct.ladder import build_ladder, load_sources
from lvu.construct.needle_media import load_needles
from lvu.construct.needle_pipeline import run_build
from lvu.construct.needles import NeedleSettings, find_backgrounds, plan_build
from lvu.errors import LvuError
from lvu.media.subtitles import load_cues
from needle_videos import FPS, barcode_background, decoded


@pytest.fixture(scope="module")
def needle_build(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ladder")
    (root / "bg").mkdir()
    barcode_background(root / "bg" / "walk.mp4", seconds=30)
    (root / "needles.jsonl").write_text("".join(json.dumps({"text": w, "seconds": 1}) + "\n" for w in ("ONE", "TWO")))
    s = NeedleSettings(depths=(10.0, 40.0, 90.0), lengths=(30.0,))
    return run_build(plan_build(find_backgrounds(root / "bg"), load_needles(root / "needles.jsonl"), s),
                     root / "out", s).jsonl


@pytest.mark.slow
def test_questions_are_kept_where_their_needle_fits_and_cuts_are_the_first_seconds(needle_build, tmp_path):
    source = read_samples(needle_build)[0]
    result = build_ladder(load_sources([needle_build]), tmp_path / "ladder", (10.0, 20.0))
    ends = {s.id: s.extra["needles"][0]["end"] for s in source}
    want = sorted(f"{sid}@{L:g}s" for sid, end in ends.items() for L in (10.0, 20.0) if end <= L)
    samples = read_samples(result.jsonl)[0]
    assert sorted(s.id for s in samples) == want and len(want) == 3  # 10 % fits both, 40 % only 20 s, 90 % none
    assert result.kept == {("nqa", 10.0): 1, ("nqa", 20.0): 2} and result.outside == {("nqa", 10.0): 2, ("nqa", 20.0): 1}
    for s in samples:
        original = next(o for o in source if o.id == s.extra["ladder"]["from"])
        full, _, _ = decoded(Path(original.video.path))
        cut, audio, seconds = decoded(Path(s.video.path))
        length = float(s.labels["length"][:-1])
        assert seconds == length and cut == full[: round(length * FPS)]  # frame for frame
        assert audio is not None and abs(len(audio) - length * 16000) < 1024
        n = s.extra["needles"][0]
        assert s.labels["depth"] == f"{round(n['start'] / (length - (n['end'] - n['start'])) * 100, 1):g}%"
        cues = load_cues(s.subtitles.path)
        assert cues and all(c.end <= length for c in cues)
        assert [(c.start, c.text) for c in cues] == [(c.start, c.text) for c in load_cues(original.subtitles.path)
                                                     if c.start < length - 0.1]
        assert s.question == original.question and s.answer == original.answer


def mlvu_release(root: Path, evidence: list[float] | None) -> Path:
    (root / "json").mkdir(parents=True)
    (root / "video" / "2_needle").mkdir(parents=True)
    barcode_background(root / "video" / "2_needle" / "needle_1.mp4", seconds=12, audio=False, cues=None)
    record = {"video": "needle_1.mp4", "duration": 12.0, "question": "What is shown?", "question_type": "findNeedle",
              "candidates": ["a", "b", "c", "d"], "answer": "b"}
    if evidence:
        record["evidence"] = evidence
    (root / "json" / "2_needle.json").write_text(json.dumps([record]))
    return root


def test_the_mlvu_release_has_no_evidence_positions_and_says_so(tmp_path):
    with pytest.raises(LvuError, match=r"no question has an evidence position \(NQA 1\) — the MLVU release .*"
                                       r"lvu build needle"):
        build_ladder(load_sources([mlvu_release(tmp_path / "mlvu", None)]), tmp_path / "out")


def test_mlvu_records_that_carry_a_span_are_cut(tmp_path):
    result = build_ladder(load_sources([mlvu_release(tmp_path / "mlvu", [3.0, 5.0])]), tmp_path / "out", (4.0, 6.0))
    (sample,) = result.samples
    assert sample.id == "NQA_0@6s" and sample.labels["task"] == "NQA" and sample.answer == 1
    assert decoded(Path(sample.video.path))[0] == list(range(60))
