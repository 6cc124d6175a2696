"""`lvu analyse leak` and every build's leak.json: options-only rules on hand-made sets whose answer is
known — a set answered by its longest option leaks, a balanced one does not, ties never become a
position rule, the 2-fold priors find "answer 3 if offered" — the text-only model row, the command on
a JSONL file, and the blind filter (shortcut and `lvu build run`) writing leak.json with a warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fakes  # noqa: F401  (registers fake-follow: it answers the letter its question names)
from lvu.analysis.leak import audit, leak_analysis, leak_table
from lvu.benchmarks.jsonl import write_samples
from lvu.scoring.leak import (ALL, Question, audit_rules, halves, leak_warnings, number, wilson, write_leak)
from lvu.types import Sample, VideoRef

HERE = Path(__file__).parent
WORDS = ["apple", "bread", "chair", "dream", "eagle", "flame", "grape", "house", "igloo", "jelly", "knife", "lemon"]


def sample(i: int, question: str, options: list[str], answer: int | str | None, **labels: str) -> Sample:
    return Sample(id=f"q{i:03d}", benchmark="mine", video=VideoRef(path="none.mp4", duration=60.0), question=question,
                  options=options, answer=answer, labels=labels)


def rows(result) -> dict[tuple[str, str], object]:
    return {(r.rule, r.group): r for r in result.rows}


def longest_set(n: int = 40) -> list[Sample]:
    """The answer is always the longest option, at every position in turn."""
    out = []
    for i in range(n):
        options = [WORDS[(i + k) % len(WORDS)] for k in range(4)]
        answer = i % 4
        options[answer] += " in the morning light"
        out.append(sample(i, f"Question number {i}?", options, answer, task="a" if i % 2 else "b"))
    return out


def balanced_set(n: int = 48) -> list[Sample]:
    """Five-letter one-word options the question never names; answers cycle the positions and words."""
    return [sample(i, f"Question number {i}?", [WORDS[(i + k) % len(WORDS)] for k in range(4)], (i // 3) % 4)
            for i in range(n)]


def test_the_longest_option_leaks_and_the_shortest_is_below_chance():
    result = audit_rules(longest_set())
    r = rows(result)
    assert r[("longest", ALL)].accuracy == 100.0 and r[("longest", ALL)].verdict == "leaks"
    assert r[("longest", ALL)].chance == 25.0 and r[("longest", ALL)].n == 40
    assert r[("shortest", ALL)].accuracy == 0.0 and r[("shortest", ALL)].verdict == "below"
    assert r[("longest", "task: a")].n == 20 and r[("longest", "task: a")].verdict == "leaks"  # grouped by task
    assert r[("position-prior", ALL)].verdict == "ok" and r[("numeric-prior", ALL)].verdict == "n/a"
    lines = leak_warnings(result)
    assert any(line.startswith("warning: options-only leak — longest (all): 100.0 %") for line in lines)
    assert any("shortest" in line and "ruling it out beats chance" in line for line in lines)
    assert len(lines) == len({r.rule for r in result.leaking()})  # one line per rule, groups folded in


def test_a_balanced_set_is_ok_for_every_rule():
    result = audit_rules(balanced_set())
    overall = [r for r in result.rows if r.group == ALL]
    assert {r.verdict for r in overall} == {"ok", "n/a"}, [(r.rule, r.accuracy, r.verdict) for r in overall]
    assert rows(result)[("numeric-prior", ALL)].verdict == "n/a" and not leak_warnings(result)


def test_ties_score_one_over_k_never_the_first_position():
    uniform = [sample(i, "How many?", ["1", "2", "3", "4"], i % 4) for i in range(40)]
    first = [sample(i, f"How many {i}?", ["1", "2", "3", "4"], 0) for i in range(40)]
    for rule in ("longest", "shortest", "question-overlap", "consensus"):
        for data in (uniform, first):
            r = rows(audit_rules(data))[(rule, ALL)]
            assert r.accuracy == pytest.approx(25.0) and r.chance == 25.0 and r.verdict == "ok", rule
    # the answer always first: a position rule, found by the position prior, not by `longest`
    assert rows(audit_rules(first))[("position-prior", ALL)].verdict == "leaks"


def test_answer_three_if_offered_leaks_through_the_fitted_priors():
    """MLVU's built Action Count: "3 if offered, else 2, else 4" answers far above chance."""
    data = []
    for i in range(60):
        values = [[1, 2, 3, 4], [2, 3, 4, 5], [1, 2, 4, 5], [3, 4, 5, 6], [2, 4, 5, 6]][i % 5]
        shift = i % 4
        values = values[shift:] + values[:shift]
        answer = next(values.index(v) for v in (3, 2, 4) if v in values)
        data.append(sample(i, f"How many times does the man jump in clip {i}?", [f"{v} times" for v in values],
                           answer, task="count"))
    r = rows(audit_rules(data))
    assert r[("numeric-prior", ALL)].n == 60 and r[("numeric-prior", ALL)].accuracy == 100.0
    assert r[("numeric-prior", ALL)].verdict == "leaks" and r[("answer-prior", ALL)].verdict == "leaks"
    assert r[("longest", ALL)].verdict == "ok" and r[("numeric-prior", "task: count")].verdict == "leaks"


