"""Run specs (YAML): validation with one-line errors, layering, expansion, `lvu run -c`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fakes  # noqa: F401  (registers the fake benchmark and models)
from lvu.cli import app
from lvu.errors import LvuError
from lvu.runs import spec_file
from lvu.runs.store import Store

ROOT = Path(__file__).resolve().parents[1]

def plan(text: str, source: str = "spec.yaml"):
    return spec_file.expand(spec_file.parse(text, source), source)


def test_combinations_in_order_with_later_layers_winning():
    runs = plan("""
benchmarks:
  - fake
  - {name: fake, set: {n: 3}, limit: 2}
models:
  - fake-follow
  - {name: fake-follow, args: {error: [q001]}, concurrency: 2}
settings: {set: {n: 4, bad_records: 1}, limit: 3, concurrency: 5, model_args: {delay: 0}}
""")
    assert [(r.benchmark, r.model) for r in runs] == [("fake", "fake-follow")] * 4
    assert [r.settings for r in runs] == [{"n": 4, "bad_records": 1}] * 2 + [{"n": 3, "bad_records": 1}] * 2
    assert [r.model_args for r in runs] == [{"delay": 0}, {"delay": 0, "error": ["q001"]}] * 2
    assert [r.options for r in runs] == [{"limit": 3, "concurrency": 5}, {"limit": 3, "concurrency": 2},
                                         {"limit": 2, "concurrency": 5}, {"limit": 2, "concurrency": 2}]
    assert all(r.point == {} for r in runs)


def test_benchmark_inputs_and_judge_keys_go_where_they_belong():
    (only,) = plan("""
benchmarks: [{name: haystack, frames: 8, subtitles: none, resize: 224, seed: 1}]
models: [ocr-match]
settings: {decode: processes, decode_workers: 3, judge: random, judge_args: {seed: 2}}
""")
    assert only.settings == {"frames": 8, "subtitles": "none", "resize": 224, "seed": 1}
    assert only.options == {"decode": "processes", "decode_workers": 3, "judge": "random", "judge_args": {"seed": 2}}
    (plain,) = plan("benchmarks: [haystack]\nmodels: [ocr-match]\n")
    assert plain.options == {} and plain.settings == {}  # unset keys are not passed at all


def test_a_sweep_section_multiplies_every_combination():
    runs = plan("""
benchmarks: [fake]
models: [fake-follow, {name: fake-follow, args: {delay: 0}}]
settings: {set: {n: 2}}
sweep: {name: probes, probe: [full, blind]}
""")
    assert [(r.model, r.model_args, r.point) for r in runs] == [
        ("fake-follow", {}, {"probe": "full"}),
        ("blind", {"base": "fake-follow"}, {"probe": "blind"}),
        ("fake-follow", {"delay": 0}, {"probe": "full"}),
        ("blind", {"base": "fake-follow", "base_args": {"delay": 0}}, {"probe": "blind"}),
    ]


@pytest.mark.parametrize("text, message", [
    ("benchmarks: [haystack]\nmodels: [random]\nsetings: {frames: 8}\n", "spec.yaml: setings: unknown key"),
    ("benchmarks: [haystack]\nmodels: [random]\nsettings: {frmes: 8}\n", "spec.yaml: settings.frmes: unknown key"),
    ("benchmarks: [haystack, {name: haystack, limit: 0}]\nmodels: [random]\n",
     "spec.yaml: benchmarks[1].limit: Input should be greater than or equal to 1 (got 0)"),
    ("benchmarks: [haystack]\nmodels: [{args: {seed: 1}}]\n", "spec.yaml: models[0].name: Field required"),
    ("benchmarks: []\nmodels: [random]\n", "spec.yaml: benchmarks: List should have at least 1 item"),
    ("benchmarks: [haystack]\nmodels: [random]\nsettings: {decode: gpu}\n", "spec.yaml: settings.decode: Input should be"),
    ("benchmarks: [haystack]\nmodels: [random]\nsettings: {frames: 8\n", "spec.yaml:4: not valid YAML"),
    ("- haystack\n", "spec.yaml: a run spec is a mapping"),
    ("benchmarks: [haystack]\nmodels: [random]\nsweep: {frame: [8]}\n", "spec.yaml: sweep.frame: not a sweep axis"),
    ("benchmarks: [haystack]\nmodels: [random]\nsweep: {frames: 8}\n", "spec.yaml: sweep.frames: must be a non-empty list"),
    ("benchmarks: [haystack]\nmodels: [random]\nsweep: {probe: [full, deaf]}\n", "spec.yaml: sweep.probe: unknown probe(s) deaf"),
    ("benchmarks: [haystack]\nmodels: [random]\nsweep: {name: x}\n", "spec.yaml: sweep: no axes"),
    ("benchmarks: [haystack]\nmodels: [random]\nsettings: {fps: 1}\n",
     "spec.yaml: benchmarks[0] (haystack): benchmark 'haystack' has no setting(s) fps"),
    ("benchmarks: [{name: hay}]\nmodels: [random]\n", "spec.yaml: benchmarks[0] (hay): unknown benchmark 'hay'"),
])
def test_bad_specs_are_one_line_errors_naming_the_file_and_key(text, message):
    with pytest.raises(LvuError) as e:
        plan(text)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_a_missing_file_is_a_one_line_error(tmp_path):
    with pytest.raises(LvuError, match=r"nope.yaml: cannot read the run spec"):
        spec_file.load(tmp_path / "nope.yaml")


def test_lvu_run_c_runs_every_combination_resumably_and_prints_one_table(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("""
benchmarks: [{name: fake, set: {n: 5}}]
models:
  - fake-follow
  - {name: fake-follow, args: {error: [q001]}}
settings: {concurrency: 2}
""")
    runner = CliRunner()
    result = runner.invoke(app, ["run", "-c", str(spec), "--results-dir", str(tmp_path / "r"), "--no-report"])
    assert result.exit_code == 1, result.output  # one sample of the second run failed (and is recorded)
    store = Store(tmp_path / "r")
    runs = {r.run_id: r for r in store.runs()}
    assert len(runs) == 2 and sorted(r.n_samples for r in runs.values()) == [5, 5]
    table = result.output[result.output.index("spec.yaml"):]
    for run_id, info in runs.items():
        row = next(line for line in table.splitlines() if run_id in line and "│" in line)
        assert re.search(r"│\s+5 │\s+(0|1) │", row)
        assert ("100.0" in row) == (info.n_errors == 0)
    again = runner.invoke(app, ["run", "-c", str(spec), "--results-dir", str(tmp_path / "r"), "--no-report",
                                "--limit", "2"])
    assert again.exit_code == 1, again.output  # q001 failed again (failed samples are retried on resume)
    assert {r.run_id for r in Store(tmp_path / "r").runs()} == set(runs)  # resumed, not new runs
    assert "0/0" in again.output  # the first run had nothing left to do


def test_the_readme_spec_example_is_valid():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", readme, flags=re.S)
    assert blocks, "the README has a YAML run spec example"
    runs = plan(blocks[0], "README.md")
    assert {r.benchmark for r in runs} == {"haystack"} and len(runs) >= 2
