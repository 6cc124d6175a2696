"""The modality ablation with audio (issue 19): runs name their audio, group with their frames and
+subtitles runs, and Video-MME gets Table 5's duration x domain layout with deltas beside the
paper's; plus the answer-letter analysis skipping questions asked without options."""

from __future__ import annotations

import pytest

from analysis_runs import result, store_run
from lvu.analysis import analyses, sweeps
from lvu.analysis.modality_table import videomme_table5
from lvu.analysis.report import build_report
from lvu.analysis.runs import RunData, load_runs, modality_groups
from lvu.errors import LvuError
from lvu.runs.store import Store

DOMAINS = ("Knowledge", "Multilingual")


def videomme_results(correct_of, *, audio: bool = False, subs: bool = False):
    """12 questions: short / medium / long x 2 domains x 2; `correct_of(i)` says which are right."""
    out = []
    for i in range(12):
        duration = ("short", "medium", "long")[i % 3]
        prompt = {"n_frames": 4, "n_subtitles": 2 if subs else 0, **({"n_audio": 1} if audio else {})}
        out.append(result(f"q{i}", correct_of(i), {"duration": duration, "domain": DOMAINS[(i // 3) % 2],
                                                   "sub_category": "Multilingual", "task_type": "OCR Problems"},
                          prompt=prompt, options=["a", "b", "c", "d"], question="?"))
    return out


@pytest.fixture
def runs(tmp_path):
    ids = {
        "frames": store_run(tmp_path, "videomme", "gemini", videomme_results(lambda i: i % 2 == 0),
                            settings={"frames": 8}),
        "subs": store_run(tmp_path, "videomme-sub", "gemini", videomme_results(lambda i: i % 2 == 0 or i < 4, subs=True),
                          settings={"frames": 8}),
        "audio": store_run(tmp_path, "videomme-audio", "gemini", videomme_results(lambda i: i % 2 == 0 or i in (1, 3, 5, 7), audio=True),
                           settings={"frames": 8}),
    }
    store = Store(tmp_path)
    return {k: load_runs(store, [v])[0] for k, v in ids.items()}


def test_runs_name_their_audio_and_group_with_frames_and_subtitles(runs):
    assert [runs[k].modality for k in ("frames", "subs", "audio")] == ["frames", "frames + subtitles", "frames + audio"]
    (group,) = modality_groups(list(runs.values()))
    assert [r.modality for r in group] == ["frames", "frames + subtitles", "frames + audio"]
    a = sweeps.modality(group, n_boot=0)
    assert a.x == ["frames", "frames + subtitles", "frames + audio"]
    summary = dict(a.summary)
    assert summary["audio adds to frames (frames + audio − frames)"].startswith("33.3 points")  # 4 more right of 12
    assert "audio instead of subtitles (frames + audio − frames + subtitles)" in summary


def test_videomme_table5_layout_with_deltas_and_the_papers_table(runs):
    ours, paper = videomme_table5([runs["frames"], runs["subs"], runs["audio"]])
    assert ours.columns[:2] == ["subset", "modality"] and ours.columns[-1] == "Overall"
    rows = {(r[0], r[1]): dict(zip(ours.columns[2:], r[2:])) for r in ours.rows}
    # overall: frames 6/12, +subs adds q1 and q3 (8/12), +audio adds q1, q3, q5, q7 (10/12)
    assert rows[("Overall", "Frames")]["Overall"] == "50.0"
    assert rows[("Overall", "+Subs")]["Overall"] == "66.7 (+16.7)"
    assert rows[("Overall", "+Audios")]["Overall"] == "83.3 (+33.3)"
    # short = q0, q3, q6, q9: frames right on q0, q6; +audio also q3
    assert rows[("Short", "+Audios")]["Overall"] == "75.0 (+25.0)"
    assert rows[("Short", "Frames")]["Film & Television"] == "–"  # no question of that domain
    prow = {(r[0], r[1]): dict(zip(paper.columns[2:], r[2:])) for r in paper.rows}
    assert prow[("Overall", "+Audios")]["Overall"] == "80.4 (+4.7)"
    assert prow[("Long", "+Audios")]["Multilingual"] == "83.3 (+16.6)"
    assert prow[("Medium", "+Subs")]["Artistic Performance"] == "84.3 (-)"  # printed "(-)": no change
    assert prow[("Medium", "+Subs")]["Multilingual"] == "91.7 (-4.1)"  # the paper's "+4.1" is a typo
    assert videomme_table5([runs["subs"], runs["audio"]]) == []  # no frames-only run: no Table 5


def test_the_report_has_the_table5_section(runs):
    report = build_report(list(runs.values()), n_boot=0, plots=False)
    titles = [s.title for s in report.sections]
    assert "Video-MME Table 5: frames, +subtitles, +audio by domain" in titles


def test_letters_skips_questions_asked_without_options(tmp_path):
    # Neptune open-ended: the data has five options and an answer index, the prompt asks without them
    open_ = [result(f"n{i}", False, {"subset": "full"}, answer=2, n_options=5, prediction="A man cooks pasta.",
                    options=list("abcde"), question="What happens?") for i in range(4)]
    run_id = store_run(tmp_path, "neptune-open", "gemini", open_)
    (run,) = load_runs(Store(tmp_path), [run_id])
    with pytest.raises(LvuError, match="no answered multiple-choice samples .an open-ended run"):
        analyses.letters(run, n_boot=0)
    # a mixed JSONL run: the open-ended sample (no options) is left out, the MCQ ones counted
    mixed = [result("m1", True, answer=1, options=["x", "y"], n_options=2, question="?"),
             result("m2", False, answer=0, options=["x", "y"], n_options=2, question="?"),
             result("o1", False, answer=3, n_options=None, prediction="three", question="How many?")]
    mixed[2].n_options = None
    (run,) = load_runs(Store(tmp_path), [store_run(tmp_path, "jsonl", "m", mixed, settings={"data": str(tmp_path / "x.jsonl")})])
    a = analyses.letters(run, n_boot=0)
    shares = dict(zip(a.x, a.series["predictions"]))
    assert shares["outside"].value == 0.0 and a.notes == ["2 answered multiple-choice samples"]
