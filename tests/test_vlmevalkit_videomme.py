"""Video-MME under `compat=vlmevalkit` scores a VLMEvalKit prediction sheet as VLMEvalKit's own
`evaluate()` does (issue 32, items 4 and 5, and the `vlmevalkit@e8e78f05` pin).

How the expected numbers were obtained. VLMEvalKit has no PyPI release; its code was read from
github.com/open-compass/VLMEvalKit at commit e8e78f05 (the default `vlmevalkit`) and, for the
comparison, 296425e2. In a scratch folder these files were copied from each commit unchanged:
vlmeval/dataset/videomme.py, vlmeval/dataset/utils/videomme.py, vlmeval/dataset/utils/multiple_choice.py,
vlmeval/utils/matching_util.py, vlmeval/smp/file.py, vlmeval/smp/log.py and vlmeval/smp/vlm.py; the
rest was stubbed (huggingface_hub, portalocker, decord, validators, the judge builder — exact
matching only, as without an API key —, `VideoBaseDataset`, and the helpers of vlmeval/smp/misc.py).
A pandas DataFrame with the columns of VLMEvalKit's Video-MME TSV (`COLUMNS`) held each reply of
`REPLIES` four times, with gold A, B, C and D (`sheet_rows` builds the same rows); VLMEvalKit's own
`dump()` wrote it as `M_Video-MME.tsv` and as `M_Video-MME.xlsx` (xlsxwriter), and
`VideoMME.evaluate(path)` scored each file. `SCORES` holds the `score` column of the `_score` file it
wrote (one digit per gold A-D), `RATING` the `overall` entries of the rating it returned. The .tsv
and the .xlsx gave the same numbers, with pandas 3.1.1 and 2.2.3 alike, and 296425e2 (which reads
only .xlsx) gave the same numbers as e8e78f05. The .tsv `dump()` wrote is byte-identical to the one
`sheet_text` writes with the csv module (checked in the scratch run).

What the numbers show: pandas reads a whole-cell `N/A`, `NA`, `#N/A`, `<NA>`, ... back as NaN, so
`evaluate()` sees the text "nan" — no letter — and its `extract_option` fallback answers 'Z' (wrong);
the API failure message is scored as text (`extract_characters_regex` finds the A of "API"), no row
is skipped or marked. Under `official` that message stays a failed sample.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.api.scoring import score
from lvu.scoring.vlmevalkit import FAIL_MSG

COMPATS = ("vlmevalkit", "vlmevalkit@e8e78f05", "vlmevalkit@296425e2")
"""296425e2 gave the same per-row scores and rating as e8e78f05 on the .xlsx sheet (its evaluate() refuses .tsv)."""
REPLIES = [
    # pandas' default na_values: the whole cell comes back as NaN
    "N/A", "NA", "None", "null", "NaN", "n/a", "#N/A", "<NA>", "",
    "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "NULL", "nan",
    # VLMEvalKit's API failure message
    FAIL_MSG,
    # near misses of na_values: read as text
    " N/A", "N/A.", "NA\n", "n/a, B",
    # ordinary and adversarial replies
    "A", "B. Two dogs.", "The answer is C", "Answer: D", "(B)",
    "I cannot tell", "Cannot determine the answer", "<think>A</think>B",
    "The best answer is: B, not A", "Failed to obtain answer: timeout D",
    "after watching the whole clip carefully i believe the right choice is the second one",
]
NAN = "0000"
SCORES = {
    **{r: NAN for r in REPLIES[:19]},
    FAIL_MSG: "1000", " N/A": "1000", "N/A.": "1000", "NA\n": "1000", "n/a, B": "0100", "A": "1000",
    "B. Two dogs.": "0100", "The answer is C": "0010", "Answer: D": "0001", "(B)": "0100", "I cannot tell": "0000",
    "Cannot determine the answer": "0010", "<think>A</think>B": "1000", "The best answer is: B, not A": "0100",
    "Failed to obtain answer: timeout D": "0001",
    "after watching the whole clip carefully i believe the right choice is the second one": "0000",
}
"""VLMEvalKit e8e78f05 `VideoMME.evaluate`: per reply, the score for gold A, B, C, D."""
RATING = {"short": "0.104", "medium": "0.104", "long": "0.091", "overall": "0.100"}
"""Its rating's `overall` per duration (get_dimension_rating: the mean of the scores, '.3f')."""

COLUMNS = ["index", "video", "video_path", "duration", "domain", "candidates", "sub_category", "task_type",
           "subtitle_path", "question", "answer", "prediction"]
DURATIONS = ["short", "medium", "long"]
DOMAINS = [("Knowledge", "Humanity & History"), ("Film & Television", "Documentary"),
           ("Sports Competition", "Football"), ("Artistic Performance", "Stage Play"),
           ("Life Record", "Daily Life"), ("Multilingual", "Multilingual")]
TASKS = ["Counting Problem", "OCR Problems", "Temporal Reasoning", "Action Recognition"]
OPTIONS = ["A. A cat.", "B. Two dogs.", "C. Three birds.", "D. Nothing."]


def sheet_rows() -> list[list]:
    """Reply i, gold j: VLMEvalKit's TSV row (index = 4i + j) with the prediction."""
    rows = []
    for i, reply in enumerate(REPLIES):
        vid = f"vid{i:08d}"
        domain, sub = DOMAINS[i % 6]
        for j, gold in enumerate("ABCD"):
            rows.append([4 * i + j, vid, f"./video/{vid}.mp4", DURATIONS[i % 3], domain, str(OPTIONS), sub, TASKS[j],
                         f"./subtitle/{vid}.srt", f"What happens in clip {i}-{j}?", gold, reply])
    return rows


