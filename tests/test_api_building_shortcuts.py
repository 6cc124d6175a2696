"""The build shortcuts as library calls — `build_select`, `build_convert`, `build_ladder`, the rules of
a selection, and the one-line errors of `build_neptune`, `build_subsets` and `build_needle` — each
returning what its `lvu build ...` command prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lvu.api import (BuildResult, build_convert, build_ladder, build_needle, build_neptune, build_select,
                     build_subsets, rules_text, selection_rules)
from lvu.errors import LvuError
from select_videos import corpus
from test_build_convert import TEMPORAL, ucf  # noqa: F401  (the UCF-Crime fixture)
from test_build_ladder import mlvu_release
from test_headline_and_limit import invoke


@pytest.fixture(autouse=True)
def _offline(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LVU_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "200")


def test_selection_rules_as_text_are_what_print_rules_prints():
    rules = selection_rules("videomme")
    cli = invoke("build", "select", "--rules", "videomme", "--print-rules")
    assert cli.exit_code == 0, cli.output
    assert cli.stdout == rules_text(rules) and selection_rules(rules.model_dump(mode="json")) == rules


def test_build_select_writes_the_summary_the_command_prints(tmp_path):
    videos = corpus(tmp_path / "videos", long=False)
    notes: list[str] = []
    done = build_select(videos, tmp_path / "sel", "neptune", as_of="2025-06-01", show_progress=False,
                        on_note=notes.append)
    assert isinstance(done, BuildResult) and done.status == "complete"
    assert notes and notes[0].startswith("lvu build select: ") and "rules neptune, as of 2025-06-01" in notes[0]
    summary = json.loads(Path(done.written["summary"]).read_text())
    cli = invoke("build", "select", videos, "--rules", "neptune", "--as-of", "2025-06-01", "-o", tmp_path / "sel", "-q")
    assert cli.exit_code == 0, cli.output
    assert f"{summary['rules']}: {summary['selected']} of {summary['videos']} video(s) selected" in cli.stdout


def test_build_convert_returns_the_build_and_hands_over_the_records_it_cannot_convert(ucf, tmp_path):  # noqa: F811
    inputs = [ucf / TEMPORAL, ucf / "Anomaly_Train.txt", ucf / "videos"]
    seen: list[tuple[int, int]] = []
    done = build_convert("ucf-crime", inputs, tmp_path / "ar", options={"min_seconds": 4, "seed": 0},
                         show_progress=False, on_problems=lambda problems, n: seen.append((len(problems), n)))
    assert done.status == "complete" and seen and 0 < seen[0][0] < seen[0][1]
    cli = invoke("build", "convert", "ucf-crime", *inputs, "-o", tmp_path / "ar", "--min-seconds", "4", "-q")
    assert cli.exit_code == 0, cli.output
    assert f"{done.written['samples']} question(s) → {done.written['jsonl']}" in cli.stdout
    with pytest.raises(LvuError, match=r"no record could be converted \(1 bad, 1 missing, 7 short\)"):
        build_convert("ucf-crime", inputs, tmp_path / "none", options={"min_seconds": 400}, show_progress=False)
    assert not (tmp_path / "none").exists()


def test_build_ladder_returns_what_lvu_build_ladder_prints(tmp_path):
    release = mlvu_release(tmp_path / "mlvu", [3.0, 5.0])
    result = build_ladder([release], tmp_path / "out", "4,6")
    assert [s.id for s in result.samples] == ["NQA_0@6s"] and result.kept == {("NQA", 6.0): 1}
    cli = invoke("build", "ladder", release, "-o", tmp_path / "out", "--lengths", "4,6")
    assert cli.exit_code == 0, cli.output
    assert f"{len(result.samples)} samples → {result.jsonl}" in cli.stdout
    with pytest.raises(LvuError, match="--lengths"):
        build_ladder([release], tmp_path / "bad", "four")


def test_the_shortcuts_refuse_bad_arguments_in_one_line_before_any_work(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    with pytest.raises(LvuError, match="--captioner vlm needs --vlm MODEL"):
        build_neptune(videos, tmp_path / "nep", llm="random", options={"captioner": "vlm"})
    with pytest.raises(LvuError, match=r"--threshold 4: must be from 1 to --seeds \(3\)"):
        build_subsets(tmp_path, "random", threshold=4)
    with pytest.raises(LvuError, match="no neptune_full.json"):
        build_subsets(tmp_path, "random", show_progress=False)
    with pytest.raises(LvuError, match="--workers 0: must be at least 1"):
        build_needle(videos, videos, tmp_path / "n", options={}, workers=0)
    with pytest.raises(LvuError, match="--per-cell"):
        build_needle(videos, videos, tmp_path / "n", options={"per_cell": 0})
    assert not any((tmp_path / name).exists() for name in ("nep", "n"))
