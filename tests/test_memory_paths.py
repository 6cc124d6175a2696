"""The memory-lean read paths (benchmarks/store_scale.py measures them): a jsonl file is parsed one
line at a time, and aggregation reads records without their display fields. What must hold: the
same samples and the same tables as the full paths, and line splitting exactly at newlines."""

from __future__ import annotations

import json
from pathlib import Path

import fakes  # noqa: F401  (registers the fake benchmark and models)
from lvu.api import run
from lvu.benchmarks.jsonl import read_samples
from lvu.runs.grading import make_benchmark
from lvu.runs.store import Store


def test_a_line_separator_inside_a_json_string_stays_in_its_record(tmp_path: Path) -> None:
    # U+2028 is valid raw inside a JSON string; str.splitlines() used to cut the record there,
    # turning one good sample into two unparsable lines.
    path = tmp_path / "q.jsonl"
    rows = [{"id": "a", "video": "v.mp4", "question": "Line one\u2028line two?", "options": ["x", "y"], "answer": 0},
            {"id": "b", "video": "v.mp4", "question": "Plain?", "options": ["x", "y"], "answer": 1}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in rows), encoding="utf-8")
    samples, bad = read_samples(path)
    assert bad == []
    assert [s.id for s in samples] == ["a", "b"]
    assert samples[0].question == "Line one\u2028line two?"


def test_bad_lines_keep_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    good = json.dumps({"id": "a", "video": "v.mp4", "question": "Q?", "options": ["x", "y"], "answer": 0})
    path.write_text(f"{good}\n\n{{not json\n", encoding="utf-8")
    samples, bad = read_samples(path)
    assert [s.id for s in samples] == ["a"]
    assert [b.id for b in bad] == [f"{path}:3"]


def test_scoring_results_drop_display_fields_and_aggregate_the_same(tmp_path: Path) -> None:
    summary = run("fake", "fake-follow", results_dir=tmp_path, show_progress=False, report=False, frame_cache=False)
    store = Store(tmp_path)
    try:
        full = store.results(summary.run_id)
        lean = store.scoring_results(summary.run_id)
        assert [r.sample_id for r in lean] == [r.sample_id for r in full]
        assert any(r.prompt for r in full) and all(not r.prompt and r.question is None for r in lean)
        for a, b in zip(full, lean):
            assert b.model_dump(exclude=set(Store.DISPLAY_FIELDS)) == a.model_dump(exclude=set(Store.DISPLAY_FIELDS))
        bench = make_benchmark("fake", {})
        assert [t.model_dump() for t in bench.aggregate(lean)] == [t.model_dump() for t in bench.aggregate(full)]
    finally:
        store.close()
