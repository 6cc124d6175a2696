"""Daily use of stored runs (issue 30, items 1, 2, 5 and the list part of 10): runs of different
served models look different everywhere, results are found by one rule from any subfolder and
reading never creates a store, a run where every sample failed says "no answers", unreadable
replies are counted, and a failed sample's stored traceback is one command away."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import fakes  # noqa: F401  (registers the fake benchmark and the fake-follow model)
from lvu.api import run
from lvu.media.testing import make_video
from lvu.models.base import Model, register_model
from lvu.models.testing_server import FakeOpenAIServer
from lvu.runs.store import Store
from lvu.types import Prompt, Response, Sample, VideoRef

from test_headline_and_limit import invoke, table_rows  # the CLI runner and table reader those tests use

TRACEBACK = ('Traceback (most recent call last):\n  File "mypkg/models.py", line 12, in generate\n'
             '    return replies[7]\nIndexError: list index out of range\n')


@register_model("daily-mute")
class MuteModel(Model):
    """Replies with text that names no option: a reply with no readable answer."""

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        return Response(text="(1)\n(2)\n(3)")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "250")  # rich tables on one line each, so rows parse
    monkeypatch.delenv("LVU_RESULTS_DIR", raising=False)
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))




def fake_run(results_dir: Path, n: int = 3, **model_args):
    return run("fake", "fake-follow", settings={"n": n}, model_args=model_args, results_dir=results_dir,
               show_progress=False, report=False)


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """One JSONL file (one generated video) run by two models served by one OpenAI-compatible
    server: `-a model=fake` answers A, `-a model=fake-smart` answers right."""
    root = tmp_path_factory.mktemp("served")
    make_video(root / "v.mp4", seconds=2, fps=5, gop=5)
    with open(root / "q.jsonl", "w") as f:
        for i in range(3):
            f.write(Sample(id=f"s{i}", benchmark="jsonl", video=VideoRef(path="v.mp4"), question=f"q{i}?",
                           options=["a", "b", "c", "d"], answer=i).model_dump_json() + "\n")

    def answer(body: dict) -> str:
        text = json.dumps(body["messages"])
        right = next(i for i in range(3) if f"q{i}?" in text)
        return "ABCD"[right] if body["model"] == "fake-smart" else "A"

    ids = {}
    with FakeOpenAIServer(answer=answer) as server:
        for name in ("fake", "fake-smart"):
            ids[name] = run("jsonl", "openai", settings={"data": str(root / "q.jsonl"), "frames": 2},
                            model_args={"model": name, "base_url": server.base_url, "cache": False},
                            results_dir=root / "lvu-results", show_progress=False, report=False).run_id
    return root / "lvu-results", ids


# ---- item 1: which model, on which data ------------------------------------------------------------------


@pytest.mark.slow
def test_runs_of_two_served_models_differ_in_list_json_and_export(two_models):
    results, ids = two_models
    listed = invoke("results", "list", "--results-dir", results)
    assert listed.exit_code == 0, listed.output
    rows = {r["run"]: r for r in table_rows(listed.stdout)}
    assert rows[ids["fake"]]["model"] == "openai(fake)" and rows[ids["fake-smart"]]["model"] == "openai(fake-smart)"
    assert rows[ids["fake"]]["benchmark"] == rows[ids["fake-smart"]]["benchmark"] == "jsonl(q.jsonl)"
    assert (rows[ids["fake"]]["score %"], rows[ids["fake-smart"]]["score %"]) == ("33.3", "100.0")

    as_json = invoke("results", "list", "--json", "--results-dir", results)
    by_id = {r["run_id"]: r for r in json.loads(as_json.stdout)}
    assert {i: (r["model"], r["backend"], r["data"], r["benchmark"]) for i, r in by_id.items()} == {
        ids["fake"]: ("openai(fake)", "openai", "jsonl(q.jsonl)", "jsonl"),
        ids["fake-smart"]: ("openai(fake-smart)", "openai", "jsonl(q.jsonl)", "jsonl")}

    exported = {}
    for name, run_id in ids.items():
        lines = invoke("results", "export", run_id, "--results-dir", results).stdout.splitlines()
        exported[name] = {(r["model"], r["data"]) for r in map(json.loads, lines)}
        table = list(csv.DictReader(io.StringIO(invoke("results", "export", run_id, "-f", "csv", "--results-dir",
                                                       results).stdout)))
        assert {(r["model"], r["data"]) for r in table} == exported[name] and len(table) == 3
    assert exported == {"fake": {("openai(fake)", "jsonl(q.jsonl)")},
                        "fake-smart": {("openai(fake-smart)", "jsonl(q.jsonl)")}}

    shown = invoke("results", "show", ids["fake-smart"], "--results-dir", results)
    assert "jsonl(q.jsonl) × openai(fake-smart)" in shown.stdout


@pytest.mark.slow
def test_model_and_benchmark_filters_match_what_the_list_shows(two_models):
    results, ids = two_models

    def listed(*args: str) -> set[str]:
        out = invoke("results", "list", "--json", "--results-dir", results, *args)
        assert out.exit_code == 0, out.output
        return {r["run_id"] for r in json.loads(out.stdout)}

    assert listed("--model", "fake-smart") == listed("--model", "openai(fake-smart)") == {ids["fake-smart"]}
    assert listed("--model", "openai") == set(ids.values())
    assert listed("--benchmark", "q.jsonl") == listed("--benchmark", "jsonl(q.jsonl)") == set(ids.values())


@pytest.mark.slow
def test_a_filter_that_matches_nothing_says_why_instead_of_an_empty_table(two_models, tmp_path):
    results, _ = two_models
    out = invoke("results", "list", "--model", "fake-smarter", "--results-dir", results)
    assert out.exit_code == 0
    assert out.stdout.strip() == ("no run matches --model fake-smarter; models stored: openai(fake), "
                                  "openai(fake-smart)")
    assert "┃" not in out.stdout
    out = invoke("results", "list", "--benchmark", "videomme", "--results-dir", results)
    assert out.stdout.strip() == "no run matches --benchmark videomme; benchmarks stored: jsonl(q.jsonl)"
    out = invoke("results", "list", "--tag", "paper", "--results-dir", results)
    assert out.stdout.startswith("no run matches --tag paper; no run has a tag")
    out = invoke("results", "list", "--since", "2999-01-01", "--results-dir", results)
    assert out.stdout.startswith("no run matches --since 2999-01-01; the newest run was updated ")
    as_json = invoke("results", "list", "--json", "--model", "fake-smarter", "--results-dir", results)
    assert json.loads(as_json.stdout) == [] and "no run matches --model fake-smarter" in as_json.stderr


# ---- item 2: where results are ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_subfolder_finds_the_parent_s_lvu_results_and_says_where(tmp_path, monkeypatch):
    ran = fake_run(tmp_path / "lvu-results")
    deeper = tmp_path / "src" / "deeper"
    deeper.mkdir(parents=True)
    monkeypatch.chdir(deeper)
    listed = invoke("results", "list")
    assert listed.exit_code == 0, listed.output
    assert [r["run"] for r in table_rows(listed.stdout)] == [ran.run_id]
    assert f"results: {tmp_path / 'lvu-results'} (the nearest lvu-results above {deeper})" in listed.stderr
    assert not (deeper / "lvu-results").exists()
    for command in (["results", "show"], ["results", "export"], ["compare", ran.run_id, ran.run_id]):
        out = invoke(*command)
        assert f"results: {tmp_path / 'lvu-results'} (" in out.stderr, (command, out.output)
    as_json = invoke("results", "list", "--json")
    assert [r["run_id"] for r in json.loads(as_json.stdout)] == [ran.run_id]  # stdout stays pure JSON


@pytest.mark.slow
def test_reading_in_a_folder_without_results_fails_in_one_line_and_creates_nothing(tmp_path, monkeypatch):
    if any((folder / "lvu-results").is_dir() for folder in tmp_path.parents):
        pytest.skip("an lvu-results folder above the test's folder is what the lookup would find")
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    monkeypatch.chdir(empty)
    for command in (["results", "list"], ["results", "list", "--json"], ["results", "show"], ["results", "export"],
                    ["results", "tag", "abc", "paper"], ["results", "delete", "abc", "--yes"], ["compare"],
                    ["report"], ["analyse", "letters"], ["view"]):
        out = invoke(*command)
        assert out.exit_code != 0, (command, out.output)
        assert str(out.exception) == (f"no runs: no lvu-results in {empty} or above and $LVU_RESULTS_DIR is unset — "
                                      "cd to the folder you ran lvu in, or pass --results-dir DIR"), command
        assert list(empty.iterdir()) == [], command  # no folder, no .gitignore, no WAL files

    missing = tmp_path / "typo"
    out = invoke("results", "list", "--results-dir", missing)
    assert out.exit_code != 0 and f"--results-dir {missing} holds no run store" in str(out.exception)
    monkeypatch.setenv("LVU_RESULTS_DIR", str(missing))
    out = invoke("results", "show")
    assert out.exit_code != 0 and f"$LVU_RESULTS_DIR is {missing}, which holds no run store" in str(out.exception)
    assert not missing.exists() and list(empty.iterdir()) == []


# ---- item 5: runs where every sample failed --------------------------------------------------------------


@pytest.mark.slow
def test_an_all_failed_run_says_no_answers_and_is_left_out_of_compare(tmp_path):
    failed = fake_run(tmp_path, error=["q000", "q001", "q002"])
    a, b = fake_run(tmp_path, delay=0), fake_run(tmp_path, delay=0.001)
    listed = {r["run"]: r for r in table_rows(invoke("results", "list", "--results-dir", tmp_path).stdout)}
    assert listed[failed.run_id]["score %"] == "no answers (3 of 3 failed)"
    assert listed[a.run_id]["score %"] == "100.0"
    as_json = {r["run_id"]: r for r in json.loads(invoke("results", "list", "--json", "--results-dir", tmp_path).stdout)}
    assert as_json[failed.run_id]["no_answers"] is True and as_json[failed.run_id]["score"] is None
    assert as_json[a.run_id]["no_answers"] is False and as_json[a.run_id]["score"]["value"] == 100.0

    shown = invoke("results", "show", failed.run_id, "--results-dir", tmp_path)
    assert f"run {failed.run_id}: 0/3 samples stored without error, 3 failed, status done · no answers (3 of 3 " \
           "failed)" in shown.stdout and "score 0.0" not in shown.stdout
    shown_json = json.loads(invoke("results", "show", failed.run_id, "--json", "--results-dir", tmp_path).stdout)
    assert shown_json["no_answers"] is True and shown_json["score"] is None

    refused = invoke("compare", failed.run_id, a.run_id, "--bootstrap", "20", "--results-dir", tmp_path)
    assert refused.exit_code != 0 and f"{failed.run_id} (" in str(refused.exception)
    assert "no answers (3 of 3 failed)" in str(refused.exception)
    three = invoke("compare", failed.run_id, a.run_id, b.run_id, "--bootstrap", "20", "--results-dir", tmp_path)
    assert three.exit_code == 0, three.output
    assert f"left out, no answers to compare — {failed.run_id}" in three.stderr
    assert f"A = {a.run_id} (fake × fake-follow); B = {b.run_id}" in three.stdout
    kept = invoke("compare", failed.run_id, a.run_id, "--bootstrap", "20", "--include-failed", "--results-dir", tmp_path)
    assert kept.exit_code == 0, kept.output
    assert f"A = {failed.run_id}" in kept.stdout and "left out" not in kept.output
    latest = invoke("compare", "--bootstrap", "20", "--results-dir", tmp_path)  # the two latest runs with answers
    assert latest.exit_code == 0 and f"A = {a.run_id}" in latest.stdout and f"B = {b.run_id}" in latest.stdout


# ---- item 10 (list part): unreadable replies -------------------------------------------------------------


def test_results_list_counts_replies_with_no_readable_answer(tmp_path):
    mute = run("fake", "daily-mute", settings={"n": 4}, results_dir=tmp_path, show_progress=False, report=False)
    fine = fake_run(tmp_path, n=4)
    rows = {r["run"]: r for r in table_rows(invoke("results", "list", "--results-dir", tmp_path).stdout)}
    assert (rows[mute.run_id]["unreadable"], rows[fine.run_id]["unreadable"]) == ("4", "0")
    as_json = {r["run_id"]: r["unreadable"]
               for r in json.loads(invoke("results", "list", "--json", "--results-dir", tmp_path).stdout)}
    assert as_json == {mute.run_id: 4, fine.run_id: 0}
    store = Store(tmp_path)
    assert {run_id: entry[2] for run_id, entry in store.current_summaries().items()} == as_json  # cached with the run
    shown = invoke("results", "show", mute.run_id, "--results-dir", tmp_path)
    assert "4 of 4 replies held no readable answer" in shown.stderr and "q000: '(1)" in shown.stderr


@pytest.mark.slow
def test_stores_of_an_earlier_lvu_list_their_unreadable_count(tmp_path):
    mute = run("fake", "daily-mute", settings={"n": 2}, results_dir=tmp_path, show_progress=False, report=False)
    store = Store(tmp_path)
    store.db.execute("UPDATE run_summary SET unreadable = NULL")  # a summary cached before lvu counted them
    rows = table_rows(invoke("results", "list", "--results-dir", tmp_path).stdout)
    assert [(r["run"], r["unreadable"]) for r in rows] == [(mute.run_id, "2")]
    store.db.execute("ALTER TABLE run_summary DROP COLUMN unreadable")  # a store made before the column
    store.close()
    rows = table_rows(invoke("results", "list", "--results-dir", tmp_path).stdout)
    assert [(r["run"], r["unreadable"]) for r in rows] == [(mute.run_id, "2")]
    assert Store(tmp_path).current_summaries()[mute.run_id][2] == 2  # migrated (writable), so cached again


# ---- item 4's command: --trace ----------------------------------------------------------------------------


@pytest.mark.slow
def test_results_show_trace_prints_a_stored_traceback(tmp_path):
    ran = fake_run(tmp_path, n=4, fail=["q001"], error=["q002"])
    store = Store(tmp_path)
    records = {r.sample_id: (i, r) for i, r in enumerate(store.results(ran.run_id))}
    ordinal, record = records["q001"]
    store.put(ran.run_id, record.model_copy(update={"traceback": TRACEBACK}), ordinal)

    traced = invoke("results", "show", ran.run_id, "--trace", "q001", "--results-dir", tmp_path)
    assert traced.exit_code == 0, traced.output
    assert TRACEBACK.rstrip() in traced.stdout and traced.stdout.startswith("q001: ")
    shown = invoke("results", "show", ran.run_id, "--results-dir", tmp_path)
    lines = shown.stdout.splitlines()
    assert any(line.startswith("q001: ") and line.endswith(f"(traceback: lvu results show {ran.run_id} --trace q001)")
               for line in lines), shown.stdout
    assert not any(line.startswith("q002: ") and "--trace" in line for line in lines)
    message = invoke("results", "show", ran.run_id, "--trace", "q002", "--results-dir", tmp_path)
    assert message.stdout.startswith("no traceback stored for q002: it failed with a message, not an exception")
    unknown = invoke("results", "show", ran.run_id, "--trace", "q999", "--results-dir", tmp_path)
    assert unknown.exit_code != 0
    assert str(unknown.exception) == f"sample q999 not found in run {ran.run_id}; its failed samples: q001, q002"
    as_json = json.loads(invoke("results", "show", ran.run_id, "--json", "--results-dir", tmp_path).stdout)
    assert {f["sample_id"]: f["traceback"] for f in as_json["failures"]} == {"q001": TRACEBACK, "q002": None}