def test_question_overlap_and_consensus_find_their_leaks():
    overlap, consensus = [], []
    for i in range(30):
        options = [WORDS[(i + k) % len(WORDS)] for k in range(4)]
        answer = (i * 7) % 4
        overlap.append(sample(i, f"Which {options[answer]} is shown in scene {i}?", options, answer))
        base = ["red", "car", "parked", f"w{i}"]  # distractors edit one word each: the answer shares the most
        edits = [base, ["blue", *base[1:]], [base[0], "bike", *base[2:]], [*base[:2], "moving", base[3]]]
        consensus.append(sample(i, "What is in the street?", [" ".join(edits[(k - answer) % 4]) for k in range(4)],
                                answer))
    assert rows(audit_rules(overlap))[("question-overlap", ALL)].accuracy == 100.0
    assert rows(audit_rules(overlap))[("question-overlap", ALL)].verdict == "leaks"
    assert rows(audit_rules(consensus))[("consensus", ALL)].accuracy == 100.0
    assert rows(audit_rules(consensus))[("consensus", ALL)].verdict == "leaks"


def test_halves_are_seeded_and_keep_copies_of_a_question_together():
    qs = [Question(f"q{i % 10}", ("a", "b"), 0, f"k{i % 10}") for i in range(40)]
    h = halves(qs, 0)
    assert h == halves(qs, 0) and h != halves(qs, 1)
    assert all(h[i] == h[i % 10] for i in range(40)) and sum(h[:10]) == 5  # copies share a half; 5 + 5 keys


def test_numbers_wilson_skipped_samples_and_groups():
    assert [number(t) for t in ("3", "3.", "2 times", "4 people", "three", "Twice", "1,000", "10%")] == \
        [3, 3, 2, 4, 3, 2, 1000, 10]
    assert [number(t) for t in ("A cat", "3 to 5", "00:30", "three red big cars")] == [None] * 4
    low, high = wilson(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634) and wilson(0, 10)[0] == 0.0
    data = balanced_set(8) + [sample(100, "Describe it.", [], "a dog"), sample(101, "Pick.", ["x", "y"], None)]
    data[0].labels = {"question_type": ["KIR", "ER"]}
    result = audit_rules(data)
    assert (result.samples, result.audited) == (10, 8) and result.by == "question_type"
    assert result.skipped == {"open-ended (fewer than 2 options)": 1, "answer hidden": 1}
    assert {r.group for r in result.rows} == {ALL, "question_type: ER", "question_type: KIR"}
    assert audit_rules(data, by="").by is None and audit_rules([]).rows[0].verdict == "n/a"


def test_leak_json_is_stable_and_the_table_and_plot_read_the_result(tmp_path):
    result = audit_rules(longest_set(), source="mine.jsonl")
    first = write_leak(result, tmp_path).read_bytes()
    assert write_leak(audit_rules(longest_set(), source="mine.jsonl"), tmp_path).read_bytes() == first
    data = json.loads(first)
    assert list(data) == sorted(data) and data["audited"] == 40 and data["warnings"] == leak_warnings(result)
    row = next(r for r in data["rows"] if r["rule"] == "longest" and r["group"] == ALL)
    assert row == {"rule": "longest", "group": ALL, "n": 40, "accuracy": 100.0, "chance": 25.0,
                   "low": 91.24, "high": 100.0, "verdict": "leaks"}
    table = leak_table(result)
    assert table.columns == ["rule", "group", "n", "accuracy %", "chance %", "95 % CI", "verdict"]
    assert ["longest", ALL, 40, "100.0", "25.0", "[91.2, 100.0]", "leaks"] in table.rows
    assert not any(r[0] == "numeric-prior" and r[1] != ALL for r in table.rows)  # n/a groups left out
    assert leak_analysis(result).x[0] == "longest"


def test_the_text_only_model_is_one_more_row(tmp_path):
    data = [sample(i, f"Question {i}: pick {'ABCD'[i % 4] if i < 30 else 'ABCD'[(i + 1) % 4]}",
                   [WORDS[(i + k) % len(WORDS)] for k in range(4)], i % 4) for i in range(40)]
    result = audit(data, text_model=("fake-follow", {}), results_dir=tmp_path / "results", by="")
    r = rows(result)[("text-model: fake-follow", ALL)]
    assert (r.n, r.accuracy, r.verdict) == (40, 75.0, "leaks") and result.failed == 0
    again = audit(data, text_model=("fake-follow", {}), results_dir=tmp_path / "results", by="")
    assert any("40 answers from the ledger" in note for note in again.notes)  # the filter's ledger: resumed


