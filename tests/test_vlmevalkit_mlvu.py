"""MLVU under `compat=vlmevalkit` (= vlmevalkit@e8e78f05) and `compat=vlmevalkit@296425e2` gives the
numbers VLMEvalKit's own code gives at that commit (issue #32 items 4, 5, 6), and `mlvu-literal`
(item 8).

How the expected numbers were obtained: VLMEvalKit has no PyPI package, so its files were taken
from github.com/open-compass/VLMEvalKit at each commit (e8e78f05 and 296425e2: vlmeval/dataset/mlvu.py,
video_concat_dataset.py, dataset/utils/mlvu.py, dataset/utils/multiple_choice.py, utils/matching_util.py,
unchanged) into a scratch folder, with stubs for what evaluation does not reach (video decoding,
hub download, the judge builder) and VLMEvalKit's smp load/dump (pandas read_excel / read_csv with
its default na_values; xlsxwriter). Each table of rows below was written as VLMEvalKit's MLVU
prediction sheet (MLVU_MCQ's TSV columns, SUB_DATASET, original_index, index, prediction) to
Model_MLVU.xlsx (and .tsv at e8e78f05: the same numbers) and `MLVU('MLVU').evaluate(sheet,
model='exact_matching')` was run under Python 3.11, pandas 3.1.1 (the no-judge path: evaluate()
uses exact matching when no judge API works). The per-row `score` column of its _score sheet and
the success / overall / acc of its result table are the numbers pinned here; lvu reports the
unrounded value that VLMEvalKit rounds (acc and M-Avg to 1 decimal), so the test compares the
printed 1-decimal value.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from lvu.benchmarks.mlvu import Mlvu
from lvu.benchmarks.mlvu_vlmevalkit import API_FAILED
from lvu.errors import LvuError
from lvu.runs.importer import grade_rows
from lvu.runs.saved_files import read_saved
from lvu.scoring.vlmevalkit import FAIL_MSG, UNMATCHED
from lvu.types import Response
from test_bench_mlvu import video, write_release  # noqa: F401  (video: the fixture)
from test_import import lvu, table_rows

E8, OLD = "vlmevalkit", "vlmevalkit@296425e2"
STEMS = {"PQA": ("1_plotQA", "plotQA"), "NQA": ("2_needle", "findNeedle"), "ER": ("3_ego", "ego"),
         "AC": ("4_count", "count"), "AO": ("5_order", "order"), "AR": ("6_anomaly_reco", "anomaly_reco"),
         "TR": ("7_topic_reasoning", "topic_reasoning")}
TASK_TYPE = {"PQA": "plotQA", "NQA": "needle", "ER": "ego", "AC": "count", "AO": "order", "AR": "anomaly_reco",
             "TR": "topic_reasoning"}
NEEDLE = ["In a park", "By the sea shore", "In his office", "At a restaurant"]
FILM = ["Mystery", "Action", "Comedy", "Romance"]
ANOMALY = ["Normal", "Fighting", "Arson", "Robbery"]

# (task, question, candidates, gold index, reply)
ISSUE_ROWS = [
    ("PQA", "Which way does the man go at the end?", ["Toward the bus", "Away from the car", "Into the shop",
                                                     "Up the stairs"], 1,
     "B is correct because the man walks away from the red car in the end"),
    ("PQA", "What does the man hold?", ["A cup", "A phone", "A book", "A bag"], 1, "Answer is B, not C."),
    ("AC", "How many times does the juggling action appear?", ["2", "7", "5", "4"], 1, "Answer is 7"),
    ("AC", "How many cars pass?", ["2", "3", "5", "6"], 0, "The correct answer is: 2"),
    ("NQA", "Where is the senior businessman having a serious conversation on the cell phone?", NEEDLE, 1, FAIL_MSG),
    ("NQA", "What is on the table?", ["A vase", "A lamp", "A clock", "A plate"], 1, "(B) A lamp"),
    ("AO", "Arrange the actions in order.", ["abseiling --> making jewelry", "making jewelry --> abseiling", "a", "b"],
     0, "(A) abseiling --> making jewelry"),
    ("ER", "What did I put in the drawer?", ["keys", "a cup", "a pen", "scissors"], 3, FAIL_MSG),
    ("TR", "What type of film is this?", FILM, 3, "D"),
    ("AR", "Is there anything unusual in this surveillance video?", ANOMALY, 2, "I think it is C"),
]
"""The issue's four replies (rows 1-4), two API failures (5, 8: -1 each) and rows both commits read alike."""

