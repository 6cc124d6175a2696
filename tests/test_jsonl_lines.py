"""U+2028 and friends inside a reply (issue 32, item 2).

`json.dumps(..., ensure_ascii=False)` (lmms-eval's evaluation_tracker, lvu's `results export`)
writes U+2028, U+2029 and U+0085 raw inside a string, and pandas' `to_csv` leaves them unquoted in
a VLMEvalKit .tsv (its default QUOTE_MINIMAL; VLMEvalKit's own `dump` at e8e78f05 and 296425e2
passes QUOTE_ALL). `str.splitlines()` breaks a line there, so one such reply made the whole file
unreadable (`Unterminated string`, exit 2). Every JSONL reader now splits with
`lvu.textlines.text_lines`: at "\\n" only.

The sheets below are written with Python's csv module, whose output for these rows is byte for
byte what pandas 3.1.1's `DataFrame.to_csv(sep="\\t", index=False)` writes (checked in a scratch
venv: `0\\tB\\u2028Because the dog runs.\\n`, unquoted, and `"0"\\t"B\\u2028..."` under QUOTE_ALL),
and which pandas' `read_csv(sep="\\t")` reads back intact.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
import test_peer_lmms_eval as parity
from lmms_eval_peer import Peer
from test_bench_videomme import GROUPED
from test_bench_videomme import release as videomme_release
from test_import import vlmevalkit_sheet
from typer.testing import CliRunner

import lvu.cli.root as cli
from lvu.benchmarks.base import read_prediction_lines
from lvu.benchmarks.longvideobench_release import read_records as lvb_records
from lvu.benchmarks.neptune_release import read_records as neptune_records
from lvu.construct.needle_llm import jsonl_captions
from lvu.construct.needle_media import load_needles
from lvu.scoring.judges import read_dev_set
from lvu.textlines import text_lines
from lvu.types import LETTERS, Sample, VideoRef

REPLY = "B\u2028Because the dog runs."
"""The issue's reply: a letter, then U+2028 LINE SEPARATOR."""
BREAKS = ["\u2028", "\u2029", "\x85", "\x1c", "\x1d", "\x1e", "\v", "\f"]
"""Where `str.splitlines()` breaks a line and "\\n"-separated formats do not (json.dumps escapes the
control characters among them, not U+2028, U+2029 or U+0085)."""


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli.app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in text_lines(path.read_text(encoding="utf-8")) if line.strip()]


# ---- text_lines ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text, lines", [
    ("", []),
    ("a", ["a"]),
    ("a\n", ["a"]),
    ("a\nb", ["a", "b"]),
    ("a\nb\n", ["a", "b"]),
    ("a\r\nb\r\n", ["a", "b"]),
    ("a\r\nb", ["a", "b"]),
    ("a\n\nb\n", ["a", "", "b"]),
    ("\n", [""]),
    ("a\r\n\r\n", ["a", ""]),
])
def test_text_lines_splits_at_newlines(text, lines):
    assert text_lines(text) == lines


@pytest.mark.parametrize("mark", BREAKS)
def test_text_lines_keeps_other_line_breaks_inside_a_line(mark):
    for sep in ("\n", "\r\n"):
        for last in ("", sep):
            text = f"a{mark}b{sep}c{mark}d{last}"
            assert len(text.splitlines()) == 4  # what the old readers split
            assert text_lines(text) == [f"a{mark}b", f"c{mark}d"]
    line = json.dumps({"reply": f"B{mark}Because"}, ensure_ascii=False)  # raw: U+2028, U+2029, U+0085
    assert [json.loads(x)["reply"] for x in text_lines(f"{line}\n{line}\n")] == [f"B{mark}Because"] * 2


# ---- lmms-eval logs and lvu's own export ---------------------------------------------------------


@pytest.fixture()
def peer(monkeypatch, tmp_path) -> Peer:
    return Peer(monkeypatch, tmp_path / "hf_home")


@pytest.mark.slow
def test_lmms_eval_log_with_a_line_separator_then_export_round_trip(peer, monkeypatch, tmp_path):
    """(a) lmms-eval's Video-MME log, its first line holding the reply: `lvu score videomme LOG
    --set compat=lmms-eval` exits 0 with every number lmms-eval's; (b) the run `lvu import` stores,
    `lvu results export`ed (U+2028 raw again) and scored: the same rows."""
    replaced = list(parity.RESPONSES)
    replaced[0] = (REPLY, "B")  # the first line: format detection reads it too
    monkeypatch.setattr(parity, "RESPONSES", replaced)
    pairs = parity.videomme_pairs(peer, monkeypatch, tmp_path, parity.LOG)
    assert len(pairs) >= 2 and [p for p in pairs if p.lmms != p.lvu] == []
    log, data = tmp_path / "samples_videomme.jsonl", tmp_path / "videomme.jsonl"
    assert REPLY in log.read_text(encoding="utf-8").split("\n")[0]  # written raw, as lmms-eval writes it

    scored = tmp_path / "scored.jsonl"
    invoke("score", "videomme", str(log), "--data", str(data), "--set", "compat=lmms-eval", "--out", str(scored))
    rows = {r["sample_id"]: r for r in records(scored)}
    assert len(rows) == len(replaced)
    assert [(r["response"], r["prediction"]) for r in rows.values() if "\u2028" in r["response"]] == \
        [(REPLY, LETTERS.index("B"))]

    results = tmp_path / "results"
    printed = invoke("import", str(log), "-b", "videomme", "--root", str(data), "--set", "compat=lmms-eval",
                     "--results-dir", str(results))
    run_id = re.search(r"run (\w{12}): imported", printed).group(1)
    export = tmp_path / "export.jsonl"
    invoke("results", "export", run_id, "-o", str(export), "--results-dir", str(results))
    assert REPLY in export.read_text(encoding="utf-8")  # lvu's export writes it raw too
    rescored = tmp_path / "rescored.jsonl"
    invoke("score", "videomme", str(export), "--data", str(data), "--set", "compat=lmms-eval", "--out", str(rescored))
    again = {r["sample_id"]: r for r in records(rescored)}
    assert {k: (r["response"], r["prediction"], r["score"]) for k, r in again.items()} == \
        {k: (r["response"], r["prediction"], r["score"]) for k, r in rows.items()}


