"""`lvu import`: files from lmms-eval, VLMEvalKit and the official formats become stored runs whose
numbers (`lvu results show`, `lvu report`) equal `lvu score` on the same file.

Files are written in each harness's exact layout: lmms-eval 0.7.3 `--log_samples` lines (no `doc`:
evaluation_tracker pops it; ids in the task's metric payload; `filtered_resps` flattened to a
string), older lines with `doc`, VLMEvalKit's Video-MME sheet (its TSV columns + prediction), the
official Video-MME results files (tests/fixtures) and LVBench's {uid: letter} answer file.
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

from lvu.errors import LvuError
from lvu.runs.importer import import_file
from lvu.runs.saved_files import VLMEVALKIT_FAIL, read_saved
from lvu.runs.store import Store
from test_bench_longvideobench import release as lvb_release  # noqa: F401  (the LongVideoBench release fixture)
from test_bench_lvbench import Q55
from test_bench_lvbench import release as lvbench_release  # noqa: F401  (the LVBench release fixture)
from test_bench_videomme import GROUPED, LONG, SHORT
from test_bench_videomme import release as videomme_release
from test_bench_videomme import videos  # noqa: F401  (module-scoped fixture: two tiny videos)
from test_bench_mlvu import DEV, write_release
from test_bench_mlvu import video as mlvu_video  # noqa: F401  (fixture)
from test_bench_neptune import VID_A
from test_bench_neptune import release as neptune_release
from test_bench_neptune import videos as neptune_videos  # noqa: F401  (fixture)

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent


def lvu(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "lvu.cli", *args], capture_output=True, text=True, cwd=cwd, env=env)


def table_rows(stdout: str) -> list[tuple[str, str, str]]:
    """(group, n, score) of every table row printed, in order (titles differ between commands)."""
    rows = []
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 3 and re.fullmatch(r"\d+", cells[1]) and re.fullmatch(r"-?[\d.]+|nan", cells[2]):
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def imported_run(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0, out.stdout + out.stderr
    return re.search(r"run (\w{12}): imported", out.stdout).group(1)


def assert_same_numbers(results: Path, run_id: str, *score_args: str) -> list[tuple[str, str, str]]:
    """`lvu results show RUN` prints exactly the tables `lvu score ...` prints."""
    shown = lvu("results", "show", run_id, "--results-dir", str(results))
    scored = lvu("score", *score_args)
    assert shown.returncode == 0 and scored.returncode == 0, shown.stderr + scored.stderr
    assert table_rows(shown.stdout) and table_rows(shown.stdout) == table_rows(scored.stdout)
    return table_rows(shown.stdout)


# ---- the official formats ------------------------------------------------------------------------


@pytest.mark.slow
def test_official_videomme_results_file(tmp_path):
    results = tmp_path / "res"
    current = FIXTURES / "videomme_output_test_template.json"
    out = lvu("import", str(current), "-b", "videomme", "--results-dir", str(results))
    run_id = imported_run(out)
    assert "imported 9 of 9 rows (official)" in out.stdout and "score 77.8 %" in out.stdout
    rows = assert_same_numbers(results, run_id, "videomme", str(current))
    assert ("overall", "9", "77.8") in rows and ("Counting Problem", "4", "75.0") in rows
    info = Store(results).run(run_id)
    assert info.model == "imported:videomme_output_test_template" and info.status == "done"
    assert info.env["imported"]["format"] == "official" and info.env["imported"]["path"] == str(current.resolve())
    assert info.spec.settings["import_sha256"] == info.env["imported"]["sha256"] and "data_fingerprint" in info.spec.settings
    assert all(r.sample_digest for r in Store(results).results(run_id))
    report = lvu("report", run_id, "--results-dir", str(results), "--format", "md", "--no-plots", "--bootstrap", "20")
    assert report.returncode == 0, report.stderr
    text = Path(report.stdout.split("report: ")[-1].strip()).read_text()
    assert "imported:videomme_output_test_template" in text and "77.8" in text
    paper = lvu("compare", run_id, "--paper", "--results-dir", str(results), "--bootstrap", "20")
    assert paper.returncode == 0 and "77.8" in paper.stdout, paper.stderr
    from fastapi.testclient import TestClient

    from lvu.web.app import create_app

    viewer = TestClient(create_app(results))  # `lvu view`
    sample = Store(results).results(run_id)[0]
    for url in (f"/runs/{run_id}", f"/runs/{run_id}/samples/{sample.sample_id}", f"/api/runs/{run_id}"):
        page = viewer.get(url)
        assert page.status_code == 200 and "imported:videomme_output_test_template" in page.text, url
    # the same file again replaces its run; the 2024-06 file (old keys, old scorer) is another run
    assert imported_run(lvu("import", str(current), "-b", "videomme", "--results-dir", str(results))) == run_id
    old = FIXTURES / "videomme_output_test_template_2024-06.json"
    other = imported_run(lvu("import", str(old), "-b", "videomme", "--results-dir", str(results)))
    assert other != run_id and len(Store(results).runs()) == 2
    assert ("overall", "15", "33.3") in assert_same_numbers(results, other, "videomme", str(old))


@pytest.mark.slow
def test_lvbench_answer_file_counts_unknown_uids(lvbench_release, tmp_path):
    answers = tmp_path / "answers.json"  # the official scorer's input; uid 999 is not in this release
    answers.write_text(json.dumps({"55": "D", "56": "A.", "57": "b", "999": "A"}))
    results = tmp_path / "res"
    out = lvu("import", str(answers), "-b", "lvbench", "--root", str(lvbench_release), "--results-dir", str(results))
    run_id = imported_run(out)
    assert "1 of 4 rows of answers.json matched no lvbench sample (999)" in out.stderr
    assert out.stderr.count("\n") == 2 and "Traceback" not in out.stderr  # that line, and the coverage warning
    assert "have no row in answers.json; the score covers the 3 answered" in out.stderr
    assert "imported 3 of 4 rows (official) for 3 of 4 samples" in out.stdout
    assert Store(results).run(run_id).status == "partial"  # uid 58 has no answer: coverage shows it
    rows = assert_same_numbers(results, run_id, "lvbench", str(answers), "--root", str(lvbench_release))
    assert rows[0] == ("all", "3", "33.3")  # verbatim comparison: "A." and "b" are wrong
    scored = lvu("score", "lvbench", str(answers), "--root", str(lvbench_release))
    assert "1 of 4 rows of answers.json matched no lvbench sample" in scored.stderr


# ---- lmms-eval --log_samples ---------------------------------------------------------------------


def lmms_line(doc_id: int, reply: str, target: str, prompt: str, **payload) -> str:
    """A line as lmms-eval 0.7.3 writes it: doc popped, filtered_resps flattened, resps popped when equal."""
    return json.dumps({"doc_id": doc_id, "target": target, "filtered_resps": reply, "token_counts": [None],
                       "doc_hash": f"{doc_id:064x}", "input": prompt, **payload}) + "\n"


def videomme_payload(qid: str, answer: str) -> dict:
    return {"videomme_perception_score": {"question_id": qid, "duration": "short", "category": "Knowledge",
                                          "sub_category": "Humanity & History", "task_category": "Counting Problem",
                                          "pred_answer": "", "answer": answer, "videoID": SHORT}}


@pytest.mark.slow
def test_lmms_eval_log_for_videomme(tmp_path, videos):
    root = videomme_release(tmp_path / "release", videos)
    logs = tmp_path / "logs" / "Qwen__Qwen2.5-VL-7B-Instruct"
    logs.mkdir(parents=True)
    (logs / "20260801_120000_results.json").write_text(json.dumps(
        {"results": {"videomme": {"videomme_perception_score,none": 50.0}}, "model_name": "Qwen/Qwen2.5-VL-7B-Instruct",
         "config": {"model": "qwen2_5_vl", "model_args": "pretrained=Qwen/Qwen2.5-VL-7B-Instruct,max_num_frames=32"}}))
    log = logs / "20260801_120000_samples_videomme.jsonl"
    reasoning = json.loads(lmms_line(3, "D", "D", "…", **videomme_payload("002-1", "B")))
    reasoning["resps"] = "<think>A or B</think>D"  # kept only when the reasoning tags were stripped
    log.write_text(
        lmms_line(0, "C", "C", "Select the best answer…", **videomme_payload("001-1", "C"))
        + lmms_line(1, "The answer is B, not A", "A", "…", **videomme_payload("001-2", "A"))
        + json.dumps(reasoning) + "\n"
        # an older line that still has its doc (and nested resps)
        + json.dumps({"doc_id": 4, "doc": {"question_id": "002-2", "videoID": LONG}, "target": "B",
                      "resps": [["B"]], "filtered_resps": ["B"]}) + "\n"
        + lmms_line(5, "A", "A", "…", **videomme_payload("999-1", "A")))  # not in this release
    results = tmp_path / "res"
    out = lvu("import", str(log), "-b", "videomme", "--root", str(root), "--results-dir", str(results))
    run_id = imported_run(out)
    assert "1 of 5 rows of 20260801_120000_samples_videomme.jsonl matched no videomme sample (999-1)" in out.stderr
    info = Store(results).run(run_id)
    assert info.model == "imported:Qwen/Qwen2.5-VL-7B-Instruct"  # from the results JSON beside the log
    assert info.env["imported"]["format"] == "lmms-eval" and info.coverage == "4/9" and info.status == "partial"
    stored = {r.sample_id: r for r in Store(results).results(run_id)}
    assert stored["002-1"].response == "D" and stored["001-1"].prompt == {"text": "Select the best answer…"}
    assert [(i, stored[i].correct) for i in sorted(stored)] == [("001-1", True), ("001-2", False), ("002-1", False),
                                                                 ("002-2", True)]
    assert_same_numbers(results, run_id, "videomme", str(log), "--root", str(root))
    # lmms-eval's own scoring rules on the same log: another run, same numbers as `lvu score --set compat=...`
    lmms = imported_run(lvu("import", str(log), "-b", "videomme", "--root", str(root), "--set", "compat=lmms-eval",
                            "--results-dir", str(results)))
    assert lmms != run_id
    assert_same_numbers(results, lmms, "videomme", str(log), "--root", str(root), "--set", "compat=lmms-eval")


@pytest.mark.slow
def test_lmms_eval_log_for_lvbench_joins_by_question_text(lvbench_release, tmp_path):
    post = "\nAnswer the question with the option letter"  # lvbench.yaml's post_prompt; 0.7.3 logs no uid
    q57 = "What is the score?\n(A) 1\n(B) 2\n(C) 3\n(D) 4"
    log = tmp_path / "20260801_120000_samples_lvbench.jsonl"
    log.write_text(lmms_line(0, "D", "D", Q55 + post, lvbench_score=True)
                   + lmms_line(2, "(C) 3", "B", q57 + post, lvbench_score=False)
                   + json.dumps({"doc_id": 1, "doc": {"uid": 56, "key": "Cm73ma6Ibcs"}, "target": "A",
                                 "filtered_resps": ["A"], "resps": [["A"]]}) + "\n"
                   + lmms_line(3, "A", "A", "An unknown question?\n(A) x\n(B) y" + post, lvbench_score=True))
    results = tmp_path / "res"
    out = lvu("import", str(log), "-b", "lvbench", "--root", str(lvbench_release), "--model", "my-model",
              "--results-dir", str(results))
    run_id = imported_run(out)
    assert "1 of 4 rows" in out.stderr and "(line 4)" in out.stderr
    stored = {r.sample_id: r for r in Store(results).results(run_id)}
    assert {i: r.correct for i, r in stored.items()} == {"55": True, "56": True, "57": False}
    assert Store(results).run(run_id).model == "imported:my-model"
    rows = assert_same_numbers(results, run_id, "lvbench", str(log), "--root", str(lvbench_release))
    assert rows[0] == ("all", "3", "66.7")


def test_lmms_eval_lines_of_the_other_benchmarks(tmp_path, lvb_release, neptune_videos, mlvu_video):
    """0.7.3 lines carry the id in the metric entry (LongVideoBench lvb_acc.id, Neptune neptune_acc.key);
    MLVU logs its question text (options included) as question_id; VLMEvalKit's LongVideoBench sheet has `id`."""
    from lvu.runs.engine import make_benchmark

    log = tmp_path / "samples_longvideobench_val_v.jsonl"
    log.write_text(lmms_line(0, "D", "D", "…", lvb_acc={"id": "vidA_1", "duration_group": 60, "answer": "D",
                                                        "parsed_pred": "D"}, submission={"vidA_1": "D"}))
    lvb = make_benchmark("longvideobench", {"data": str(lvb_release)})
    assert [(r.sample.id, r.response) for r in read_saved(lvb, log).rows] == [("vidA_1", "D")]
    sheet = tmp_path / "m_LongVideoBench_8frame.tsv"  # VLMEvalKit's TSV: lvb_val.json's columns + index, video
    sheet.write_text("index\tvideo\tid\tquestion\tcandidates\tcorrect_choice\tprediction\n"
                     "0\tvidA\tvidA_0\tWhat happened in vidA_0?\t[]\t1\tB\n"
                     "2\tvidA\tvidA_1\tWhat happened in vidA_1?\t[]\t3\tA\n")
    assert [(r.sample.id, r.response) for r in read_saved(lvb, sheet).rows] == [("vidA_0", "B"), ("vidA_1", "A")]

    nep = make_benchmark("neptune", {"data": str(neptune_release(tmp_path / "neptune", neptune_videos))})
    log = tmp_path / "samples_neptune_full_v.jsonl"
    log.write_text(lmms_line(0, "B", "B", "…", neptune_acc={"key": f"{VID_A}/2", "question_type": "Counting",
                                                              "gold": "B", "parsed_pred": "B", "is_correct": True}))
    assert [r.sample.id for r in read_saved(nep, log).rows] == [f"{VID_A}/2"]

    mlvu = make_benchmark("mlvu", {"data": str(write_release(tmp_path / "mlvu", mlvu_video.path, DEV))})
    log = tmp_path / "samples_mlvu_dev.jsonl"
    question = "What type of film is this?\n(A) Mystery\n(B) Action\n(C) Comedy\n(D) Romance"
    log.write_text(lmms_line(0, "D", "D", "\n" + question + "\nOnly give the best option.\n\nBest option: (",
                             mlvu_percetion_score={"question_id": question, "task_type": "topic_reasoning",
                                                   "pred_answer": "D", "answer": "D"}))
    assert [(r.sample.id, r.response) for r in read_saved(mlvu, log).rows] == [("TR_0", "D")]