def sheet_text() -> str:
    """The .tsv as VLMEvalKit's dump() writes it (pandas to_csv, sep='\\t', quoting=csv.QUOTE_ALL)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(sheet_rows())
    return buffer.getvalue()


def release(root: Path) -> Path:
    """The same questions as a Video-MME release (the grouped JSON lvu reads)."""
    records = []
    for i, _ in enumerate(REPLIES):
        domain, sub = DOMAINS[i % 6]
        questions = [{"question_id": f"{i:03d}-{j + 1}", "task_type": TASKS[j], "question": f"What happens in clip {i}-{j}?",
                      "options": OPTIONS, "answer": gold} for j, gold in enumerate("ABCD")]
        records.append({"video_id": f"{i:03d}", "duration": DURATIONS[i % 3], "domain": domain, "sub_category": sub,
                        "url": f"https://www.youtube.com/watch?v=vid{i:08d}", "videoID": f"vid{i:08d}",
                        "questions": questions})
    root.mkdir(parents=True, exist_ok=True)
    (root / "videomme.json").write_text(json.dumps(records))
    return root


def per_reply(result) -> dict[str, str]:
    """{reply: the four scores for gold A-D} of a ScoreResult, in VLMEvalKit's digits (a failed sample: 'F')."""
    by_id = {s.sample_id: ("F" if s.error else str(int(s.score or 0))) for s in result.samples}
    return {reply: "".join(by_id[f"{i:03d}-{j + 1}"] for j in range(4)) for i, reply in enumerate(REPLIES)}


def duration_rows(result) -> dict[str, str]:
    """lvu's short / medium / long / overall accuracy as VLMEvalKit prints it (a fraction, '.3f')."""
    rows = {name: value for name, _, value in result.tables[0].rows}
    return {d: f"{rows[d] / 100:.3f}" for d in RATING}


@pytest.fixture
def sheet(tmp_path) -> Path:
    path = tmp_path / "Qwen2-VL-7B-Instruct_Video-MME_8frame.tsv"
    path.write_text(sheet_text(), encoding="utf-8")
    return path


def test_the_expected_numbers_cover_every_reply():
    assert list(SCORES) == REPLIES and len(set(REPLIES)) == len(REPLIES)
    assert sum(d.count("1") for d in SCORES.values()) == round(float(RATING["overall"]) * 4 * len(REPLIES))


@pytest.mark.parametrize("compat", COMPATS)
def test_a_vlmevalkit_tsv_scores_as_its_evaluate(tmp_path, sheet, compat):
    result = score("videomme", sheet, settings={"data": str(release(tmp_path / "release")), "compat": compat})
    assert result.saved.unmatched == [] and len(result.samples) == 4 * len(REPLIES)
    assert per_reply(result) == SCORES  # N/A, NA, ... gold A: 0 (was 1); the API failure message gold A: 1
    assert duration_rows(result) == RATING


def test_a_vlmevalkit_xlsx_scores_as_its_evaluate(tmp_path):
    openpyxl = pytest.importorskip("openpyxl", reason="openpyxl is not installed: lvu reads .xlsx sheets with it "
                                   "(pip install 'lvu[xlsx]'); the .tsv test covers the same rows")
    path = tmp_path / "Qwen2-VL-7B-Instruct_Video-MME_8frame.xlsx"
    book = openpyxl.Workbook()
    book.active.append(COLUMNS)
    for row in sheet_rows():
        book.active.append(row)  # index a number, every other cell a string, as xlsxwriter writes pandas' frame
    book.save(path)
    result = score("videomme", path, settings={"data": str(release(tmp_path / "release")), "compat": "vlmevalkit"})
    assert per_reply(result) == SCORES and duration_rows(result) == RATING


def test_official_reads_the_text_and_keeps_the_api_failure_a_failed_sample(tmp_path, sheet):
    result = score("videomme", sheet, settings={"data": str(release(tmp_path / "release"))})
    got = per_reply(result)
    assert got[FAIL_MSG] == "FFFF"  # lvu's own reading of the message: the model call failed
    assert got["N/A"] == "1000" and got["#N/A"] == "1000"  # parse_answer reads the A of the text
    assert got["None"] == "0000"


def lvu(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "lvu.cli", *args], capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_the_cli_prints_vlmevalkits_overall_and_names_its_modes(tmp_path, sheet):
    root = str(release(tmp_path / "release"))
    out = lvu("score", "videomme", str(sheet), "--root", root, "--set", "compat=vlmevalkit")
    assert out.returncode == 0, out.stderr
    overall = [line for line in out.stdout.splitlines() if line.strip("│ ").startswith("overall")][0]
    assert overall.split("│")[-2].strip() == f"{float(RATING['overall']) * 100:.1f}", overall
    bad = lvu("score", "videomme", str(sheet), "--root", root, "--set", "compat=vlmevalkit@abc")
    assert bad.returncode != 0 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        "error: compat='vlmevalkit@abc' is unknown for videomme — its VLMEvalKit modes: vlmevalkit = VLMEvalKit "
        "@e8e78f05; vlmevalkit@e8e78f05 = VLMEvalKit @e8e78f05; vlmevalkit@296425e2 = VLMEvalKit @296425e2"]
