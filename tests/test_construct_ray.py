"""`lvu build ... --executor ray` on a local Ray instance (2 CPUs): the toy pipeline (tests/build_toy.py)
stores and exports exactly what the local executor does, resumes a local build running only the
missing units, records a failed unit and goes on; the CLI flags; Neptune's README example."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from ray_local import local_ray
from typer.testing import CliRunner

import build_toy  # registers the toy pipeline and `toy-llm`, here and (through PYTHONPATH) on the workers
from lvu.cli import app
from lvu.construct.pipeline import register_stage
from lvu.construct.runner import find_videos, open_build, run_build
from lvu.errors import LvuError
from lvu.models.base import register_model
from lvu.types import Prompt, Response

ray = pytest.importorskip("ray", reason="--executor ray needs lvu[ray]")

pytestmark = pytest.mark.slow  # a local Ray instance: docs/testing.md

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RAY_ARGS = {"num_replicas": 2, "num_cpus": 0.5}
"""Two unit actors of half a CPU each leave one CPU of the 2-CPU instance for the CPU tasks."""


@pytest.fixture(scope="module", autouse=True)
def ray_instance(tmp_path_factory):
    """One local Ray for the module, as tests/test_ray_executor.py starts it: the workers import this
    directory's modules (build_toy, neptune_example) and share a fresh lvu cache dir with the driver."""
    with local_ray(ray, tmp_path_factory.mktemp("lvu-cache")):
        yield


