"""`lvu.report` and `lvu.compare`: the library entries of `lvu report` and `lvu compare`, returning
the file written, the comparison and the notes the commands print."""

from __future__ import annotations

import pytest

import fakes  # noqa: F401  (registers the fake benchmark and the fake-follow model)
import lvu
from lvu.api import CompareResult, ReportResult, compare, report, run
from lvu.errors import LvuError
from test_headline_and_limit import invoke


@pytest.fixture(autouse=True)
def _results_env(tmp_path, monkeypatch):
    monkeypatch.delenv("LVU_RESULTS_DIR", raising=False)
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))


def fake_run(results_dir, **model_args):
    return run("fake", "fake-follow", settings={"n": 4}, model_args=model_args, results_dir=results_dir,
               show_progress=False, report=False)


def test_report_writes_the_file_lvu_report_names(tmp_path):
    done = fake_run(tmp_path)
    cli = invoke("report", done.run_id, "--results-dir", tmp_path, "--format", "md", "--no-plots", "--bootstrap", "20")
    assert cli.exit_code == 0, cli.output
    written = report(done.run_id, results_dir=tmp_path, format="md", plots=False, bootstrap=20)
    assert isinstance(written, ReportResult) and cli.stdout.strip() == f"report: {written.path}"
    assert written.path == tmp_path / "reports" / f"{done.run_id}.md" and written.path.is_file()
    assert written.run_ids == [done.run_id] and written.report.sections
    with pytest.raises(LvuError, match="--format 'pdf' is not supported"):
        report(done.run_id, results_dir=tmp_path, format="pdf")
    with pytest.raises(LvuError, match="no runs: --results-dir"):
        lvu.report(results_dir=tmp_path / "empty")
    assert not (tmp_path / "empty").exists()


def test_compare_returns_the_deltas_and_notes_lvu_compare_prints(tmp_path):
    a = fake_run(tmp_path, fail=["q001"])
    b = fake_run(tmp_path, fail=["q002"])
    failed = fake_run(tmp_path, fail=["q000", "q001", "q002", "q003"])
    cli = invoke("compare", failed.run_id, a.run_id, b.run_id, "--bootstrap", "20", "--results-dir", tmp_path)
    assert cli.exit_code == 0, cli.output

    notes: list[str] = []
    deltas = compare([failed.run_id, a.run_id, b.run_id], bootstrap=20, results_dir=tmp_path, on_note=notes.append)
    assert isinstance(deltas, CompareResult) and deltas.run_ids == [a.run_id, b.run_id]
    assert notes == deltas.notes and len(notes) == 1 and notes[0] in cli.stderr
    assert notes[0].startswith(f"left out, no answers to compare — {failed.run_id}")
    for key, value in deltas.comparison.summary:
        assert f"{key}: {value}" in cli.stdout
    assert [c for c in deltas.comparison.table.columns if c] and deltas.comparison.table.rows

    with pytest.raises(LvuError, match="--paper compares one run"):
        compare([a.run_id, b.run_id], paper=True, results_dir=tmp_path)


def test_analyse_returns_the_tables_and_summary_lvu_analyse_prints(tmp_path):
    from lvu.api import ANALYSES, AnalysisResult, analyse
    from lvu.cli.analysis import ANALYSES as SHOWN

    done = fake_run(tmp_path, fail=["q000", "q001", "q002", "q003"])
    kept = fake_run(tmp_path)
    notes: list[str] = []
    with pytest.raises(LvuError, match="no answered multiple-choice samples"):  # noted first, as the command does
        analyse("letters", done.run_id, results_dir=tmp_path, bootstrap=20, on_note=notes.append)
    assert len(notes) == 1 and notes[0].startswith(f"note: run {done.run_id} (") and "its cells are not" in notes[0]
    ok = analyse("letters", kept.run_id, results_dir=tmp_path, bootstrap=20)
    assert isinstance(ok, AnalysisResult) and ok.run_ids == [kept.run_id] and len(ok.tables) == 1
    cli = invoke("analyse", "letters", kept.run_id, "--bootstrap", "20", "--results-dir", tmp_path,
                 "--plot", tmp_path / "letters.png")
    assert cli.exit_code == 0, cli.output
    for key, value in ok.summary:
        assert f"{key}: {value}" in cli.stdout
    assert (tmp_path / "letters.png").is_file() and ok.write_plot(tmp_path / "p" / "l.svg").is_file()
    assert ANALYSES == SHOWN  # the command's help lists what the library runs
    with pytest.raises(LvuError, match="unknown analysis 'nope'"):
        analyse("nope", results_dir=tmp_path)
    with pytest.raises(LvuError, match="letters analyses one run"):
        analyse("letters", [done.run_id, kept.run_id], results_dir=tmp_path)


def test_leak_audit_returns_the_table_and_warnings_lvu_analyse_leak_prints(tmp_path):
    import json

    from lvu.api import LeakAudit, leak_audit

    audit = leak_audit("fake", by="none")
    assert isinstance(audit, LeakAudit) and audit.table.rows and audit.warnings
    cli = invoke("analyse", "leak", "fake", "--by", "none", "--json")
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout) == json.loads(json.dumps(audit.to_json()))
    assert all(line in cli.stderr for line in audit.warnings)
    with pytest.raises(LvuError, match="--model-arg without --model"):
        leak_audit("fake", model_args={"x": 1})


def test_certificate_returns_the_job_lvu_certificate_reports(tmp_path):
    from lvu.api import CertificateResult, certificate
    from test_certificate_ledger import make_data

    data, results = make_data(tmp_path, 2), tmp_path / "results"
    done = certificate("jsonl", "fake-follow-neutral", settings={"data": str(data)}, fps=(1.0,), min_clip=1.0,
                       results_dir=results, show_progress=False)
    assert isinstance(done, CertificateResult) and [c.frames for c in done.job.certificates] == [1, 1]
    assert done.job.n_reused == 0 and done.analysis.summary
    rows = done.write_rows(tmp_path / "out" / "certs.jsonl").read_text().splitlines()
    assert [json_row["sample_id"] for json_row in map(__import__("json").loads, rows)] == ["s00", "s01"]
    cli = invoke("certificate", "-b", "jsonl", "-m", "fake-follow-neutral", "--data", data, "--fps", "1",
                 "--min-clip", "1", "--results-dir", results)
    assert cli.exit_code == 0, cli.output
    assert f"certificates: job {done.job.job_id} in {results} (0 computed, 2 from the ledger)" in cli.stdout
    with pytest.raises(LvuError, match="--concurrency 0 is not a positive number"):
        certificate("jsonl", "fake-follow-neutral", settings={"data": str(data)}, concurrency=0)