# ---- VLMEvalKit ----------------------------------------------------------------------------------

VLMEVALKIT_COLUMNS = ["index", "video", "video_path", "duration", "domain", "candidates", "sub_category",
                      "task_type", "subtitle_path", "question", "answer", "prediction"]


def vlmevalkit_sheet(records, predictions: dict[str, str], sep: str = "\t") -> str:
    """VLMEvalKit's Video-MME prediction sheet: its TSV (built from the parquet: index = row number,
    video = videoID, candidates = the option list, no question_id) plus `prediction`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=sep, lineterminator="\n")
    writer.writerow(VLMEVALKIT_COLUMNS)
    index = 0
    for vid in records:
        for q in vid["questions"]:
            if q["question_id"] in predictions:
                writer.writerow([index, vid["videoID"], f"./video/{vid['videoID']}.mp4", vid["duration"], vid["domain"],
                                 str(q["options"]), vid["sub_category"], q["task_type"],
                                 f"./subtitle/{vid['videoID']}.srt", q["question"], q["answer"],
                                 predictions[q["question_id"]]])
            index += 1
    return buffer.getvalue()


@pytest.mark.slow
def test_vlmevalkit_sheet_for_videomme(tmp_path, videos):
    root = videomme_release(tmp_path / "release", videos)
    folder = tmp_path / "outputs" / "Qwen2-VL-7B-Instruct" / "T20260801_G1234"
    folder.mkdir(parents=True)
    predictions = {"001-1": "C", "001-2": "B. Two dogs.", "002-1": "I cannot tell", "002-2": VLMEVALKIT_FAIL}
    sheet = folder / "Qwen2-VL-7B-Instruct_Video-MME_8frame.tsv"
    sheet.write_text(vlmevalkit_sheet(GROUPED, predictions))
    results = tmp_path / "res"
    run_id = imported_run(lvu("import", str(sheet), "-b", "videomme", "--root", str(root),
                              "--results-dir", str(results)))
    info = Store(results).run(run_id)
    assert info.model == "imported:Qwen2-VL-7B-Instruct" and info.env["imported"]["format"] == "vlmevalkit"
    stored = {r.sample_id: r for r in Store(results).results(run_id)}
    assert set(stored) == set(predictions) and stored["002-2"].error == f"VLMEvalKit: {VLMEVALKIT_FAIL}"
    assert (stored["001-1"].correct, stored["001-2"].correct, stored["002-1"].counted) == (True, False, False)
    assert_same_numbers(results, run_id, "videomme", str(sheet), "--root", str(root))
    csv_sheet = tmp_path / "Qwen2-VL-7B-Instruct_Video-MME_8frame.csv"
    csv_sheet.write_text(vlmevalkit_sheet(GROUPED, predictions, sep=","))
    other = imported_run(lvu("import", str(csv_sheet), "-b", "videomme", "--root", str(root),
                             "--results-dir", str(results)))
    assert table_rows(lvu("results", "show", other, "--results-dir", str(results)).stdout) == \
        table_rows(lvu("results", "show", run_id, "--results-dir", str(results)).stdout)


def test_rows_with_the_same_question_text_join_by_video_then_answer(tmp_path, videos):
    records = json.loads(json.dumps(GROUPED))
    records[0]["questions"][0]["question"] = records[1]["questions"][0]["question"] = "What is shown?"
    root = videomme_release(tmp_path / "release", videos, records=records)
    sheet = tmp_path / "m_Video-MME.tsv"
    text = vlmevalkit_sheet(records, {"001-1": "C", "002-1": "B"})
    header, short_row, long_row = text.splitlines()
    # the long video's row comes first (index 0): file order alone would give it sample 001-1
    sheet.write_text("\n".join([header, "0" + long_row[1:], "5" + short_row[1:]]) + "\n")
    from lvu.benchmarks.videomme import VideoMME

    bench = VideoMME(data=str(root))
    saved = read_saved(bench, sheet)
    assert sorted((r.sample.id, r.response) for r in saved.rows) == [("001-1", "C"), ("002-1", "B")]
    assert saved.unmatched == [] and saved.duplicates == 0
    no_video = re.sub(r"\t(vidShortAAA|vidLongBBBB)\t", "\t\t", sheet.read_text())  # then the answer decides
    sheet.write_text(no_video)
    assert sorted((r.sample.id, r.response) for r in read_saved(bench, sheet).rows) == [("001-1", "C"), ("002-1", "B")]


@pytest.mark.slow
def test_xlsx_sheets_need_openpyxl(tmp_path, videos, monkeypatch):
    root = videomme_release(tmp_path / "release", videos)
    tsv = vlmevalkit_sheet(GROUPED, {"001-1": "C", "001-2": "A"})
    sheet = tmp_path / "m_Video-MME.xlsx"
    try:
        import openpyxl
    except ImportError:
        sheet.write_bytes(b"PK\x03\x04 not really a workbook")
        with pytest.raises(LvuError, match=r"reading \.xlsx needs openpyxl — pip install 'lvu\[xlsx\]'"):
            import_file(sheet, "videomme", settings={"data": str(root)}, results_dir=tmp_path / "res")
        return
    book = openpyxl.Workbook()
    for row in csv.reader(tsv.splitlines(), delimiter="\t"):
        book.active.append([int(v) if v.isdigit() else v for v in row])  # index as a number, as pandas writes it
    book.save(sheet)
    summary = import_file(sheet, "videomme", settings={"data": str(root)}, results_dir=tmp_path / "res")
    assert [r.sample.id for r in summary.saved.rows] == ["001-1", "001-2"]
    assert summary.tables[0].rows[-1] == ("overall", 2, 100.0)
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # as if it were not installed
    with pytest.raises(LvuError, match="needs openpyxl"):
        import_file(sheet, "videomme", settings={"data": str(root)}, results_dir=tmp_path / "res")


# ---- errors and the migration page ----------------------------------------------------------------


@pytest.mark.slow
def test_bad_inputs_are_one_line_errors(tmp_path, lvbench_release):
    missing = lvu("import", str(tmp_path / "nope.jsonl"), "-b", "lvbench", "--results-dir", str(tmp_path / "r"))
    assert missing.returncode == 2 and "nope.jsonl: file not found" in missing.stderr
    garbage = tmp_path / "log.jsonl"
    garbage.write_text('{"doc_id": 0, "filtered_resps": "A"}\nnot json\n')
    out = lvu("import", str(garbage), "-b", "lvbench", "--root", str(lvbench_release), "--results-dir", str(tmp_path / "r"))
    assert out.returncode == 2 and "log.jsonl:2: not a JSON line" in out.stderr and "Traceback" not in out.stderr
    nothing = tmp_path / "other.json"
    nothing.write_text(json.dumps({"x1": "A"}))
    out = lvu("import", str(nothing), "-b", "lvbench", "--root", str(lvbench_release), "--results-dir", str(tmp_path / "r"))
    assert out.returncode == 2 and "none of its 1 ids is a lvbench question" in out.stderr
    out = lvu("import", str(nothing), "-b", "lvbench", "--format", "excel", "--results-dir", str(tmp_path / "r"))
    assert out.returncode == 2 and "--format 'excel' is unknown" in out.stderr


def shell_commands(markdown: str) -> list[str]:
    """The `lvu ...` lines of the page's code blocks (continuation backslashes joined)."""
    blocks = re.findall(r"```(?:bash|sh|console)?\n(.*?)```", markdown, flags=re.S)
    lines = " ".join(blocks).replace("\\\n", " ")
    commands = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("lvu "):
                commands.append(line)
    assert lines
    return commands


