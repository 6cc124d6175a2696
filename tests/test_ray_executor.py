"""`--executor ray` on a local Ray instance (2 CPUs): the same stored results as the local engine,
resume across executors, failures recorded, replicas that die."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import pytest
from ray_local import local_ray

from fakes import FakeBenchmark, FollowModel  # registers the fake benchmark and model, here and on the workers
from lvu.benchmarks.base import register_benchmark
from lvu.errors import LvuError
from lvu.models.base import register_model
from lvu.models.testing_server import FakeOpenAIServer
from lvu.api import run
from lvu.runs.store import Store
from lvu.types import Prompt, Response

ray = pytest.importorskip("ray", reason="the Ray executor needs lvu[ray]")

pytestmark = pytest.mark.slow  # a local Ray instance: docs/testing.md

HERE = Path(__file__).parent
RAY_ARGS = {"num_replicas": 2, "num_cpus": 0.5, "group_size": 3}
"""Two replicas of half a CPU each leave one CPU of the 2-CPU instance for decode tasks."""


@register_model("fake-crash-once")
class CrashOnceModel(FollowModel):
    """fake-follow whose process dies (os._exit) on the first call for a sample id in `crash`; a
    marker file next to `log` makes later calls (a resume) answer normally."""

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        marker = Path(self.args["log"] + ".crashed")
        if sample_id in self.args.get("crash", []) and not marker.exists():
            marker.write_text(sample_id)
            os._exit(1)
        return await super().generate(prompt, sample_id=sample_id)


@register_benchmark("fake-crashing-decoder")
class CrashingDecoderBenchmark(FakeBenchmark):
    """The fake benchmark, whose planning kills the process for sample `crash` (a decoder segfault)."""

    defaults = {**FakeBenchmark.defaults, "crash": ""}

    def plan(self, sample, video):
        if sample.id == self.settings["crash"]:
            os._exit(1)
        return super().plan(sample, video)


@pytest.fixture(scope="module", autouse=True)
def ray_instance(tmp_path_factory):
    """One local Ray for the module. Its workers import this directory's modules (fakes, and this
    one for the crashing model) and share a fresh lvu cache dir with the driver."""
    with local_ray(ray, tmp_path_factory.mktemp("lvu-cache")):
        yield


def stored(results_dir: Path, run_id: str) -> dict[str, dict]:
    """Every stored record of a run, without its latency (the one field timing decides) and its
    traceback (its frames are the replica's, not the local engine's: compared on its own)."""
    store = Store(results_dir)
    try:
        return {r.sample_id: r.model_dump(exclude={"latency", "traceback"}) for r in store.results(run_id)}
    finally:
        store.close()


def test_fake_run_stores_exactly_what_the_local_engine_stores(tmp_path):
    kw = dict(settings={"n": 10, "bad_records": 1}, model_args={"fail": ["q001"], "error": ["q002"]},
              show_progress=False, report=False)
    local = run("fake", "fake-follow", results_dir=tmp_path / "local", **kw)
    remote = run("fake", "fake-follow", results_dir=tmp_path / "ray", executor="ray", ray_args=RAY_ARGS, **kw)
    assert remote.run_id == local.run_id
    assert stored(tmp_path / "ray", remote.run_id) == stored(tmp_path / "local", local.run_id)
    assert (remote.n_total, remote.n_failed, remote.tables) == (local.n_total, local.n_failed, local.tables)
    assert sorted(remote.errors) == sorted(local.errors)
    assert "RuntimeError: backend exploded" in dict(remote.errors)["q001"]  # raised inside the replica
    raised = Store(tmp_path / "ray").results(remote.run_id)[1].traceback  # kept, with the plugin's frames
    assert "fakes.py" in raised and raised.endswith("RuntimeError: backend exploded") and remote.traced == ["q001"]
    info = Store(tmp_path / "ray").run(remote.run_id)
    assert info.status == "done" and info.env["executor"]["replicas"] == 2
    assert info.env["model"]["backend"] == "fake-follow"  # the identity the replicas' model reported


def _answer_by_request(body: dict) -> str:
    """A letter that depends on every byte of the request (frames included)."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
    return f"({'ABCD'[digest[0] % 4]})"


