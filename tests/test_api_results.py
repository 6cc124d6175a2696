"""lvu.api.results: the library entries of `lvu results list / show / tag / delete / export`, each
returning what the command prints (compared here with the command's own output)."""

from __future__ import annotations

import io
import json

import pytest

import fakes  # noqa: F401  (registers the fake benchmark and the fake-follow model)
from lvu.api import (EXPORT_FIELDS, RunList, RunView, delete_run, export_rows, list_runs, read_run, sample_of,
                     set_run_tag, view_run, write_export)
from lvu.errors import LvuError
from test_api_analysis import _results_env, fake_run  # noqa: F401  (an autouse fixture)
from test_headline_and_limit import invoke




def test_list_runs_returns_the_rows_lvu_results_list_prints(tmp_path):
    a = fake_run(tmp_path, fail=["q001"])
    b = fake_run(tmp_path, fail=["q000", "q001", "q002", "q003"])
    listed = list_runs(tmp_path)
    assert isinstance(listed, RunList) and listed.nothing is None
    assert [r.info.run_id for r in listed.runs] == [b.run_id, a.run_id]  # newest first
    assert listed.runs[0].no_answers and listed.runs[0].score.startswith("no answers")
    cli = invoke("results", "list", "--json", "--results-dir", tmp_path)
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout) == [r.to_json() for r in listed.runs]

    nothing = list_runs(tmp_path, tag="paper")
    assert nothing.runs == [] and nothing.nothing == "no run matches --tag paper; no run has a tag " \
                                                    "(`lvu results tag RUN NAME` adds one)"
    assert invoke("results", "list", "--tag", "paper", "--results-dir", tmp_path).stdout.strip() == nothing.nothing
    with pytest.raises(LvuError, match="--since 'May': not a date"):
        list_runs(tmp_path, since="May")


def test_view_run_returns_what_lvu_results_show_prints(tmp_path):
    done = fake_run(tmp_path, fail=["q002"])
    shown = view_run(read_run(done.run_id, tmp_path))
    assert isinstance(shown, RunView) and shown.tables == read_run(done.run_id, tmp_path).tables()
    cli = invoke("results", "show", done.run_id, "--json", "--results-dir", tmp_path)
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout) == json.loads(json.dumps(shown.to_json(), default=str))
    assert [f["sample_id"] for f in shown.to_json()["failures"]] == ["q002"]

    record = read_run(done.run_id, tmp_path)
    assert sample_of(record, "q002").error
    with pytest.raises(LvuError, match="sample nope not found in run .*; its failed samples: q002"):
        sample_of(record, "nope")


def test_tag_and_delete_change_the_store_as_the_commands_do(tmp_path):
    done = fake_run(tmp_path)
    changed = set_run_tag(done.run_id[:8], "paper-v2", results_dir=tmp_path)
    assert (changed.run_id, changed.removed) == (done.run_id, False)
    assert read_run(done.run_id, tmp_path).tags == ["paper-v2"]
    assert set_run_tag(done.run_id, "paper-v2", untag=True, results_dir=tmp_path).removed
    with pytest.raises(LvuError, match="has no tag 'paper-v2' — its tags: none"):
        set_run_tag(done.run_id, "paper-v2", untag=True, results_dir=tmp_path)

    asked: list[str] = []
    kept = delete_run(done.run_id, results_dir=tmp_path, confirm=lambda what: asked.append(what) or False)
    assert not kept.deleted and asked == [kept.what] and read_run(done.run_id, tmp_path).run_id == done.run_id
    gone = delete_run(done.run_id, results_dir=tmp_path)
    assert gone.deleted and gone.what.startswith(f"run {done.run_id} (fake × fake-follow, 4 stored samples")
    assert list_runs(tmp_path).runs == []
    with pytest.raises(LvuError, match="no runs: --results-dir"):
        set_run_tag("x", "y", results_dir=tmp_path / "empty")
    assert not (tmp_path / "empty").exists()


@pytest.mark.parametrize("format", ["jsonl", "csv"])
def test_export_rows_are_what_lvu_results_export_writes(tmp_path, format):
    done = fake_run(tmp_path)
    rows = export_rows(done.run_id, results_dir=tmp_path)
    assert len(rows) == 4 and all(list(r) == EXPORT_FIELDS for r in rows) and rows[0]["run_id"] == done.run_id
    text = io.StringIO(newline="")
    write_export(rows, text, format)
    cli = invoke("results", "export", done.run_id, "--format", format, "--results-dir", tmp_path)
    assert cli.exit_code == 0, cli.output
    assert cli.stdout.replace("\r\n", "\n") == text.getvalue().replace("\r\n", "\n")
    with pytest.raises(LvuError, match="--format 'xml' is not supported"):
        write_export(rows, io.StringIO(), "xml")


def test_set_run_tag_refuses_a_tag_the_command_refuses(tmp_path):
    """A Python caller gets the command's tag rule: the store checks every tag it adds."""
    done = fake_run(tmp_path)
    with pytest.raises(LvuError, match="tag 'paper v2': must be non-empty, without spaces or commas"):
        set_run_tag(done.run_id, "paper v2", results_dir=tmp_path)
    assert read_run(done.run_id, results_dir=tmp_path).tags == []
