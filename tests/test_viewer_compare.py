"""The viewer and reports for telling runs apart and comparing them (issue 30: items 1, 4, 5, 7, 10):
runs named by model identity and data, 'no answers' headlines, stored tracebacks, unreadable
replies, question text in the sample list, the comparison page and the multi-run report's summary."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("fastapi", reason="the viewer needs lvu[web]")
from fastapi.testclient import TestClient  # noqa: E402

from analysis_runs import result, store_run  # noqa: E402
from lvu.analysis.compare import compare_runs  # noqa: E402
from lvu.analysis.report import build_report, write  # noqa: E402
from lvu.analysis.runs import load_runs  # noqa: E402
from lvu.runs.run_names import unreadable_note  # noqa: E402
from lvu.runs.store import Store  # noqa: E402
from lvu.types import SampleResult  # noqa: E402
from lvu.web.app import create_app  # noqa: E402

B = 200  # resamples: the page and lvu compare must agree at any count


def question(i: int) -> str:
    """Longer than the sample list shows (100 characters), with markup that must stay text."""
    return (f"At step {i}, which door does the fox open <first>, and what does it carry when it leaves the stage "
            "through the back?")


def scored(i: int, correct: bool, **kw) -> SampleResult:
    return result(f"s{i}", correct, {"kind": "even" if i % 2 == 0 else "odd"}, answer=i % 4, question=question(i),
                  options=["a", "b", "c", "d"], response="A", **kw)


def failed(i: int, **kw) -> SampleResult:
    return SampleResult(sample_id=f"s{i}", labels={"kind": "even" if i % 2 == 0 else "odd"}, answer=i % 4, n_options=4,
                        question=question(i), options=["a", "b", "c", "d"], error="openai: 404 Not Found", **kw)


def unreadable_reply(i: int) -> SampleResult:
    return SampleResult(sample_id=f"s{i}", labels={"kind": "even" if i % 2 == 0 else "odd"}, answer=i % 4, n_options=4,
                        question=question(i), options=["a", "b", "c", "d"], response="(1)\n(2)\n(3)",
                        prediction=None, score=0.0, correct=False)


class Runs:
    """Runs of one JSONL file by three served models (and one on other data, one all failed)."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "results"
        data = str(root / "q.jsonl")
        on = {"settings": {"data": data}}
        # fake: right on 0-3; fake-smart: right on 0-7 but s9 failed; the reader: unreadable replies on 0-2
        self.fake = store_run(self.dir, "jsonl", "openai", [scored(i, i < 4) for i in range(10)],
                              model_args={"model": "fake"}, **on)
        self.smart = store_run(self.dir, "jsonl", "openai",
                               [scored(i, i < 8) for i in range(9)] + [failed(9, traceback=TRACE)],
                               model_args={"model": "fake-smart"}, **on)
        self.reader = store_run(self.dir, "jsonl", "openai",
                                [unreadable_reply(i) for i in range(3)] + [scored(i, True) for i in range(3, 10)],
                                model_args={"model": "text-only"}, **on)
        self.dead = store_run(self.dir, "jsonl", "openai", [failed(i) for i in range(8)],
                              model_args={"model": "dead"}, **on)
        self.other = store_run(self.dir, "jsonl", "openai", [scored(i, True) for i in range(4)],
                               model_args={"model": "fake"}, settings={"data": str(root / "other" / "q2.jsonl")})


TRACE = ('Traceback (most recent call last):\n  File "/plug/mymodel.py", line 12, in generate\n'
         '    return parts[3]\nIndexError: list index out of range <script>alert(1)</script>')


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("viewer-compare"))


@pytest.fixture(scope="module")
def client(runs: Runs) -> TestClient:
    return TestClient(create_app(runs.dir))


def run_rows(page: str) -> dict[str, str]:
    """Run id -> its row's HTML on the run list."""
    return {m.group(1): m.group(0) for m in re.finditer(r"<tr class=run>.*?<code>([0-9a-f]+)</code>.*?</tr>", page, re.S)}