ISSUE_SCORES = {E8: [0, 1, 0, 0, -1, 1, 1, -1, 1, 1], OLD: [1, 0, 1, 1, -1, 1, 1, -1, 1, 1]}
"""VLMEvalKit's _score column for ISSUE_ROWS at e8e78f05 and 296425e2."""
ISSUE_TABLE = {  # (task, success, overall, acc) as VLMEvalKit's result table prints them
    E8: [("PQA", 1, 2, "50.0"), ("NQA", 0, 2, "0.0"), ("ER", -1, 1, "-100.0"), ("AC", 0, 2, "0.0"),
         ("AO", 1, 1, "100.0"), ("AR", 1, 1, "100.0"), ("TR", 1, 1, "100.0"), ("M-Avg", 3, 10, "30.0")],
    OLD: [("PQA", 1, 2, "50.0"), ("NQA", 0, 2, "0.0"), ("ER", -1, 1, "-100.0"), ("AC", 2, 2, "100.0"),
          ("AO", 1, 1, "100.0"), ("AR", 1, 1, "100.0"), ("TR", 1, 1, "100.0"), ("M-Avg", 4, 9, "44.4")],
}

QUOTING_ROWS = [
    ("PQA", "What color is the main male character's coat?", ["Yellow", "Red", "Green", "Blue"], 0,
     "The coat is yellow."),
    ("PQA", "What is the woman carrying?", ["An umbrella", "A basket", "A suitcase", "A dog"], 2,
     "She is carrying a suitcase."),
    ("PQA", "Where do they eat dinner?", ["At home", "In a diner", "On a boat", "In a tent"], 1, "They eat in a diner."),
    ("PQA", "What falls from the shelf?", ["A vase", "A book", "A lamp", "A clock"], 0, "It is a book."),
    ("NQA", "Where is the businessman on the phone?", NEEDLE, 1, "He is by the sea shore."),
    ("NQA", "What does the girl hold?", ["a red kite", "a blue ball", "a green hat", "a yellow cup"], 3,
     "The girl holds a yellow cup."),
    ("NQA", "Where is the dog sleeping?", ["on the sofa", "under the table", "in the garden", "by the door"], 2,
     "The dog sleeps on the sofa."),
    ("ER", "What did I put in the bag?", ["keys", "a cup", "a pen", "scissors"], 3, "I put scissors in it."),
    ("ER", "What did I pick up?", ["a phone", "a towel", "a remote", "a spoon"], 1, "I picked up a towel."),
    ("AC", "How many times does the jumping action appear?", ["1", "2", "3", "4"], 2, "There are 3 of them."),
    ("AC", "How many birds land?", ["1", "2", "3", "4"], 3, "I count 4 birds in total."),
    ("AC", "How many doors open?", ["5", "6", "7", "8"], 0, "The answer: 5 doors."),
    ("AR", "Is there anything unusual in this clip?", ANOMALY, 2, "This shows arson."),
    ("AR", "Does anything odd happen here?", ANOMALY, 1, "It looks like robbery."),
    ("TR", "What genre is this film?", FILM, 3, "It is a romance film."),
    ("TR", "What is the theme of the video?", ["Friendship", "Revenge", "Travel", "Cooking"], 2, "The theme is cooking."),
]
"""Replies quoting option text (the issue's "M-Avg 56.2 vs lvu 75.0" shape): e8e78f05 refuses the
three count replies, longer than twice their options' total length (4 characters)."""

