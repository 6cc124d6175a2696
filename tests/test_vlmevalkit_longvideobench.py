"""LongVideoBench under `compat=vlmevalkit` scores a VLMEvalKit prediction sheet as VLMEvalKit's own
`LongVideoBench.evaluate()` does (issue #32 items 4 and 5), and its pins (`vlmevalkit@e8e78f05`,
`vlmevalkit@296425e2`) differ only where that commit's code differs.

The sheet (`write_release`, `write_tsv`, `write_xlsx`): every reply of REPLIES once per gold letter
A-E (5-option questions, 125 rows) in VLMEvalKit's layout: lvb_val.json's columns, then `index`
(0..124) and `video` (its `generate_tsv`), then `prediction` (its inference), written as its `dump`
writes a .tsv (`to_csv(sep="\\t", quoting=csv.QUOTE_ALL)`, byte for byte) and as an .xlsx.

How the expected numbers (VLMEVALKIT_E8E78F05, VLMEVALKIT_296425E2) were obtained: the sheets this
module writes were handed to `vlmeval.dataset.longvideobench.LongVideoBench.evaluate(sheet)` (the
default judge `exact_matching`) of github.com/open-compass/VLMEvalKit at e8e78f05 (.tsv and .xlsx)
and at 296425e2 (.xlsx: that commit's `evaluate()` asserts an .xlsx), run from `git archive` copies of
vlmeval/dataset/longvideobench.py, vlmeval/dataset/utils/{longvideobench,multiple_choice}.py,
vlmeval/utils and vlmeval/smp in a scratch folder with pandas 3.1.1 (e8e78f05 also with pandas
2.2.3: the same numbers), openpyxl 3.1.5 and xlsxwriter 3.3.1 (third-party
imports that evaluate() never calls — huggingface_hub, PIL, portalocker, sty, validators, filelock,
at 296425e2 also requests, tqdm, matplotlib, tabulate, rich — and the package __init__s of vlmeval,
vlmeval.dataset, vlmeval.dataset.utils and VideoBaseDataset replaced by empty stubs). Both commits printed the
same `_score` sheets and `_rating.json`; the same numbers came from the sheets VLMEvalKit's own
`dump` writes for the same rows (pandas `to_csv`, xlsxwriter). `credited` is, per reply, the gold
letter whose row its `_score` sheet scored 1 (no row: ""); `rating` is its `_rating.json` "overall"
of each duration group and of all questions ("0.xxx").
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.api.scoring import score
from lvu.benchmarks.base import BENCHMARKS
from lvu.benchmarks.longvideobench import LongVideoBench
from lvu.benchmarks.longvideobench_harness import (
    HARNESSES,
    LongVideoBenchVlmevalkit,
    LongVideoBenchVlmevalkit296425e2,
    LongVideoBenchVlmevalkitE8e78f05,
)
from lvu.errors import LvuError
from lvu.scoring.vlmevalkit import FAIL_MSG
from lvu.types import Frame, Response, Sample, VideoRef
from test_bench_longvideobench import OPTS5, record
from test_bench_longvideobench import release as lvb_release  # noqa: F401  (the LongVideoBench release fixture)

NA_REPLIES = ["N/A", "NA", "None", "null", "NaN", "n/a", "#N/A", "<NA>", "", "nan", "NULL"]
"""Whole cells pandas' default na_values read as NaN."""
REPLIES = NA_REPLIES + [
    FAIL_MSG,  # "API": A
    "Failed to obtain answer: <class 'RuntimeError'> CUDA out of memory",  # its SKIP_ERR message: the E of Error
    " N/A",  # not a whole-cell NA value: the A
    "N/A.",
    "None of the above",  # no letter
    "n/a (B)",
    "A",
    "B.",
    "The answer is C.",
    "Best answer: D",  # its glued prefix list keeps "Best answer:": the B of Best
    "Answer: E",
    "(c)",  # lower case: no letter
    "<think>B</think>A",  # no reasoning-tag strip: B
    "I think it's D because the cat appears first.",
]
GOLDS = "ABCDE"
DURATION_GROUPS = (15, 60, 600, 3600)
CATEGORIES = ("T2E", "S2O", "SSS", "TOS", "E3E")