def cells(row: str) -> list[str]:
    return [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def store(runs: Runs, run_id: str) -> list[SampleResult]:
    s = Store(runs.dir)
    try:
        return s.results(run_id)
    finally:
        s.close()


# ---- item 1: which model, which data ---------------------------------------------------------------


def test_run_list_and_api_name_runs_by_model_identity_and_data(runs, client):
    api = {r["run_id"]: r for r in client.get("/api/runs").json()}
    assert (api[runs.fake]["model_identity"], api[runs.smart]["model_identity"]) == ("openai(fake)", "openai(fake-smart)")
    assert api[runs.fake]["data"] == "jsonl(q.jsonl)" and api[runs.other]["data"] == "jsonl(q2.jsonl)"
    assert api[runs.fake]["model"] == "openai"  # the bare backend stays where it was
    rows = run_rows(client.get("/").text)
    assert cells(rows[runs.fake])[1:3] == ["jsonl(q.jsonl)", "openai(fake)"]
    assert cells(rows[runs.smart])[1:3] == ["jsonl(q.jsonl)", "openai(fake-smart)"]
    run_page = unescape(client.get(f"/runs/{runs.smart}").text)
    assert "<h1>jsonl(q.jsonl) × openai(fake-smart)</h1>" in run_page


def test_run_list_filters_match_the_identity_and_say_when_nothing_matched(runs, client):
    assert list(run_rows(client.get("/?model=fake-smart").text)) == [runs.smart]
    assert {r["run_id"] for r in client.get("/api/runs", params={"model": "openai(fake)"}).json()} == \
           {runs.fake, runs.other}
    assert list(run_rows(client.get("/?benchmark=q2.jsonl").text)) == [runs.other]
    page = unescape(client.get("/?model=fake-smarter").text)
    assert not run_rows(page)
    assert re.search(r"no run matches model=fake-smarter; models stored: openai\(dead\), openai\(fake\), "
                     r"openai\(fake-smart\), openai\(text-only\)", page)


# ---- item 5: a run where every sample failed ---------------------------------------------------------


def test_a_run_with_no_answers_headlines_so_everywhere(runs, client):
    rows = run_rows(client.get("/").text)
    assert cells(rows[runs.dead])[7] == "no answers (8 of 8 failed)"
    assert cells(rows[runs.fake])[7] == "40.0"
    run_page = client.get(f"/runs/{runs.dead}").text
    assert re.search(r"<span id=headline>no answers \(8 of 8 failed\)</span>", run_page) and "0.0 %" not in run_page
    api = {r["run_id"]: r for r in client.get("/api/runs").json()}
    assert (api[runs.dead]["no_answers"], api[runs.dead]["score"]) == (True, None)
    assert (api[runs.fake]["no_answers"], api[runs.fake]["score"]) == (False, 40.0)
    report = build_report(load_runs(Store(runs.dir), [runs.dead]), n_boot=0, plots=False)
    assert "no answers (8 of 8 failed)" in report.sections[0].text[0] and "score 0.0" not in report.sections[0].text[0]


# ---- item 4: tracebacks -------------------------------------------------------------------------------


def test_sample_page_shows_the_stored_traceback_collapsed_and_escaped(runs, client):
    page = client.get(f"/runs/{runs.smart}/samples/s9").text
    block = re.search(r"<details class=trace id=traceback><summary>traceback \(4 lines\)</summary><pre>(.*?)</pre>"
                      r"</details>", page, re.S)
    assert block and unescape(block.group(1)) == TRACE
    assert "<script>alert(1)" not in page  # escaped
    assert "id=traceback" not in client.get(f"/runs/{runs.smart}/samples/s1").text  # none stored, none shown
    assert client.get(f"/api/runs/{runs.smart}/samples/s9").json()["traceback"] == TRACE


# ---- item 10: replies with no readable answer --------------------------------------------------------


def test_run_page_and_list_say_how_many_replies_were_unreadable(runs, client):
    page = client.get(f"/runs/{runs.reader}").text
    note = re.search(r"<div class=notebox id=unreadable><pre>(.*?)</pre></div>", page, re.S)
    expected = unreadable_note(store(runs, runs.reader))
    assert note and unescape(note.group(1)) == expected
    assert expected.startswith("3 of 10 replies held no readable answer") and "s0: '(1)\\n(2)\\n(3)'" in expected
    assert "likely causes" in expected and "id=unreadable" not in client.get(f"/runs/{runs.fake}").text
    rows = run_rows(client.get("/").text)
    assert cells(rows[runs.reader])[8] == "3" and cells(rows[runs.fake])[8] == ""  # the count, when > 0
    api = {r["run_id"]: r for r in client.get("/api/runs").json()}
    assert (api[runs.reader]["unreadable"], api[runs.fake]["unreadable"]) == (3, 0)


# ---- item 7a: question text in the sample list ---------------------------------------------------------


def test_run_page_lists_each_samples_question_beside_its_id(runs, client):
    page = client.get(f"/runs/{runs.fake}").text
    shown = dict(re.findall(r"<tr class='sample [a-z]+'><td><a [^>]+><code>([^<]+)</code></a></td>"
                            r"<td class=question>([^<]*)</td>", page))
    assert list(shown) == [f"s{i}" for i in range(10)]
    for i in range(10):
        text = unescape(shown[f"s{i}"])
        assert text.endswith("…") and len(text) == 100 and question(i).startswith(text[:-1])
    assert "<first>" not in page and "&lt;first&gt;" in page


# ---- item 7b: the comparison page ------------------------------------------------------------------------


def compare_url(*run_ids: str, **query) -> str:
    return "/compare?" + "&".join([f"run={r}" for r in run_ids] + [f"{k}={v}" for k, v in query.items()])


def test_compare_two_runs_gives_lvu_compares_paired_cis_and_the_differing_samples(runs, client):
    page = client.get(compare_url(runs.fake, runs.smart, bootstrap=B))
    assert page.status_code == 200, page.text
    a, b = load_runs(Store(runs.dir), [runs.fake, runs.smart])
    expected = compare_runs(a, b, n_boot=B, seed=0).table.rows
    table = page.text.split("<table id=cells>", 1)[1].split("</table>", 1)[0]
    shown = [cells(row) for row in re.findall(r"<tr class=cell>.*?</tr>", table, re.S)]
    assert [(c[0], c[1]) for c in shown] == [(str(r[0]), str(r[1])) for r in expected] == \
           [("overall", "all"), ("kind", "even"), ("kind", "odd")]
    for c, row in zip(shown, expected):
        assert c[4] == f"{row[4].fmt()}p {row[5]}{row[6]}"  # Δ [CI] and p, as lvu compare computes them
        assert row[4].has_ci
    assert shown[0][2:4] == ["40.0", "80.0"]  # each run's own headline
    # s4-s7: right only in fake-smart; s9: failed there. Each links to both runs' sample pages.
    diff = page.text.split("<table id=differing>", 1)[1].split("</table>", 1)[0]
    listed = re.findall(r"<tr class=differs><td><code>([^<]+)</code>", diff)
    assert listed == ["s4", "s5", "s6", "s7", "s9"]
    for sid in listed:
        for run_id in (runs.fake, runs.smart):
            assert f"href='/runs/{run_id}/samples/{sid}'" in diff
    api = client.get(compare_url(runs.fake, runs.smart, bootstrap=B).replace("/compare", "/api/compare")).json()
    (pair,) = api["pairs"]
    assert [(x["delta"], x["low"], x["high"]) for x in pair["cells"]] == \
           [(pytest.approx(r[4].value), pytest.approx(r[4].low), pytest.approx(r[4].high)) for r in expected]
    assert [d["sample_id"] for d in api["differing"]] == listed


def test_compare_three_runs_has_a_column_per_run_and_every_pair(runs, client):
    page = client.get(compare_url(runs.fake, runs.smart, runs.reader, bootstrap=50))
    assert page.status_code == 200
    head = re.search(r"<table id=cells><tr>(.*?)</tr>", page.text).group(1)
    assert cells(head.replace("th>", "td>")) == ["table", "row", "#1 %", "#2 %", "#3 %", "Δ #2 − #1 [95% CI]",
                                                 "Δ #3 − #1 [95% CI]", "Δ #3 − #2 [95% CI]"]
    in_order = re.findall(r"<tr class=compared><td>#\d</td><td><a [^>]+><code>([0-9a-f]+)", page.text)
    assert in_order == [runs.fake, runs.smart, runs.reader]
    again = client.get(compare_url(runs.reader, runs.fake, runs.smart, bootstrap=50)).text  # any order: oldest first
    assert re.findall(r"<tr class=compared><td>#\d</td><td><a [^>]+><code>([0-9a-f]+)", again) == in_order


def test_compare_refuses_runs_of_different_data_with_one_line(runs, client):
    page = client.get(compare_url(runs.fake, runs.other))
    assert page.status_code == 400
    (line,) = re.findall(r"<p class=refused id=refused>([^<]*)</p>", page.text)
    assert "jsonl(q.jsonl)" in unescape(line) and "jsonl(q2.jsonl)" in unescape(line) and "<table" not in page.text
    assert client.get(compare_url(runs.fake)).status_code == 400  # one run is no comparison


def test_compare_leaves_out_runs_with_no_answers_unless_asked(runs, client):
    page = client.get(compare_url(runs.fake, runs.smart, runs.dead, bootstrap=20))
    assert page.status_code == 200 and "<th>Δ #2 − #1 [95% CI]</th>" in page.text and "#3 %" not in page.text
    assert re.search(rf"<ul><li><code>{runs.dead}</code> \(openai\(dead\) on jsonl\(q.jsonl\)\): no answers \(8 of 8 "
                     r"failed\)</li></ul>", page.text)
    with_it = client.get(compare_url(runs.fake, runs.smart, runs.dead, bootstrap=20, include_failed=1))
    assert with_it.status_code == 200 and "<th>#3 %</th>" in with_it.text and "id=left-out" not in with_it.text
    alone = client.get(compare_url(runs.fake, runs.dead))
    assert alone.status_code == 400 and "include_failed=1" in unescape(alone.text)


def test_compare_takes_exact_run_ids_only(runs, client):
    for bad in (runs.fake[:6], "../../etc/passwd", quote(str(runs.dir / "lvu.sqlite"), safe="")):
        response = client.get(compare_url(runs.smart, bad))
        assert response.status_code == 404 and "no run" in response.text, bad  # a prefix or a path names no run


# ---- item 7c: a report of several runs starts with one summary table ----------------------------------------


def test_multi_run_report_starts_with_a_summary_table_across_the_runs(runs, tmp_path):
    data = load_runs(Store(runs.dir), [runs.fake, runs.smart, runs.reader, runs.dead])
    report = build_report(data, n_boot=0, plots=False)
    first = report.sections[0]
    assert first.anchor == "runs-summary" and report.sections[1].anchor != "runs-summary"
    (table,) = first.tables
    assert table.columns == ["rank", "run", "model", "data", "samples", "failed", "headline", "unreadable"]
    assert [row[:3] for row in table.rows] == [["1", runs.smart, "openai(fake-smart)"],  # 8 of 10 (one failed)
                                               ["2", runs.reader, "openai(text-only)"],  # 7 of 10
                                               ["3", runs.fake, "openai(fake)"]]  # 4 of 10
    by_run = {row[1]: row for row in table.rows}
    assert by_run[runs.smart][3:] == ["jsonl(q.jsonl)", "9", 1, "score 80.0 % (all, n=10)", 0]
    assert by_run[runs.reader][7] == 3
    assert f"left out: {runs.dead} (openai(dead) on jsonl(q.jsonl)): no answers (8 of 8 failed)" in table.notes
    html = write(report, tmp_path / "r.html").read_text()
    assert html.index("runs at a glance") < html.index(f"run {runs.fake} ·")  # before the per-run sections
    tied = build_report(load_runs(Store(runs.dir), [runs.fake, runs.smart, runs.other, runs.fake]), n_boot=0,
                        plots=False)  # (the same run twice is one run)
    assert [row[:4] for row in tied.sections[0].tables[0].rows] == [
        ["1", runs.smart, "openai(fake-smart)", "jsonl(q.jsonl)"], ["2", runs.fake, "openai(fake)", "jsonl(q.jsonl)"],
        ["1", runs.other, "openai(fake)", "jsonl(q2.jsonl)"]]  # ranked within each data only
    asked = build_report(data, n_boot=0, plots=False, include_failed=True).sections[0].tables[0]
    assert [row[0] for row in asked.rows if row[1] == runs.dead] == ["–"]
    assert next(row for row in asked.rows if row[1] == runs.dead)[6] == "no answers (8 of 8 failed)"


def test_equal_headlines_share_a_rank(tmp_path):
    on = {"settings": {"data": str(tmp_path / "q.jsonl")}}
    ids = [store_run(tmp_path, "jsonl", "openai", [scored(i, i < k) for i in range(4)], model_args={"model": m}, **on)
           for m, k in (("one", 1), ("three", 3), ("three-too", 3))]
    table = build_report(load_runs(Store(tmp_path), ids), n_boot=0, plots=False).sections[0].tables[0]
    assert [(row[0], row[2]) for row in table.rows] == [("1", "openai(three)"), ("1", "openai(three-too)"),
                                                         ("3", "openai(one)")]

