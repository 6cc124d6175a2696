"""`lvu.build`: the construction entry (`lvu build run PIPELINE INPUTS -o OUT`), a pipeline by name or
as an object, models by name or as objects; it returns where the build went and its status."""

from __future__ import annotations

import os

import pytest

import build_toy
import lvu
from lvu.api import BuildResult, build
from lvu.errors import LvuError
from test_headline_and_limit import invoke


@pytest.fixture
def videos(tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    for name, size in (("alpha", 10), ("beta", 20), ("drop-me", 30)):
        (folder / f"{name}.mp4").write_bytes(os.urandom(size))
    return folder


def test_build_returns_where_the_build_went_and_what_lvu_build_run_prints(videos, tmp_path):
    log = tmp_path / "calls.log"
    notes: list[str] = []
    done = build("toy", [str(videos)], tmp_path / "out", models={"llm": ("toy-llm", {"log": str(log)})},
                 show_progress=False, on_note=notes.append)
    assert isinstance(done, BuildResult) and done.status == "complete" and done.complete and not done.failed
    assert notes == [f"lvu build toy: 3 item(s) into {tmp_path / 'out'}"]
    assert (done.out, done.pipeline, done.n_items, done.written) == (tmp_path / "out", "toy", 3, {"joined": 2})
    assert (done.out / "joined.txt").is_file() and len(log.read_text().splitlines()) == 8

    cli = invoke("build", "run", "toy", videos, "-o", tmp_path / "out", "--model", "llm=toy-llm",
                 "-a", f"llm.log={log}", "--quiet")
    assert cli.exit_code == 0, cli.output
    assert "wrote: joined: 2" in cli.stdout and len(log.read_text().splitlines()) == 8  # resumed: nothing asked


def test_build_takes_a_pipeline_and_a_model_as_objects(videos, tmp_path):
    log = tmp_path / "calls.log"
    model = build_toy.ToyLLM(log=str(log))
    done = lvu.build(build_toy.Toy(), [str(videos)], tmp_path / "out", models={"llm": model}, limit=2,
                     show_progress=False)
    assert done.status == "complete" and done.n_items == 2 and done.written == {"joined": 2}
    with pytest.raises(LvuError, match="options are given twice"):
        build(build_toy.Toy(), [str(videos)], tmp_path / "out", options={"x": 1})

    class Unregistered(build_toy.ToyLLM):
        pass

    with pytest.raises(LvuError, match="class .*Unregistered is not a registered model"):
        build("toy", [str(videos)], tmp_path / "other", models={"llm": Unregistered()}, show_progress=False)