@pytest.fixture(scope="module")
def haystack(tmp_path_factory) -> Path:
    from lvu.benchmarks.haystack import generate

    return generate(tmp_path_factory.mktemp("hay") / "h", seed=0, n_videos=2, scale=0.25)


def test_haystack_over_openai_matches_local_frames_prompts_and_requests(tmp_path, haystack):
    settings = {"data": str(haystack), "frames": 6, "subtitles": "interleave"}
    with FakeOpenAIServer(answer=_answer_by_request) as server:
        args = {"model": "fake-vlm", "base_url": server.base_url, "cache": False}
        local = run("haystack", "openai", settings=settings, model_args=args, results_dir=tmp_path / "local",
                    show_progress=False, report=False)
        local_requests = sorted(json.dumps(r.body, sort_keys=True) for r in server.requests if r.body)
        server.requests.clear()
        remote = run("haystack", "openai", settings=settings, model_args=args, results_dir=tmp_path / "ray",
                     executor="ray", ray_args=RAY_ARGS, show_progress=False, report=False)
        remote_requests = sorted(json.dumps(r.body, sort_keys=True) for r in server.requests if r.body)
    records = stored(tmp_path / "ray", remote.run_id)
    assert records == stored(tmp_path / "local", local.run_id)
    assert len(records) == 20 and not any(r["error"] for r in records.values())
    assert all(len(r["frame_timestamps"]) == 6 and r["prompt"]["n_frames"] == 6 for r in records.values())
    assert any(r["prompt"]["n_subtitles"] for r in records.values())
    assert remote_requests == local_requests  # the same JPEG bytes of the same frames, the same text
    assert remote.tables == local.tables


def test_a_judge_on_the_driver_judges_as_in_a_local_run(tmp_path):
    def reply(body: dict) -> str:  # the model never names a letter; the judge maps its reply to (C)
        return "C" if "the third one" in json.dumps(body) else "I'd say the third one."

    with FakeOpenAIServer(answer=reply) as server:
        args = {"model": "m", "base_url": server.base_url, "cache": False}
        kw = dict(settings={"n": 6}, model_args=args, judge="openai", judge_args=args, llm_extract=True,
                  show_progress=False, report=False)
        local = run("fake", "openai", results_dir=tmp_path / "local", **kw)
        remote = run("fake", "openai", results_dir=tmp_path / "ray", executor="ray", ray_args=RAY_ARGS, **kw)
    records = stored(tmp_path / "ray", remote.run_id)
    assert records == stored(tmp_path / "local", local.run_id)
    assert all(r["judge"] and r["prediction"] == 2 for r in records.values())
    assert remote.tables == local.tables and Store(tmp_path / "ray").run().env["judge"]["llm_extract"] is True


def test_tiny_hf_model_on_a_replica_matches_local(tmp_path, haystack):
    pytest.importorskip("transformers", reason="the hf backend needs lvu[hf]")
    import tiny_vlms

    checkpoint = tiny_vlms.build_qwen2_vl(tmp_path / "qwen2_vl")
    kw = dict(settings={"data": str(haystack), "frames": 4, "resize": 64}, limit=6, show_progress=False,
              model_args={"model": str(checkpoint), "max_new_tokens": 4}, report=False)
    local = run("haystack", "hf", results_dir=tmp_path / "local", **kw)
    remote = run("haystack", "hf", results_dir=tmp_path / "ray", executor="ray",
                 ray_args={"num_cpus": 0.5, "num_gpus": 0}, **kw)  # the frames reach torch read-only, zero-copy
    records = stored(tmp_path / "ray", remote.run_id)
    assert records == stored(tmp_path / "local", local.run_id)
    assert len(records) == 6 and all(r["response"] and not r["error"] for r in records.values())


def test_resume_after_a_partial_ray_run_recomputes_nothing(tmp_path):
    log = tmp_path / "calls.txt"
    kw = dict(settings={"n": 9}, model_args={"log": str(log)}, results_dir=tmp_path, show_progress=False,
              report=False)
    first = run("fake", "fake-follow", limit=2, **kw)  # the local engine starts the run...
    partial = run("fake", "fake-follow", limit=5, executor="ray", ray_args=RAY_ARGS, **kw)  # ...Ray goes on
    info = Store(tmp_path).run(partial.run_id)
    assert (info.status, info.coverage, partial.limited) == ("partial", "5/9", True)  # as the local engine
    full = run("fake", "fake-follow", executor="ray", ray_args=RAY_ARGS, **kw)
    info = Store(tmp_path).run(full.run_id)
    assert (info.status, info.coverage, full.limited) == ("done", "9/9", False)
    assert first.run_id == partial.run_id == full.run_id
    assert (partial.n_done_before, full.n_done_before) == (2, 5)
    assert sorted(log.read_text().split()) == [f"q{i:03d}" for i in range(9)]  # every sample called once
    assert full.n_failed == 0 and full.tables[0].rows == [("all", 9, 100.0)]