@pytest.mark.slow
def test_migrating_page_commands_are_real(tmp_path):
    page = (REPO / "docs" / "migrating.md").read_text()
    assert "docs/migrating.md" in (REPO / "README.md").read_text()
    commands = shell_commands(page)
    assert any(c.startswith("lvu import") for c in commands)
    helps: dict[str, str] = {}
    for command in commands:
        words = command.split()
        sub = words[1:3] if words[1] in ("results", "data", "cache", "judge") else words[1:2]
        key = " ".join(sub)
        if key not in helps:
            out = lvu(*sub, "--help")
            assert out.returncode == 0, command
            helps[key] = out.stdout
        for flag in (w.split("=")[0] for w in words if w.startswith("-") and len(w) > 1):
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps[key]), f"{command}: {flag} unknown"
    # the worked example runs as written, from the repository root
    example = next(c for c in commands if c.startswith("lvu import tests/fixtures/"))
    out = lvu(*example.split()[1:], "--results-dir", str(tmp_path / "res"), cwd=REPO)
    assert out.returncode == 0 and "score 77.8 %" in out.stdout, out.stderr


# ---- #27: no silently wrong numbers ------------------------------------------------------------------


def test_a_stray_quote_that_merges_rows_is_refused(tmp_path, videos):
    """One stray `"` made `imported 1 of 1 rows … 100.0 %` of a 3-row sheet (truth 66.7 %)."""
    root = videomme_release(tmp_path / "release", videos)
    lines = vlmevalkit_sheet(GROUPED, {"001-1": "C", "001-2": "B", "002-1": "A"}).splitlines()
    lines[1] = lines[1].rsplit("\t", 1)[0] + '\t"C'  # the first prediction opens a quote nobody closes
    sheet = tmp_path / "m_Video-MME.tsv"
    sheet.write_text("\n".join(lines) + "\n")
    with pytest.raises(LvuError, match=r"row 2: its 'prediction' field runs over the rows after it — a stray"):
        import_file(sheet, "videomme", settings={"data": str(root)}, results_dir=tmp_path / "res")


