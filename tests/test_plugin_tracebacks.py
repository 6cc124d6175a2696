"""A model plugin (or a judge, a backend) that raises: the sample's record keeps the Python
traceback (the plugin's file and line), `lvu run --debug` prints the first one once, and without
--debug the failure line says where to read it. An LvuError — a message for the user — keeps none."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fakes  # noqa: F401  (registers the fake benchmark and the fake-follow model)
from lvu.api import run
from lvu.cli import app
from lvu.errors import LvuError
from lvu.models.base import Model, register_model
from lvu.runs.grading import benchmark_of
from lvu.runs.judging import judge_stored
from lvu.runs.store import Store
from lvu.runs.tracebacks import MAX_CHARS, MAX_LINES, traceback_text
from lvu.scoring.judges import make_judge
from lvu.types import Prompt, Response

PLUGIN = '''
import re

from lvu.errors import LvuError
from lvu.models.base import Model
from lvu.types import Response


class Red(Model):
    """Answers the letter the question names; raises on the ids in `red`, an LvuError on `blue`."""

    async def generate(self, prompt, *, sample_id=""):
        if sample_id in self.args.get("blue", []):
            raise LvuError(f"{sample_id}: the plugin refuses this one — a message for the user")
        picks = [] if sample_id in self.args.get("red", []) else ["(" + re.search(r"pick ([A-D])", prompt.question).group(1) + ")"]
        return Response(text=picks[0])
'''


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")


def plugin(tmp_path: Path, monkeypatch, name: str) -> tuple[str, int]:
    """The plugin module written as `name`.py and importable; (its path, the raising line's number)."""
    path = tmp_path / f"{name}.py"
    path.write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    line = next(i for i, text in enumerate(PLUGIN.splitlines(), start=1) if "return Response(text=picks[0])" in text)
    return str(path), line


def invoke(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.slow
def test_a_raising_plugin_keeps_its_traceback_and_the_failure_line_says_where_to_read_it(tmp_path, monkeypatch):
    path, line = plugin(tmp_path, monkeypatch, "red_plugin_a")
    results = tmp_path / "results"
    ran = invoke("run", "-b", "fake", "--set", "n=4", "-m", "red_plugin_a:Red", "-a", 'red=["q001","q003"]',
                 "--results-dir", results, "--no-report")
    assert ran.exit_code == 1, ran.output  # two samples failed (recorded)

    store = Store(results)
    (info,) = store.runs()
    by_id = {r.sample_id: r for r in store.results(info.run_id)}
    failed = by_id["q001"]
    assert failed.error == "q001: IndexError: list index out of range"
    assert f'File "{path}", line {line}, in generate' in failed.traceback
    assert failed.traceback.rstrip().endswith("IndexError: list index out of range")
    assert by_id["q000"].traceback is None and by_id["q000"].error is None

    # The console: each failure line ends with the command that shows its traceback; no traceback itself.
    for sample_id in ("q001", "q003"):
        hint = f"(traceback: lvu results show {info.run_id} --results-dir {results} --trace {sample_id})"
        assert f"{sample_id}: IndexError: list index out of range {hint}" in ran.stderr
    assert "Traceback (most recent call last)" not in ran.output


def test_debug_prints_the_first_traceback_once(tmp_path, monkeypatch):
    path, line = plugin(tmp_path, monkeypatch, "red_plugin_b")
    ran = invoke("run", "-b", "fake", "--set", "n=4", "-m", "red_plugin_b:Red", "-a", 'red=["q001","q003"]',
                 "--results-dir", tmp_path / "results", "--no-report", "--debug")
    assert ran.exit_code == 1, ran.output
    assert ran.stderr.count("Traceback (most recent call last)") == 1
    assert re.search(r"traceback of q001, run \w{12} \(the first of 2 with one\):", ran.stderr)
    assert f'File "{path}", line {line}, in generate' in ran.stderr
    assert "q003: IndexError: list index out of range" in ran.stderr
    assert "--trace" not in ran.stderr  # the hint is for runs without --debug


def test_an_lvu_error_keeps_no_traceback_while_an_exception_does(tmp_path, monkeypatch):
    plugin(tmp_path, monkeypatch, "red_plugin_c")
    summary = run("fake", "red_plugin_c:Red", settings={"n": 4}, model_args={"red": ["q001"], "blue": ["q002"]},
                  results_dir=tmp_path, show_progress=False, report=False)
    by_id = {r.sample_id: r for r in Store(tmp_path).results(summary.run_id)}
    assert by_id["q002"].error == "q002: the plugin refuses this one — a message for the user"
    assert by_id["q002"].traceback is None
    assert "IndexError" in by_id["q001"].traceback
    assert summary.traced == ["q001"] and "IndexError" in summary.first_traceback  # the Python API says it too

    # A backend's own error reply (Response.error: "model error: ...") is an LvuError too.
    summary = run("fake", "fake-follow", settings={"n": 3}, model_args={"error": ["q000"], "fail": ["q001"]},
                  results_dir=tmp_path, show_progress=False, report=False)
    by_id = {r.sample_id: r for r in Store(tmp_path).results(summary.run_id)}
    assert by_id["q000"].error.startswith("model error:") and by_id["q000"].traceback is None
    assert "RuntimeError: backend exploded" in by_id["q001"].traceback and "fakes.py" in by_id["q001"].traceback


# ---- a judge that raises ----------------------------------------------------------------------------


@register_model("tb-mumble")
class Mumble(Model):
    """Replies with no option letter, so --llm-extract asks the judge."""

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        return Response(text="(1)\n(2)")


def test_a_judge_that_raises_keeps_its_traceback_inline_and_post_hoc(tmp_path):
    raising = {"fail": ["q000", "q001"]}  # fake-follow raises RuntimeError for these ids
    summary = run("fake", "tb-mumble", settings={"n": 2}, results_dir=tmp_path, show_progress=False, report=False,
                  judge="fake-follow", judge_args=raising, llm_extract=True)
    record = Store(tmp_path).results(summary.run_id)[0]
    assert record.error == "q000: RuntimeError: backend exploded"
    assert "judging.py" in record.traceback and "fakes.py" in record.traceback

    plain = run("fake", "tb-mumble", settings={"n": 2}, results_dir=tmp_path / "plain", show_progress=False,
                report=False)
    store = Store(tmp_path / "plain")
    done = asyncio.run(judge_stored(store, plain.run_id, benchmark_of(plain.spec), make_judge("fake-follow", raising),
                                    llm_extract=True, show_progress=False))
    assert done.n_failed == 2
    record = store.results(plain.run_id)[0]
    assert record.error == "judge failed: q000: RuntimeError: backend exploded"
    assert "RuntimeError: backend exploded" in record.traceback


# ---- the stored text stays useful and bounded -------------------------------------------------------


def test_a_stored_traceback_keeps_the_innermost_frames_and_is_cut_to_size():
    def ping(n: int) -> None:  # two functions in turn: Python does not fold their frames
        if n == 0:
            raise ValueError("at the bottom")
        pong(n - 1)

    def pong(n: int) -> None:
        ping(n)

    try:
        ping(100)
    except ValueError as e:
        text = traceback_text(e)
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES + 1 and len(text) <= MAX_CHARS + 40
    assert lines[0].startswith("... (") and "earlier lines left out" in lines[0]
    assert lines[-1] == "ValueError: at the bottom" and 'raise ValueError("at the bottom")' in text

    huge = RuntimeError("x" * (3 * MAX_CHARS))
    text = traceback_text(huge)
    assert len(text) <= MAX_CHARS + 40 and text.endswith("x")
    assert traceback_text(LvuError("a message for the user")) is None
    assert json.loads(json.dumps(text)) == text