QUOTING_TABLE = {
    E8: [("PQA", 3, 4, "75.0"), ("NQA", 2, 3, "66.7"), ("ER", 2, 2, "100.0"), ("AC", 0, 3, "0.0"),
         ("AR", 1, 2, "50.0"), ("TR", 1, 2, "50.0"), ("M-Avg", 9, 16, "56.2")],
    OLD: [("PQA", 3, 4, "75.0"), ("NQA", 2, 3, "66.7"), ("ER", 2, 2, "100.0"), ("AC", 3, 3, "100.0"),
          ("AR", 1, 2, "50.0"), ("TR", 1, 2, "50.0"), ("M-Avg", 12, 16, "75.0")],
}
"""VLMEvalKit's result table for QUOTING_ROWS (_score: e8e78f05 0 on rows 10-12, else as 296425e2)."""

SHEET_COLUMNS = ["task_type", "prefix", "duration", "video", "question", "answer", "candidates", "SUB_DATASET",
                 "original_index", "index", "prediction"]


def release(root: Path, video_path: Path, rows: list) -> Path:
    files: dict[str, list] = {}
    for i, (task, question, cands, gold, _) in enumerate(rows):
        stem, qtype = STEMS[task]
        files.setdefault(stem, []).append({"video": f"v{i}.mp4", "duration": 3.0, "question": question,
                                           "candidates": cands, "answer": cands[gold], "question_type": qtype})
    return write_release(root, video_path, files)


def sheet_rows(rows: list) -> list[list]:
    """VLMEvalKit's MLVU prediction sheet: MLVU_MCQ's TSV row + SUB_DATASET, original_index, index, prediction."""
    return [[TASK_TYPE[task], f"./MLVU/video/{STEMS[task][0]}", 3.0, f"v{i}.mp4", question, cands[gold], str(cands),
             "MLVU_MCQ", i, i, reply] for i, (task, question, cands, gold, reply) in enumerate(rows)]


def write_sheet(path: Path, rows: list) -> Path:
    if path.suffix == ".xlsx":
        openpyxl = pytest.importorskip("openpyxl")
        book = openpyxl.Workbook()
        for row in [SHEET_COLUMNS, *sheet_rows(rows)]:
            book.active.append(row)
        book.save(path)
        return path
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows([SHEET_COLUMNS, *sheet_rows(rows)])
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


def scored_rows(root: Path, sheet: Path, compat: str) -> list:
    bench = Mlvu(data=str(root), compat=compat)
    saved = read_saved(bench, sheet, "vlmevalkit")
    assert len(saved.rows) == saved.n_rows and not saved.unmatched
    by_id = {r.sample_id: r for r in grade_rows(bench, saved.rows)}
    order = {s.video.path.rsplit("/", 1)[-1]: s.id for s in bench.load()[0]}
    return [by_id[order[f"v{i}.mp4"]] for i in range(len(saved.rows))]


def printed(root: Path, sheet: Path, compat: str) -> dict[str, tuple[str, str]]:
    out = lvu("score", "mlvu", str(sheet), "--format", "vlmevalkit", "--set", f"data={root}", "--set", f"compat={compat}")
    assert out.returncode == 0, out.stdout + out.stderr
    return {name: (n, value) for name, n, value in table_rows(out.stdout)}


def as_printed(table: list) -> dict[str, tuple[str, str]]:
    """VLMEvalKit's (task, success, overall, acc) rows as lvu prints them: (questions, acc)."""
    return {task: (str(overall), acc) for task, _, overall, acc in table}


