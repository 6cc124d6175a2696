"""The "How the harnesses read a reply" table of each docs/benchmarks/<name>.md is checked cell by cell.

Each row is one known difference between the modes (official, lmms-eval@X, vlmevalkit@X, ...) with
one example reply; each cell is what lvu scores for that reply under that column's `compat`, graded
as `lvu score` grades a row of a saved predictions file (runs/importer.grade_rows):
`1` right, `0` wrong, another number for a score such a mode gives (VLMEvalKit MLVU's `-1`),
`failed` for a sample stored as failed. The table must have a column for every mode the benchmark
offers, so a new mode cannot land without its differences shown.

Table format (Markdown), under a heading `## How the harnesses read a reply`:

    | What differs | Reply | Options | Gold | `official` | `lmms-eval` | ... |
    |---|---|---|---|---|---|---|
    | a lone letter among the last 4 words only | `"B is correct because ..."` | | B | 1 | 1 | 0 |

Reply: a JSON string literal in backticks (escapes such as \\n and \\u2028 work; write `\\|` for a
`|`). Options: the option texts separated by " ; " (empty: `A cat ; Two dogs ; Three birds ; Nothing`).
Gold: the answer letter.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from lvu.errors import LvuError
from lvu.runs.grading import make_benchmark
from lvu.runs.importer import grade_rows
from lvu.runs.saved_files import SavedRow
from lvu.scoring.vlmevalkit import FAIL_MSG, is_api_failure, is_vlmevalkit
from lvu.types import LETTERS, Sample, SampleResult

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
HEADING = "## How the harnesses read a reply"
DEFAULT_OPTIONS = ["A cat", "Two dogs", "Three birds", "Nothing"]
BENCHMARKS = ("videomme", "longvideobench", "mlvu", "lvbench", "neptune")

SETTINGS: dict[str, dict[str, Any]] = {
    "longvideobench": {"split": "val", "subtitles": "none"},
    "mlvu": {"split": "dev"},
}
"""Settings every column of a benchmark's table is graded with (beside its `compat`)."""


def make_sample(benchmark: str, options: list[str], gold: int) -> Sample:
    """A multiple-choice sample with what each benchmark's extractors read from `extra`."""
    extra: dict[str, Any] = {"answer_letter": LETTERS[gold], "answer_text": options[gold],
                             "answer_first": LETTERS[options.index(options[gold])]}
    labels = {"mlvu": {"task": "count"}, "videomme": {"duration": "short", "task": "Counting Problem"},
              "longvideobench": {"duration_group": "15", "question_category": "S2E"},
              "lvbench": {"question_type": "key information retrieval"}}.get(benchmark, {"task": "AC"})
    return Sample(id="q1", benchmark=benchmark, video={"path": "v.mp4", "duration": 10.0}, question="What happens?",
                  options=options, answer=gold, labels=labels, extra=extra)


def cell_of(result: SampleResult) -> str:
    if result.error is not None:
        return "failed"
    value = float(result.score if result.score is not None else 0.0)
    return str(int(value)) if value.is_integer() else f"{value:g}"


def grade_reply(benchmark: str, compat: str, reply: str, options: list[str], gold: int) -> str:
    bench = make_benchmark(benchmark, {**SETTINGS.get(benchmark, {}), "compat": compat})
    # as lvu score reads a VLMEvalKit sheet: its API failure message is a failed sample outside the vlmevalkit modes
    error = f"VLMEvalKit: {FAIL_MSG}" if is_api_failure(reply) and not is_vlmevalkit(compat) else None
    [result] = grade_rows(bench, [SavedRow(make_sample(benchmark, options, gold), reply, error)])
    return cell_of(result)


def _cells(line: str) -> list[str]:
    inner = line.strip().strip("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def read_table(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """(the compat columns, one dict per row) of the table under HEADING in `path`."""
    text = path.read_text(encoding="utf-8")
    assert HEADING in text, f"{path.name}: no '{HEADING}' section"
    lines = text.split(HEADING, 1)[1].split("\n")
    table = [ln for ln in _table_block(lines)]
    header = _cells(table[0])
    assert header[:4] == ["What differs", "Reply", "Options", "Gold"], (path.name, header)
    compats = [h.strip("`") for h in header[4:]]
    rows = [dict(zip(header[:4] + compats, _cells(ln))) for ln in table[2:]]
    return compats, rows


def _table_block(lines: list[str]) -> list[str]:
    started, out = False, []
    for ln in lines:
        if ln.startswith("|"):
            started = True
            out.append(ln)
        elif started:
            break
    return out


def cases() -> list[Any]:
    out = []
    for name in BENCHMARKS:
        path = DOCS / f"{name}.md"
        if HEADING not in path.read_text(encoding="utf-8"):
            continue
        compats, rows = read_table(path)
        for n, row in enumerate(rows, 1):
            out.append(pytest.param(name, compats, row, id=f"{name}-{n}"))
    return out


def modes_of(benchmark: str) -> list[str]:
    """The compat values the benchmark runs under (its harness table, less the ones it refuses)."""
    bench = make_benchmark(benchmark, SETTINGS.get(benchmark, {}))
    module = __import__(type(bench).__module__, fromlist=["HARNESSES"])
    modes = []
    for compat in module.HARNESSES:
        try:
            make_benchmark(benchmark, {**SETTINGS.get(benchmark, {}), "compat": compat})
        except LvuError:
            continue
        modes.append(compat)
    return modes


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_every_benchmark_has_the_table_with_every_mode(benchmark):
    compats, rows = read_table(DOCS / f"{benchmark}.md")
    assert set(compats) == set(modes_of(benchmark)), (benchmark, compats)
    assert rows, benchmark


@pytest.mark.parametrize(("benchmark", "compats", "row"), cases())
def test_each_cell_is_what_lvu_scores(benchmark, compats, row):
    reply_cell = row["Reply"]
    assert reply_cell.startswith("`") and reply_cell.endswith("`"), row
    reply = json.loads(reply_cell[1:-1])
    options = [o.strip() for o in row["Options"].split(" ; ")] if row["Options"] else DEFAULT_OPTIONS
    gold = LETTERS.index(row["Gold"])
    got = {c: grade_reply(benchmark, c, reply, options, gold) for c in compats}
    want = {c: row[c] for c in compats}
    assert got == want, f"{benchmark}: {row['What differs']}: reply {reply!r}"