# ---- VLMEvalKit sheets ---------------------------------------------------------------------------


@pytest.mark.parametrize("quoting", [csv.QUOTE_MINIMAL, csv.QUOTE_ALL], ids=["pandas-default", "vlmevalkit-dump"])
def test_vlmevalkit_tsv_with_line_separators_in_predictions(quoting, tmp_path):
    (tmp_path / "videos").mkdir()
    root = videomme_release(tmp_path / "release", tmp_path / "videos", GROUPED)
    predictions = {"001-1": "C\u2028because three birds fly.", "001-2": "A\x85 cat", "002-1": "B\u2029two dogs"}
    text = vlmevalkit_sheet(GROUPED, predictions)
    if quoting == csv.QUOTE_ALL:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter="\t"))
        buffer = io.StringIO()
        csv.writer(buffer, delimiter="\t", lineterminator="\n", quoting=quoting).writerows(rows)
        text = buffer.getvalue()
    else:
        assert '"' not in text and "\u2028" in text  # unquoted, as pandas writes it
    sheet = tmp_path / "Qwen2.5-VL-7B_Video-MME_8frame.tsv"
    sheet.write_text(text, encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    invoke("score", "videomme", str(sheet), "--data", str(root), "--out", str(out))
    got = {r["sample_id"]: (r["response"], r["prediction"]) for r in records(out)}
    assert got == {"001-1": (predictions["001-1"], 2), "001-2": (predictions["001-2"], 0),
                   "002-1": (predictions["002-1"], 1)}


# ---- the other JSONL readers ---------------------------------------------------------------------

TEXT = "first\u2028second\u2029third\x85fourth"


def two_lines(path: Path, first: dict, second: dict) -> Path:
    path.write_text(json.dumps(first, ensure_ascii=False) + "\n" + json.dumps(second, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    assert len(path.read_text(encoding="utf-8").splitlines()) > 2  # what broke the old readers
    return path


def test_prediction_lines(tmp_path):
    samples = {i: Sample(id=i, benchmark="mine", video=VideoRef(path="a.mp4", duration=60.0), question="Q?",
                         options=["x", "y"], answer=0) for i in ("q1", "q2")}
    path = two_lines(tmp_path / "preds.jsonl", {"sample_id": "q1", "response": TEXT}, {"sample_id": "q2", "response": "A"})
    pairs = read_prediction_lines(path, samples, key_of=lambda r: r["sample_id"], what="sample_id")
    assert [(s.id, r) for s, r in pairs] == [("q1", TEXT), ("q2", "A")]


def test_release_records(tmp_path):
    first, second = {"id": "v1_0", "question": TEXT}, {"id": "v2_0", "question": "plain"}
    assert lvb_records(two_lines(tmp_path / "lvb_val.jsonl", first, second)) == [first, second]
    first, second = {"key": "k1", "question": TEXT}, {"key": "k2", "question": "plain"}
    assert neptune_records(two_lines(tmp_path / "neptune_full.jsonl", first, second)) == [first, second]


def test_dev_set(tmp_path):
    path = two_lines(tmp_path / "dev.jsonl", {"question": TEXT, "reference": "a dog", "candidate": TEXT, "label": 1},
                     {"question": "q", "reference": "r", "candidate": "c", "label": 0})
    rows = read_dev_set(path)
    assert [(r.question, r.candidate, r.label, r.id) for r in rows] == [(TEXT, TEXT, 1, "1"), ("q", "c", 0, "2")]


def test_needle_lines_and_their_captions(tmp_path):
    path = two_lines(tmp_path / "needles.jsonl",
                     {"text": "RED KITE", "question": f"What flies?{TEXT}", "options": ["a kite", TEXT], "answer": 1,
                      "caption": f"a red{TEXT} kite"},
                     {"text": "BLUE BOAT", "caption": "a boat"})
    needles = load_needles(path)
    assert [(n.where, n.question, n.options, n.answer) for n in needles] == [
        (f"{path}:1", f"What flies?{TEXT}", ("a kite", TEXT), 1), (f"{path}:2", None, (), None)]
    # the captions are keyed by the same file:line (whitespace, U+2028 included, folded as documented)
    assert jsonl_captions(path) == {f"{path}:1": " ".join(f"a red{TEXT} kite".split()), f"{path}:2": "a boat"}