# ---- item 6: the issue's replies, each commit ----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("compat, suffix", [(E8, ".tsv"), (E8, ".xlsx"), (OLD, ".xlsx")])
def test_the_issue_replies_score_as_vlmevalkit_scores_them(tmp_path, video, compat, suffix):  # noqa: F811
    root = release(tmp_path / "rel", video.path, ISSUE_ROWS)
    sheet = write_sheet(tmp_path / f"Model_MLVU{suffix}", ISSUE_ROWS)
    results = scored_rows(root, sheet, compat)
    assert [r.score for r in results] == ISSUE_SCORES[compat]
    assert all(r.error is None for r in results)
    shown = printed(root, sheet, compat)
    assert {k: shown[k] for k in as_printed(ISSUE_TABLE[compat])} == as_printed(ISSUE_TABLE[compat])


@pytest.mark.slow
@pytest.mark.parametrize("compat", [E8, OLD])
def test_replies_quoting_option_text_m_avg_56_2_at_e8e78f05_and_75_0_at_296425e2(tmp_path, video, compat):  # noqa: F811
    root = release(tmp_path / "rel", video.path, QUOTING_ROWS)
    sheet = write_sheet(tmp_path / "Model_MLVU.xlsx", QUOTING_ROWS)
    shown = printed(root, sheet, compat)
    assert {k: shown[k] for k in as_printed(QUOTING_TABLE[compat])} == as_printed(QUOTING_TABLE[compat])
    methods = [r.prediction for r in scored_rows(root, sheet, compat)[9:12]]
    assert methods == ([None] * 3 if compat == E8 else [2, 3, 0])  # e8e78f05: no option read (its judge's rows)


# ---- the same rules on one sample at a time -------------------------------------------------------


def one(task: str, cands: list[str], gold: int, **extra):
    from lvu.types import Sample, VideoRef

    first = cands.index(cands[gold])
    letters = "ABCDEF"
    return Sample(id=f"{task}_0", benchmark="mlvu", video=VideoRef(path="v.mp4", duration=3.0), question="Q?",
                  options=cands, answer=gold, labels={"task": task},
                  extra={"answer_letter": letters[gold], "answer_first": letters[first], "answer_text": cands[gold],
                         **extra})


@pytest.mark.parametrize("compat", [E8, "vlmevalkit@e8e78f05", OLD])
def test_issue_replies_per_commit(compat):
    """Item 6's replies: e8e78f05 0, 1, 0, 0; 296425e2 1, 0, 1, 1 (ISSUE_SCORES, from VLMEvalKit's code)."""
    want = ISSUE_SCORES[OLD if compat == OLD else E8][:4]
    got = []
    for task, _, cands, gold, reply in ISSUE_ROWS[:4]:
        b, s = Mlvu(compat=compat), one(task, cands, gold)
        got.append(b.score(s, b.extract(s, Response(text=reply))).value)
    assert got == want


@pytest.mark.parametrize("compat", [E8, OLD])
def test_an_api_failure_scores_minus_one(compat):
    b, s = Mlvu(compat=compat), one("NQA", NEEDLE, 1)
    for reply in (FAIL_MSG, f"B) By the sea shore. {FAIL_MSG}"):  # `FAIL_MSG in pred`: before check_ans
        pred = b.extract(s, Response(text=reply))
        score = b.score(s, pred)
        assert (pred.method, score.value, score.correct) == (API_FAILED, -1.0, False)
    assert Mlvu().score(s, Mlvu().extract(s, Response(text=FAIL_MSG))).value == 0.0  # official: just wrong


@pytest.mark.parametrize("compat", [E8, OLD])
@pytest.mark.parametrize("reply", ["N/A", "NA", "None", "null", "NaN", "n/a", "#N/A", "<NA>", ""])
def test_a_reply_pandas_reads_as_nan_is_a_failed_sample(compat, reply):
    """VLMEvalKit (both commits, .xlsx and .tsv): `FAIL_MSG in pred` on the NaN raises TypeError and
    evaluate() stops with no number — lvu stores the sample as failed and says why."""
    b, s = Mlvu(compat=compat), one("NQA", NEEDLE, 1)
    with pytest.raises(LvuError, match=r"VLMEvalKit's MLVU evaluate\(\) stops on this reply: pandas reads .* as NaN"):
        b.extract(s, Response(text=reply))
    assert b.score(s, b.extract(s, Response(text=" N/A"))).value == 0.0  # not the whole cell: text, no letter
    assert Mlvu().extract(s, Response(text=reply)).method == "rule"  # the official mode reads it as text