def test_a_replica_that_dies_is_restarted_and_its_samples_retried_on_resume(tmp_path):
    log = tmp_path / "calls.txt"
    kw = dict(settings={"n": 8}, model_args={"log": str(log), "crash": ["q003"]}, results_dir=tmp_path,
              show_progress=False, report=False, executor="ray")
    first = run("fake", "fake-crash-once", ray_args={"num_replicas": 1, "num_cpus": 0.5}, **kw)
    errors = dict(first.errors)
    assert "q003" in errors and "model replica 0 died" in errors["q003"] and "\n" not in errors["q003"]
    assert first.n_total - first.n_failed >= 8 - 4  # at most `concurrency` samples were in flight
    again = run("fake", "fake-crash-once", ray_args={"num_replicas": 1, "num_cpus": 0.5}, **kw)
    assert again.n_done_before == 8 - first.n_failed and again.n_failed == 0


def test_when_every_replica_is_gone_the_run_stops_and_keeps_what_it_stored(tmp_path):
    log = tmp_path / "calls.txt"
    kw = dict(settings={"n": 8}, model_args={"log": str(log), "crash": ["q005"]}, results_dir=tmp_path,
              show_progress=False, report=False, executor="ray", concurrency=1,
              ray_args={"num_replicas": 1, "num_cpus": 0.5, "max_restarts": 0})
    with pytest.raises(LvuError, match="all 1 model replicas died"):
        run("fake", "fake-crash-once", **kw)
    store = Store(tmp_path)
    assert store.run().status == "failed"
    kept = {r.sample_id: r for r in store.results(store.run().run_id)}
    assert {"q000", "q004", "q005"} <= set(kept) and kept["q005"].error and not kept["q004"].error
    again = run("fake", "fake-crash-once", **kw)
    assert again.n_failed == 0 and again.n_done_before == len(kept) - 1


def test_a_decode_task_that_dies_fails_its_group_only(tmp_path):
    summary = run("fake-crashing-decoder", "fake-follow", settings={"n": 7, "crash": "q004"}, results_dir=tmp_path,
                  executor="ray", ray_args={**RAY_ARGS, "group_size": 3}, show_progress=False, report=False)
    errors = dict(summary.errors)
    assert sorted(errors) == ["q003", "q004", "q005"]  # the group of q004; Ray retried it once
    assert all("decode task failed" in e and "\n" not in e for e in errors.values())
    assert summary.tables[0].rows == [("all", 7, 100 * 4 / 7)]


def test_a_model_that_cannot_be_built_is_one_line(tmp_path):
    with pytest.raises(LvuError, match=r"^openai needs the model name"):
        run("fake", "openai", settings={"n": 2}, results_dir=tmp_path, executor="ray", ray_args=RAY_ARGS,
            show_progress=False)
    assert all_cpus_free()  # the replicas that were started are gone again


def all_cpus_free() -> bool:
    """Whether every CPU of the instance is free again (Ray returns a killed actor's share soon after)."""
    for _ in range(100):
        if ray.available_resources().get("CPU", 0) == ray.cluster_resources()["CPU"]:
            return True
        time.sleep(0.1)
    return False


def test_bad_ray_args_and_executors_are_one_line(tmp_path):
    with pytest.raises(LvuError, match="unknown — known: num_replicas"):
        run("fake", "fake-follow", results_dir=tmp_path, executor="ray", ray_args={"replicas": 2})
    with pytest.raises(LvuError, match="needs a whole number"):
        run("fake", "fake-follow", results_dir=tmp_path, executor="ray", ray_args={"num_replicas": 0})
    with pytest.raises(LvuError, match="executor 'dask' is unknown"):
        run("fake", "fake-follow", results_dir=tmp_path, executor="dask")  # type: ignore[arg-type]
    with pytest.raises(LvuError, match="the Ray cluster has 0 GPU"):
        run("fake", "fake-follow", results_dir=tmp_path, executor="ray", ray_args={"num_gpus": 1})