@pytest.mark.slow
def test_a_sheet_answering_part_of_the_benchmark_says_so(tmp_path, videos):
    root = videomme_release(tmp_path / "release", videos)
    sheet = tmp_path / "m_Video-MME.tsv"
    sheet.write_text(vlmevalkit_sheet(GROUPED, {"001-1": "C"}))
    done = lvu("import", str(sheet), "-b", "videomme", "--root", str(root), "--results-dir", str(tmp_path / "res"))
    assert done.returncode == 0 and re.search(r"warning: \d+ of the \d+ videomme questions have no row", done.stderr)


def test_xlsx_predictions_that_are_unsaved_formulas_are_refused(tmp_path, videos):
    openpyxl = pytest.importorskip("openpyxl")
    root = videomme_release(tmp_path / "release", videos)
    book = openpyxl.Workbook()
    for i, row in enumerate(csv.reader(vlmevalkit_sheet(GROUPED, {"001-1": "C", "001-2": "A"}).splitlines(),
                                       delimiter="\t")):
        book.active.append(row if i == 0 else [*row[:-1], '=UPPER("c")'])  # openpyxl saves no computed value
    sheet = tmp_path / "m_Video-MME.xlsx"
    book.save(sheet)
    with pytest.raises(LvuError, match=r"row 2: its prediction is a formula \(=UPPER"):
        import_file(sheet, "videomme", settings={"data": str(root)}, results_dir=tmp_path / "res")


def test_a_reply_with_an_unpaired_surrogate_is_stored_escaped(tmp_path):
    from lvu.types import RunSpec, SampleResult

    store = Store(tmp_path / "res")
    run_id = store.begin_run(RunSpec(benchmark="b", model="m", settings={}), {}, fresh=True)
    store.put(run_id, SampleResult(sample_id="a", labels={}, answer=0, response="C \ud800 D"), 0)
    [stored] = list(store.results(run_id))
    assert stored.response == "C \\ud800 D"
    store.close()