VLMEVALKIT_E8E78F05 = {
    "credited": {
        "N/A": "", "NA": "", "None": "", "null": "", "NaN": "", "n/a": "", "#N/A": "", "<NA>": "", "": "", "nan": "",
        "NULL": "", "Failed to obtain answer via API.": "A",
        "Failed to obtain answer: <class 'RuntimeError'> CUDA out of memory": "E", " N/A": "A", "N/A.": "A",
        "None of the above": "", "n/a (B)": "B", "A": "A", "B.": "B", "The answer is C.": "C", "Best answer: D": "B",
        "Answer: E": "E", "(c)": "", "<think>B</think>A": "B", "I think it's D because the cat appears first.": "D",
    },
    "rating": {"15": "0.114", "60": "0.100", "600": "0.067", "3600": "0.100", "overall": "0.096"},
}
"""What VLMEvalKit's evaluate() at e8e78f05 produced on the sheet (see the module docstring)."""
VLMEVALKIT_296425E2 = VLMEVALKIT_E8E78F05
"""At 296425e2 (the .xlsx sheet): the same `_score` sheet and `_rating.json`."""


def records() -> list[dict]:
    """The lvb_val.json records: reply i, gold g -> id q{i:02d}_{g}."""
    out = []
    for i in range(len(REPLIES)):
        for g in range(len(GOLDS)):
            out.append(record(f"q{i:02d}_{g}", f"vid{i:02d}", candidates=OPTS5, correct_choice=g,
                              duration_group=DURATION_GROUPS[i % 4], question_category=CATEGORIES[g]))
    return out


def write_release(folder: Path) -> Path:
    """A LongVideoBench val release holding only its annotation file (scoring reads no video)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lvb_val.json").write_text(json.dumps(records()))
    return folder


def sheet_rows() -> tuple[list[str], list[list]]:
    """(header, rows) of VLMEvalKit's prediction sheet: lvb_val.json's columns (lists as pandas
    writes them: their repr), then index, video (= video_id), video_path ./videos/.., prediction."""
    recs = records()
    header = [*recs[0], "index", "video", "prediction"]
    rows = []
    for n, r in enumerate(recs):
        values = [str(v) if isinstance(v, list) else v for v in r.values()]
        values[header.index("video_path")] = f"./videos/{r['video_path']}"
        rows.append([*values, n, r["video_id"], REPLIES[n // len(GOLDS)]])
    return header, rows


def write_tsv(path: Path) -> Path:
    """The sheet as VLMEvalKit's `dump` writes a .tsv: to_csv(sep="\\t", quoting=QUOTE_ALL, index=False)."""
    header, rows = sheet_rows()
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


def write_xlsx(path: Path) -> Path:
    """The sheet as an .xlsx (openpyxl; VLMEvalKit writes it with xlsxwriter: read back the same)."""
    openpyxl = pytest.importorskip("openpyxl", reason="the .xlsx sheet needs openpyxl (lvu[xlsx])")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(sheet_rows()[0])
    for row in sheet_rows()[1]:
        sheet.append(row)
    book.save(path)
    return path


# ---- the sheet, scored as VLMEvalKit's evaluate() scored it ---------------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return write_release(tmp_path_factory.mktemp("lvb_vlmevalkit"))


def scored(release: Path, sheet: Path, compat: str):
    return score("longvideobench", sheet, settings={"data": str(release), "compat": compat, "subtitles": "none"})


def credited(result) -> dict[str, str]:
    """Per reply, the gold letter whose row lvu scored right ("" for none): VLMEvalKit's `credited` layout."""
    out = {reply: "" for reply in REPLIES}
    for r in result.samples:
        i, g = r.sample_id[1:].split("_")
        if r.score == 1.0:
            assert out[REPLIES[int(i)]] == ""
            out[REPLIES[int(i)]] = GOLDS[int(g)]
    return out


def rating(result) -> dict[str, str]:
    """lvu's per-sample scores in VLMEvalKit's `_rating.json` layout: each duration group's and
    the overall mean, as "0.xxx"."""
    by_group: dict[str, list[float]] = {}
    for r in result.samples:
        group = str(DURATION_GROUPS[int(r.sample_id[1:3]) % 4])
        by_group.setdefault(group, []).append(r.score or 0.0)
    out = {g: f"{sum(v) / len(v):.3f}" for g, v in by_group.items()}
    out["overall"] = f"{sum(r.score or 0.0 for r in result.samples) / len(result.samples):.3f}"
    return out