def test_without_ray_installed_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails
    with pytest.raises(LvuError, match=r"pip install 'lvu\[ray\]'"):
        run("fake", "fake-follow", results_dir=tmp_path, executor="ray")


def test_cli_runs_on_ray(tmp_path):
    from typer.testing import CliRunner

    from lvu.cli import app

    out = CliRunner().invoke(app, ["run", "-b", "fake", "-m", "fake-follow", "--set", "n=4", "--executor", "ray",
                                   "--ray-arg", "num_cpus=0.5", "--ray-arg", "num_replicas=2",
                                   "--results-dir", str(tmp_path), "--no-report"])
    assert out.exit_code == 0, out.output
    info = Store(tmp_path).run()
    assert info.env["executor"]["name"] == "ray" and info.n_samples == 4 and info.n_errors == 0


def test_endpoint_faults_on_ray_preflight_fresh_and_early_stop(tmp_path):
    """As the local engine (tests/test_endpoint_faults.py): a dead endpoint is one line before the
    run (checked on the replicas), --fresh asks again instead of reading the response cache, and an
    endpoint that drops every call stops the run early."""
    import socket

    from lvu.runs.pipeline import DEAD_ENDPOINT_CALLS, EndpointDown

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    kw = dict(executor="ray", ray_args=RAY_ARGS, show_progress=False, report=False, results_dir=tmp_path)
    with pytest.raises(LvuError, match=f"^openai: cannot reach {dead}: connection refused"):
        run("fake", "openai", settings={"n": 4}, model_args={"model": "m", "base_url": dead}, **kw)
    with FakeOpenAIServer(answer="(A)") as server:
        args = {"model": "m", "base_url": server.base_url, "max_retries": 0}  # the response cache is on
        first = run("fake", "openai", settings={"n": 4}, model_args=args, **kw)
        server.answer = "(B)"
        again = run("fake", "openai", settings={"n": 4}, model_args=args, fresh=True, **kw)
        assert {r["response"] for r in stored(tmp_path, again.run_id).values()} == {"(B)"}
        assert again.run_id == first.run_id and len(server.chat_requests()) == 8

        server.fault_rate, server.faults = 1.0, ("drop",)
        with pytest.raises(EndpointDown, match="endpoint is gone"):
            run("fake", "openai", settings={"n": 40}, model_args=args, **kw)
        in_flight = 4 * RAY_ARGS["num_replicas"]  # concurrency 4 per replica
        assert len(server.chat_requests()) - 8 <= DEAD_ENDPOINT_CALLS + in_flight


def test_a_changed_question_is_recomputed_on_ray(tmp_path, monkeypatch):
    """Ray resumes through the same keyed reuse as the local engine: with the run id held fixed
    (fingerprint pinned), only the sample whose content changed is asked again."""
    import json

    monkeypatch.setattr("lvu.runs.engine.data_fingerprint", lambda *args, **kw: "pinned")

    def write(answers):
        lines = [json.dumps({"id": f"q{i}", "benchmark": "mine", "video": {"path": "v.mp4", "duration": 30.0},
                             "question": f"question {i}: pick A", "options": ["x", "y", "z", "w"], "answer": a})
                 for i, a in enumerate(answers)]
        (tmp_path / "q.jsonl").write_text("\n".join(lines) + "\n")

    log = tmp_path / "calls.txt"
    kw = dict(settings={"data": str(tmp_path / "q.jsonl"), "frames": 0}, model_args={"log": str(log)},
              results_dir=tmp_path / "res", show_progress=False, report=False, executor="ray", ray_args=RAY_ARGS)
    write([0, 0, 0, 0])
    first = run("jsonl", "fake-follow-neutral", **kw)
    write([0, 0, 3, 0])
    second = run("jsonl", "fake-follow-neutral", **kw)
    assert first.run_id == second.run_id and second.n_done_before == 3
    assert sorted(log.read_text().split()) == ["q0", "q1", "q2", "q2", "q3"]
    assert second.tables[0].rows[0][2] == 75.0