@pytest.fixture
def videos(tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    for name, size in (("alpha", 10), ("beta", 20), ("drop-me", 30)):
        (folder / f"{name}.mp4").write_bytes(os.urandom(size))
    return folder


def build(videos_dir, out, log, *, executor="local", limit=None, ray_args=RAY_ARGS, model="toy-llm", **model_args):
    found = find_videos(videos_dir, limit)
    extra = {"executor": executor, "ray_args": ray_args} if executor != "local" else {}
    return asyncio.run(run_build(build_toy.Toy(), found, out, {"llm": (model, {"log": str(log), **model_args})},
                                 show_progress=False, **extra))


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def stage(state, name):
    return next(s for s in state.stages if s.name == name)


def stored(out: Path) -> dict[tuple[str, str, str], dict]:
    """Every stored unit: its key, output, error, raw reply and calls (less their seconds, which timing decides)."""
    _, _, state = open_build(out)
    units = {}
    for name, by_item in state.units.items():
        for item, views in by_item.items():
            for v in views:
                e = v.entry
                record = {**e.result, "calls": [{k: c[k] for k in c if k != "seconds"} for c in e.result["calls"]]}
                units[name, item, v.unit.id] = {"key": v.key, "record": record, "raw": e.raw, "error": e.error}
    return units


def test_the_toy_build_on_ray_stores_and_exports_what_the_local_build_does(videos, tmp_path):
    local_state, local_written = build(videos, tmp_path / "local", tmp_path / "local.log")
    t0 = time.perf_counter()
    ray_state, ray_written = build(videos, tmp_path / "ray", tmp_path / "ray.log", executor="ray")
    print(f"toy build on Ray: {time.perf_counter() - t0:.2f} s")
    assert ray_written == local_written == {"joined": 2}
    assert ray_state.outputs == local_state.outputs and ray_state.states == local_state.states
    assert (tmp_path / "ray" / "joined.txt").read_bytes() == (tmp_path / "local" / "joined.txt").read_bytes()
    assert stored(tmp_path / "ray") == stored(tmp_path / "local")
    assert sorted(calls(tmp_path / "ray.log")) == sorted(calls(tmp_path / "local.log"))  # 8 calls each
    config = json.loads((tmp_path / "ray" / "build.json").read_text())
    local_config = json.loads((tmp_path / "local" / "build.json").read_text())
    assert config["models"]["llm"]["key"] == local_config["models"]["llm"]["key"]  # as the actors reported it
    assert config["models"]["llm"]["identity"] == {"backend": "toy-llm", "log": str(tmp_path / "ray.log")}
    assert config["executor"]["name"] == "ray" and config["executor"]["actors"] == 2
    assert [(s.ran, s.ran_calls) for s in ray_state.stages] == [(s.ran, s.ran_calls) for s in local_state.stages]


def test_a_ray_build_resumes_a_local_one_running_only_the_missing_units(videos, tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.log"
    build(videos, out, log, limit=1)  # alpha only, locally: 1 keep unit, 3 words, 1 join
    assert calls(log) == ["toy.words/alpha/chunk0", "toy.words/alpha/chunk1", "toy.words/alpha/chunk2",
                          "toy.join/alpha/video"]
    state, written = build(videos, out, log, executor="ray")
    assert sorted(calls(log)[4:]) == ["toy.join/beta/video", "toy.words/beta/chunk0", "toy.words/beta/chunk1",
                                      "toy.words/beta/chunk2"]  # beta's units only: alpha's are committed
    assert [(s.name, s.ran, s.reused) for s in state.stages] == [("toy.keep", 2, 1), ("toy.words", 3, 3),
                                                                 ("toy.join", 1, 1)]
    assert written == {"joined": 2}
    build(videos, tmp_path / "fresh", tmp_path / "fresh.log")
    assert (out / "joined.txt").read_bytes() == (tmp_path / "fresh" / "joined.txt").read_bytes()


def test_a_failed_unit_on_ray_is_recorded_and_the_build_goes_on(videos, tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.log"
    state, written = build(videos, out, log, executor="ray", error=["chunk 1 of beta"])
    words = stage(state, "toy.words")
    assert (words.done, words.failed) == (5, 1)
    assert state.states["toy.words"]["beta"] == "failed" and "HTTP 500" in state.notes["toy.words"]["beta"]
    assert state.states["toy.join"] == {"alpha": "done", "beta": "blocked", "drop-me": "skipped"}
    assert written == {"joined": 1}
    _, _, reopened = open_build(out)
    entry = reopened.units["toy.words"]["beta"][1].entry
    assert entry.error == "HTTP 500 from the toy server" and entry.result["calls"][0]["error"] == entry.error

    n = len(calls(log))
    state, written = build(videos, out, log)  # the endpoint is fixed; locally: the failed unit and its successor
    assert calls(log)[n:] == ["toy.words/beta/chunk1", "toy.join/beta/video"]
    assert written == {"joined": 2} and stage(state, "toy.words").failed == 0


@register_model("toy-crash-once")
class CrashOnce(build_toy.ToyLLM):
    """toy-llm whose process dies (os._exit) on the first call whose prompt holds `crash`; a marker
    file next to `log` makes later calls (the next run) answer normally."""

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        marker = Path(self.args["log"] + ".crashed")
        if self.args["crash"] in prompt.text and not marker.exists():
            marker.write_text(sample_id)
            os._exit(1)
        return await super().generate(prompt, sample_id=sample_id)


@register_stage("toy.keep-crashing")
class CrashingKeep(build_toy.Keep):
    """toy.keep whose process dies on video beta (a decoder crash), every time."""

    async def run(self, unit, ctx) -> dict:
        if unit.video == "beta":
            os._exit(1)
        return await super().run(unit, ctx)


class CrashingToy(build_toy.Toy):
    def stages(self):
        return [CrashingKeep(self.options), build_toy.Words(self.options), build_toy.Join(self.options)]


def test_a_task_or_actor_that_dies_fails_its_units_and_a_rerun_asks_them_again(videos, tmp_path):
    found = find_videos(videos)
    state, written = asyncio.run(run_build(CrashingToy(), found, tmp_path / "crash", {"llm": ("toy-llm", {})},
                                           show_progress=False, executor="ray", ray_args=RAY_ARGS))
    assert state.states["toy.keep-crashing"] == {"alpha": "done", "beta": "failed", "drop-me": "done"}
    note = state.notes["toy.keep-crashing"]["beta"]
    assert "task failed — " in note and "\n" not in note and written == {"joined": 1}  # the build went on

    out, log = tmp_path / "out", tmp_path / "calls.log"
    args = {"ray_args": {"num_replicas": 1, "num_cpus": 0.5}, "model": "toy-crash-once"}
    state, _ = build(videos, out, log, executor="ray", crash="chunk 1 of beta", **args)
    errors = {(item, unit): e for s, item, unit, e in state.failures() if s == "toy.words"}
    assert "unit actor 0 died while running it" in errors["beta", "chunk1"]  # and the units in flight beside it
    assert all("unit actor 0 died" in e for e in errors.values())
    state, written = build(videos, out, log, executor="ray", crash="chunk 1 of beta", **args)  # restarted actor
    assert stage(state, "toy.words").ran == len(errors) and stage(state, "toy.words").failed == 0
    assert written == {"joined": 2}


def test_cli_flags_and_one_line_errors(videos, tmp_path, monkeypatch):
    runner = CliRunner()
    base = ["build", "run", "toy", str(videos), "-m", "llm=toy-llm", "-a", f"llm.log={tmp_path / 'calls.log'}", "-q"]
    done = runner.invoke(app, [*base, "-o", str(tmp_path / "cli"), "--executor", "ray", "--ray-arg", "num_cpus=0.5"])
    assert done.exit_code == 0, done.output
    assert "wrote: joined: 2" in done.output and len(calls(tmp_path / "calls.log")) == 8
    assert json.loads((tmp_path / "cli" / "build.json").read_text())["executor"]["actors"] == 1

    with pytest.raises(LvuError, match="--ray-arg group_size: not used by lvu build"):
        build(videos, tmp_path / "o1", tmp_path / "l1", executor="ray", ray_args={"group_size": 2})
    with pytest.raises(LvuError, match="num_gpus=1: the Ray cluster has 0 GPU"):  # the run executor's rule
        build(videos, tmp_path / "o1", tmp_path / "l1", executor="ray", ray_args={"num_gpus": 1})
    with pytest.raises(LvuError, match="--executor 'dask' is unknown"):
        build(videos, tmp_path / "o2", tmp_path / "l2", executor="dask")
    with pytest.raises(LvuError, match="unknown model 'no-such-model'"):
        asyncio.run(run_build(build_toy.Toy(), find_videos(videos), tmp_path / "o3", {"llm": ("no-such-model", {})},
                              show_progress=False, executor="ray"))
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails
    missing = runner.invoke(app, [*base, "-o", str(tmp_path / "o4"), "--executor", "ray"])
    assert isinstance(missing.exception, LvuError)  # `lvu` prints it as one line (lvu.cli.root)
    assert str(missing.exception) == "--executor ray needs Ray: pip install 'lvu[ray]'"


def test_neptune_readme_example_on_ray_writes_the_local_benchmark(tmp_path):
    """The README's Neptune example (generated videos, --captioner ocr, the scripted stand-in LLM):
    selection, shots, Whisper and OCR run as Ray tasks, the LLM stages on the unit actors."""
    pytest.importorskip("rapidocr", reason="the ocr captioner needs lvu[ocr]")
    from neptune_example import write_videos

    videos = write_videos(tmp_path / "videos")
    command = ["build", "neptune", str(videos), "--captioner", "ocr", "--llm", "neptune_example:ScriptedLLM", "-q"]
    t0 = time.perf_counter()  # on Ray first, so it decodes, transcribes and reads the text of every frame itself
    remote = CliRunner().invoke(app, [*command, "-o", str(tmp_path / "ray"), "--executor", "ray",
                                      "--ray-arg", "num_cpus=0.5"])
    t1 = time.perf_counter()
    local = CliRunner().invoke(app, [*command, "-o", str(tmp_path / "local")])
    print(f"neptune example: ray {t1 - t0:.1f} s, local {time.perf_counter() - t1:.1f} s (warm caches)")
    assert remote.exit_code == 0 and local.exit_code == 0, (remote.output, local.output)
    for name in ("benchmark.jsonl", "neptune_full.json", "removed.json"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert len((tmp_path / "ray" / "benchmark.jsonl").read_text().splitlines()) == 9  # 10 questions, 1 removed by the QAD filter (README)
    assert stored(tmp_path / "ray") == stored(tmp_path / "local")