@pytest.mark.parametrize("compat, expected", [("vlmevalkit", VLMEVALKIT_E8E78F05),
                                              ("vlmevalkit@e8e78f05", VLMEVALKIT_E8E78F05),
                                              ("vlmevalkit@296425e2", VLMEVALKIT_296425E2)])
@pytest.mark.parametrize("kind", ["tsv", "xlsx"])
def test_the_sheet_scores_as_vlmevalkit_scored_it(release, tmp_path, compat, expected, kind):
    """Issue #32 items 4 and 5: `lvu score longvideobench <sheet> --set compat=vlmevalkit` gives
    VLMEvalKit's numbers: every NA-like reply is NaN there (no letter: wrong for every gold; before
    this lvu read the A of "N/A", "NA", "#N/A" and "<NA>": 0.128 overall, not 0.096), the API
    failure message is read as A, and the rest as its regex reads them."""
    sheet = (write_tsv if kind == "tsv" else write_xlsx)(tmp_path / f"Model_LongVideoBench_8frame.{kind}")
    result = scored(release, sheet, compat)
    assert len(result.samples) == len(REPLIES) * len(GOLDS) and not result.problems
    assert not any(r.error for r in result.samples)  # the API failure is a reply here, not a failed sample
    assert credited(result) == expected["credited"]
    assert rating(result) == expected["rating"]
    overall = result.tables[0].rows[0]
    assert overall[0] == "all" and overall[1] == 125 and f"{overall[2] / 100:.3f}" == expected["rating"]["overall"]


def test_na_replies_are_empty_only_under_the_vlmevalkit_modes():
    """The issue's reply `N/A`, gold A: VLMEvalKit 0 (its sheet reads it back as NaN), lvu was 1."""
    s = Sample(id="q", benchmark="longvideobench", video=VideoRef(path="v.mp4", duration=30.0), question="What?",
               options=list(OPTS5), answer=0)
    for compat in ("vlmevalkit", "vlmevalkit@e8e78f05", "vlmevalkit@296425e2"):
        bench = LongVideoBench(compat=compat, subtitles="none")
        for reply in NA_REPLIES:
            prediction = bench.extract(s, Response(text=reply))
            assert prediction.value is None and bench.score(s, prediction).value == 0.0, (compat, reply)
        assert bench.extract(s, Response(text=" N/A")).value == 0  # not a whole NA cell: its A
        assert bench.extract(s, Response(text=FAIL_MSG)).value == 0  # the A of "API"
    assert LongVideoBench().extract(s, Response(text="N/A")).value == 0  # official: the author's parser reads A
    assert LongVideoBench(compat="lmms-eval").extract(s, Response(text="N/A")).value == 0