@pytest.mark.slow
def test_a_nan_reply_in_a_sheet_is_failed_and_the_rest_scored(tmp_path, video):  # noqa: F811
    rows = ISSUE_ROWS[5:7] + [("TR", "What type of film is it?", FILM, 3, "N/A")]
    root = release(tmp_path / "rel", video.path, rows)
    sheet = write_sheet(tmp_path / "Model_MLVU.tsv", rows)
    results = scored_rows(root, sheet, E8)
    assert [r.score for r in results[:2]] == [1.0, 1.0]
    assert results[2].error is not None and "as NaN" in results[2].error and "\n" not in results[2].error
    shown = printed(root, sheet, E8)
    assert shown["TR"] == ("1", "0.0") and shown["M-Avg"] == ("3", "66.7")  # failed: counted wrong


def test_the_reply_is_not_stripped():
    """e8e78f05's length rule counts the spaces VLMEvalKit's sheet keeps: reply '   2     ' to a count
    question (options 1-4, gold 2) scored 0 by its evaluate() (.xlsx and .tsv), '2' scored 1."""
    b, s = Mlvu(compat=E8), one("AC", ["1", "2", "3", "4"], 1)
    assert [b.score(s, b.extract(s, Response(text=t))).value for t in ("   2     ", "2")] == [0.0, 1.0]


@pytest.mark.parametrize("compat", [E8, OLD])
def test_unmatched_replies_are_exactly_the_rows_its_judge_reads(compat):
    from lvu.scoring.vlmevalkit_judge import asks_judge

    b = Mlvu(compat=compat)
    for task, _, cands, gold, reply in ISSUE_ROWS + QUOTING_ROWS:
        s = one(task, cands, gold)
        pred = b.extract(s, Response(text=reply))
        asked = asks_judge(reply, cands, s.extra["answer_letter"], commit=b.harness.commit)
        assert (pred.method == UNMATCHED) == asked, reply
        task_ = b.choice_task(s, pred, reply, llm_extract=True)  # lvu's --llm-extract never adds rows here
        assert (task_ is not None) == asked and (task_ is None or (task_.kind, task_.commit) == ("vlmevalkit-choice",
                                                                                                 b.harness.commit))
        if pred.method == UNMATCHED:
            assert pred.value is None and b.score(s, pred).correct is False  # exact_matching: 'Z', wrong


def test_a_judge_letter_is_compared_with_the_first_equal_candidate():
    from lvu.types import Prediction

    b, s = Mlvu(compat=E8), one("PQA", ["Red", "Blue", "Red", "Green"], 2)  # check_ans wants C, the judge A
    assert [b.score(s, Prediction(value=i, method="llm-judge")).correct for i in (0, 2)] == [True, False]
    assert Mlvu().score(s, Prediction(value=2, method="llm-judge")).correct is True  # official: the last (C)


# ---- item 8: mlvu-literal ------------------------------------------------------------------------------


def test_mlvu_literal_compares_the_reply_as_given():
    s = one("TR", FILM, 2)
    got = {c: Mlvu(compat=c).score(s, Mlvu(compat=c).extract(s, Response(text=" C \n"))).value
           for c in ("official", "mlvu-literal")}
    assert got == {"official": 1.0, "mlvu-literal": 0.0}
    literal = Mlvu(compat="mlvu-literal")
    assert literal.score(s, literal.extract(s, Response(text=" C) Comedy"))).value == 1.0  # the char before ")"
    assert literal.score(s, literal.extract(s, Response(text="C"))).value == 1.0