def lvu(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lvu.cli", *argv], capture_output=True, text=True, env=env,
                          check=False)


@pytest.fixture()
def env(tmp_path) -> dict[str, str]:
    return {**os.environ, "COLUMNS": "200", "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
            "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_RESULTS_DIR": str(tmp_path / "results"), "LVU_OFFLINE": "1"}


@pytest.mark.slow
def test_the_command_on_a_jsonl_file(tmp_path, env):
    path = write_samples(tmp_path / "mine.jsonl", longest_set())
    done = lvu("analyse", "leak", str(path), "--plot", str(tmp_path / "leak.png"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr  # an audit: leaks are findings, not failures
    assert "Options-only leak audit" in done.stdout and "task: a" in done.stdout
    line = next(line for line in done.stdout.splitlines() if "longest" in line and " all " in line)
    assert "100.0" in line and "leaks" in line
    assert "warning: options-only leak — longest (all)" in done.stderr and (tmp_path / "leak.png").stat().st_size
    as_json = lvu("analyse", "leak", str(path), "--json", "--by", "task", env=env)
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["by"] == "task"
    overall = json.loads(lvu("analyse", "leak", str(path), "--json", "--by", "none", env=env).stdout)
    assert overall["by"] is None and {r["group"] for r in overall["rows"]} == {ALL}
    named = write_samples(tmp_path / "named.jsonl", [sample(i, f"Question {i}: pick {'ABCD'[i % 4]}", WORDS[:4], i % 4)
                                                     for i in range(12)])
    with_model = lvu("analyse", "leak", str(named), "-m", "fakes:FollowModel", env=env)
    assert with_model.returncode == 0, with_model.stdout + with_model.stderr
    line = next(line for line in with_model.stdout.splitlines() if "text-model: fakes:FollowModel" in line)
    assert "100.0" in line and "leaks" in line and "warning: options-only leak — text-model" in with_model.stderr
    for argv, message in ((["leak", str(path), "--bootstrap", "10"], "--bootstrap does not apply to leak"),
                          (["depth", "--by", "task"], "--by applies to `lvu analyse leak` only"),
                          (["leak", str(path), "--by", "nope"], "--by nope: no sample of"),
                          (["leak"], "leak audits one benchmark or JSONL file"),
                          (["leak", str(path), "--data", str(path)], "pass it alone, without --data")):
        refused = lvu("analyse", *argv, env=env)
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_build_writes_leak_json_and_warns(tmp_path, env):
    path = write_samples(tmp_path / "mine.jsonl", longest_set(60))
    done = lvu("build", "filter", str(path), "--rule", "text-only", "-m", "random", "-o", str(tmp_path / "f"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    leak = json.loads((tmp_path / "f" / "leak.json").read_text())
    kept = len((tmp_path / "f" / "kept.jsonl").read_text().splitlines())
    assert leak["source"] == "kept.jsonl" and leak["audited"] == kept < 60  # the kept file, not the input
    assert "warning: options-only leak — longest" in done.stderr
    ran = lvu("build", "run", "blind-filter", str(path), "-o", str(tmp_path / "r"), "--model", "llm=random", "-q",
              env=env)  # the same pipeline through the build runner: its export, then the audit
    assert ran.returncode == 0, ran.stdout + ran.stderr
    kept = len((tmp_path / "r" / "kept.jsonl").read_text().splitlines())
    assert json.loads((tmp_path / "r" / "leak.json").read_text())["audited"] == kept < 60
    assert "leak.json" in ran.stdout and "warning: options-only leak — longest" in ran.stderr


def test_an_export_whose_benchmark_cannot_be_audited_leaves_no_earlier_leak_json(tmp_path, capsys):
    """leak.json always describes the benchmark beside it: a later export whose file cannot be read
    removes the earlier audit instead of leaving it next to the new benchmark."""
    from lvu.construct.pipeline import Pipeline
    from lvu.construct.runner import export_and_audit

    class Writes(Pipeline):
        name = "writes"

        def __init__(self, file: str) -> None:
            super().__init__()
            self.file = file

        def export(self, state, videos, out):
            return {"benchmark": str(out / self.file)}

    write_samples(tmp_path / "good.jsonl", longest_set(20))
    assert "leak.json" in export_and_audit(Writes("good.jsonl"), None, [], tmp_path)
    assert (tmp_path / "leak.json").is_file()
    assert "leak.json" not in export_and_audit(Writes("gone.jsonl"), None, [], tmp_path)  # not there: not auditable
    assert not (tmp_path / "leak.json").exists()
    assert "no leak audit of" in capsys.readouterr().err