def test_the_api_failure_stays_a_failed_sample_outside_the_vlmevalkit_modes(release, tmp_path):
    """Reply `Failed to obtain answer via API.`, gold A: VLMEvalKit's evaluate() scores it (the A of
    "API": right), lvu's default mode stores a failed sample (0), as `lvu score` says."""
    sheet = write_tsv(tmp_path / "Model_LongVideoBench_8frame.tsv")
    fail = f"q{REPLIES.index(FAIL_MSG):02d}_0"
    by_mode = {c: {r.sample_id: r for r in scored(release, sheet, c).samples} for c in ("official", "vlmevalkit")}
    assert by_mode["vlmevalkit"][fail].error is None and by_mode["vlmevalkit"][fail].score == 1.0
    assert by_mode["official"][fail].error == f"VLMEvalKit: {FAIL_MSG}" and not by_mode["official"][fail].correct
    out = subprocess.run([sys.executable, "-m", "lvu.cli", "score", "longvideobench", str(sheet), "--data",
                          str(release), "--set", "compat=vlmevalkit", "--set", "subtitles=none"],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stdout + out.stderr
    printed = dict(re.findall(r"│ (all|\(\d+,\d+\]) +│ +\d+ │ +([\d.]+) │", out.stdout))
    groups = {"all": "overall", "(8,15]": "15", "(15,60]": "60", "(180,600]": "600", "(900,3600]": "3600"}
    assert printed == {k: f"{float(VLMEVALKIT_E8E78F05['rating'][v]) * 100:.1f}" for k, v in groups.items()}


# ---- the pins ---------------------------------------------------------------------------------------


def test_the_pins_are_harnesses_and_an_unknown_pin_names_them(release, tmp_path):
    assert HARNESSES["vlmevalkit@e8e78f05"] is LongVideoBenchVlmevalkitE8e78f05
    assert HARNESSES["vlmevalkit@296425e2"] is LongVideoBenchVlmevalkit296425e2
    for pin in (LongVideoBenchVlmevalkitE8e78f05, LongVideoBenchVlmevalkit296425e2):
        assert issubclass(pin, LongVideoBenchVlmevalkit)
    # e8e78f05 is the default: it overrides nothing but its name
    assert {k for k in vars(LongVideoBenchVlmevalkitE8e78f05) if not k.startswith("__")} == {"compat", "peer"}
    with pytest.raises(LvuError) as e:
        LongVideoBench(compat="vlmevalkit@abc")
    assert str(e.value) == ("compat='vlmevalkit@abc' is unknown for longvideobench — its VLMEvalKit modes: "
                            "vlmevalkit = VLMEvalKit @e8e78f05; vlmevalkit@e8e78f05 = VLMEvalKit @e8e78f05; "
                            "vlmevalkit@296425e2 = VLMEvalKit @296425e2")
    sheet = write_tsv(tmp_path / "Model_LongVideoBench_8frame.tsv")
    out = subprocess.run([sys.executable, "-m", "lvu.cli", "score", "longvideobench", str(sheet), "--data",
                          str(release), "--set", "compat=vlmevalkit@abc"], capture_output=True, text=True)
    assert out.returncode == 2 and str(e.value) in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_296425e2_has_the_subtitle_flag_inverted_in_its_code(lvb_release):  # noqa: F811  (the fixture)
    """At 296425e2 `build_prompt` tests `if not self.use_subtitle` (and its run.py never sets
    use_subtitle for LongVideoBench): the cues come exactly when they were not asked for; its
    frames, question text and extraction are e8e78f05's."""
    frames = [Frame(timestamp=t) for t in (2.5, 15.0)]

    def shape(compat: str, **settings) -> list:
        bench = LongVideoBench(data=str(lvb_release), compat=compat, **settings)
        sample = bench.load()[0][0]
        return [p.timestamp if isinstance(p, Frame) else p.text for p in bench.build_prompt(sample, frames, []).parts]

    old, new = "vlmevalkit@296425e2", "vlmevalkit@e8e78f05"
    assert shape(old, subtitles="none") == shape(new, subtitles="interleave") == shape("vlmevalkit", subtitles="interleave")
    assert " Quick.\n" in shape(old, subtitles="none") and " Quick.\n" not in shape(new, subtitles="none")
    assert shape(old, subtitles="interleave") == shape(new, subtitles="none")
    assert shape(old, subtitles="interleave") == shape(new, subtitles="interleave", vlmevalkit_flag_bug=True)
    with pytest.raises(LvuError, match=r"^vlmevalkit@296425e2 inverts use_subtitle in its own code"):
        LongVideoBench(compat=old, vlmevalkit_flag_bug=True)
    assert LongVideoBench(compat=old).settings["frames"] == LongVideoBench(compat=new).settings["frames"] == 8
    sample = LongVideoBench(data=str(lvb_release)).load()[0][0]
    for frames in (8, "1fps", "0.5fps"):
        plans = {c: LongVideoBench(compat=c, frames=frames).harness.frame_numbers(sample, frames, 600, 30.0)
                 for c in (old, new)}
        assert plans[old] == plans[new] and plans[old], frames
    with pytest.raises(LvuError, match="VLMEvalKit runs LongVideoBench val only"):
        LongVideoBench(compat=old, split="test")
    assert BENCHMARKS.get("longvideobench-frames")(compat=old).with_subtitles  # frames-only: the cues, as its CLI runs
