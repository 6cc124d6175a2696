"""The hf backend's fast path on tiny random VLMs (CPU): full batches, the generation process, compile=true."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in these tests may download

import numpy as np
import pytest

pytest.importorskip("torch", reason="the hf backend needs torch (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="the hf backend needs transformers (pip install 'lvu[hf]')")

import tiny_vlms  # noqa: E402
from lvu.api import run  # noqa: E402
from lvu.benchmarks.jsonl import write_samples  # noqa: E402
from lvu.errors import LvuError  # noqa: E402
from lvu.models import hf_worker  # noqa: E402
from lvu.models.hf import HFModel  # noqa: E402
from lvu.runs.store import Store  # noqa: E402
from lvu.types import Frame, Prompt, Sample, Text, VideoRef  # noqa: E402

pytestmark = pytest.mark.slow  # tiny torch models: docs/testing.md


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_fast")
    return {"qwen2_5_vl": tiny_vlms.build_qwen2_5_vl(root / "qwen2_5_vl"), "llava": tiny_vlms.build_llava(root / "llava")}


def prompts(n: int, max_tokens: int = 8) -> list[Prompt]:
    rng = np.random.default_rng(0)
    return [Prompt(parts=[Frame(image=rng.integers(0, 255, (56 + 14 * (k % 3), 84, 3), dtype=np.uint8),
                                timestamp=float(i)) for i in range(2)]
                   + [Text(text=f"What happens first? (A) a cat (B) a dog {k}")], max_tokens=max_tokens)
            for k in range(n)]


def generate_all(backend: HFModel, items: list[Prompt]):
    async def go():
        try:
            return await asyncio.gather(*(backend.generate(p) for p in items))
        finally:
            await backend.close()

    return asyncio.run(go())


# ---- batches fill from prompts being encoded --------------------------------------------------------------------

def test_batches_wait_for_prompts_being_encoded(tiny, monkeypatch):
    """16 prompts whose encoding takes 0.2 s each (two encode threads here): the batches go out full.

    Before, a batch left 50 ms (batch_wait) after its first prompt was ready, while the others were
    still being encoded: 16 prompts became part-full batches."""
    backend = HFModel(model=str(tiny["qwen2_5_vl"]), batch_size=8)
    real = backend.encode

    def slow_encode(prompt):
        time.sleep(0.2)
        return real(prompt)

    monkeypatch.setattr(backend, "encode", slow_encode)
    responses = generate_all(backend, prompts(16, max_tokens=2))
    assert [r.error for r in responses] == [None] * 16
    assert backend.batch_sizes == [8, 8]


def test_a_failed_encode_does_not_hold_a_batch(tiny, monkeypatch):
    """The batcher waits for prompts being encoded; one that fails must not leave it waiting."""
    backend = HFModel(model=str(tiny["qwen2_5_vl"]), batch_size=4)
    real = backend.encode

    def encode(prompt):
        if "dog 2" in prompt.parts[-1].text:
            time.sleep(0.3)
            raise ValueError("broken frame")
        return real(prompt)

    monkeypatch.setattr(backend, "encode", encode)
    responses = generate_all(backend, prompts(4, max_tokens=2))
    assert [r.error is None for r in responses] == [True, True, False, True]
    assert "encoding failed: ValueError: broken frame" in responses[2].error
    assert backend.batch_sizes == [3]


# ---- the generation process -------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", ["qwen2_5_vl", "llava"])
def test_the_generation_process_gives_the_in_process_replies(tiny, family, monkeypatch):
    # every tensor through shared memory, so the tiny model exercises the path a 7B model's pixels take
    monkeypatch.setattr(hf_worker, "SHARED_MIN_BYTES", 0)
    items = prompts(5)
    here = generate_all(HFModel(model=str(tiny[family]), logprobs=True, worker="thread"), items)
    there_backend = HFModel(model=str(tiny[family]), logprobs=True, worker="process", batch_size=2)
    assert there_backend.identity["device"] == "cpu" and there_backend.identity["model_type"] == family
    there = generate_all(there_backend, items)
    assert [r.error for r in there] == [None] * 5
    assert [r.text for r in there] == [r.text for r in here]
    assert [r.usage for r in there] == [r.usage for r in here]
    assert [list(s) for r in there for s in r.logprobs] == [list(s) for r in here for s in r.logprobs]
    assert sorted(there_backend.batch_sizes) == [1, 2, 2]
    assert there_backend.generator._process.poll() is not None  # close() ended the process
    assert not [f for f in os.listdir("/dev/shm") if f.startswith("psm_")], "shared-memory segments left behind"


def test_the_generation_process_reports_its_errors(tiny, tmp_path):
    with pytest.raises(LvuError, match="hf: unknown worker 'gpu'; use auto, process, thread"):
        HFModel(model=str(tiny["llava"]), worker="gpu")
    broken = tmp_path / "no_weights"
    shutil.copytree(tiny["llava"], broken)
    for f in broken.glob("*.safetensors"):
        f.unlink()
    with pytest.raises(LvuError, match="hf: cannot load .*no_weights.* as an image-text-to-text model"):
        HFModel(model=str(broken), worker="process")

    backend = HFModel(model=str(tiny["llava"]), worker="process")
    with pytest.raises(LvuError, match="the model lives in the generation process"):
        backend.model
    backend.generator._process.kill()  # e.g. the kernel's out-of-memory killer
    (r,) = generate_all(backend, prompts(1))
    assert not r.text and "hf: the generation process ended (killed, e.g. out of host memory" in r.error


def test_the_generation_process_ends_when_the_run_is_killed(tiny, tmp_path):
    """kill -9 of the run's process leaves no model process behind (it would hold the GPU's memory)."""
    import signal
    import subprocess
    import sys

    script = (f"from lvu.models.hf import HFModel\n"
              f"m = HFModel(model={str(tiny['llava'])!r}, worker='process')\n"
              f"print(m.generator._process.pid, flush=True)\n"
              f"import time; time.sleep(600)\n")
    run_process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = int(run_process.stdout.readline())
    os.kill(run_process.pid, signal.SIGKILL)
    run_process.wait()
    for _ in range(300):  # the child sees its socket close and exits
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        try:
            if Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":  # exited, not yet reaped
                break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the generation process outlived the run's process")


def test_a_run_with_the_generation_process(tiny, tmp_video, tmp_path):
    video = tmp_video(seconds=2.0, size=(96, 64))
    samples = [Sample(id=f"s{i}", benchmark="mine", video=VideoRef(path=str(video.path)),
                      question=f"What is shown {i}?", options=["a bar", "a dot"], answer=i % 2) for i in range(4)]
    data = write_samples(tmp_path / "mine.jsonl", samples)
    replies = {}
    for worker in ("thread", "process"):
        summary = run("jsonl", "hf", settings={"data": str(data), "frames": 2},
                      model_args={"model": str(tiny["qwen2_5_vl"]), "batch_size": 2, "max_new_tokens": 4,
                                  "worker": worker},
                      results_dir=tmp_path / worker, concurrency=4, show_progress=False)
        assert summary.n_failed == 0 and summary.n_total == 4
        replies[worker] = {r.sample_id: r.response for r in Store(tmp_path / worker).results(summary.run_id)}
    assert replies["process"] == replies["thread"]


# ---- compile=true -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", ["qwen2_5_vl", "llava"])
def test_compiled_decoding_gives_the_eager_greedy_replies(tiny, family, monkeypatch):
    import torch

    compiled = []
    real_compile = torch.compile

    def spy_compile(fn, **kwargs):
        inner = real_compile(fn, **kwargs)

        def call(*a, **k):
            compiled.append(1)
            return inner(*a, **k)

        return call

    monkeypatch.setattr(torch, "compile", spy_compile)
    items = prompts(4)
    eager = generate_all(HFModel(model=str(tiny[family])), items)
    assert not compiled
    backend = HFModel(model=str(tiny[family]), compile=True)
    fast = generate_all(backend, items)
    batched = generate_all(HFModel(model=str(tiny[family]), compile=True, batch_size=2), items)
    assert [r.error for r in fast + batched] == [None] * 8
    assert [r.text for r in fast] == [r.text for r in eager]
    assert [r.text for r in batched] == [r.text for r in eager]
    assert [r.usage for r in fast] == [r.usage for r in eager]
    assert len(compiled) >= 4 * 7  # every decode step after the first token ran the compiled step
    assert backend.generator.info["compile"] is True


# ---- benchmarks/gpu_hf.py ---------------------------------------------------------------------------------------

def test_the_gpu_benchmark_runs_end_to_end_on_tiny_models(tmp_path):
    """The GPU benchmark's CPU try-out: lvu's runs, the floor and the report, every figure present."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_hf.py"
    done = subprocess.run([sys.executable, str(script), "--size", "tiny", "--device", "cpu", "--limit", "3",
                           "--frames", "2", "--models", "qwen2_5_vl", "--workdir", str(tmp_path / "work")],
                          env={**os.environ, "OUT": str(tmp_path / "out")}, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads((tmp_path / "out" / "gpu_hf.json").read_text())
    assert res["done"] and all(s["ok"] for s in res["steps"].values()), res["steps"]
    qwen = res["qwen2_5_vl"]
    for run_name in ("b1", "b8", "b1-compile"):
        assert qwen[run_name]["n"] == 3 and qwen[run_name]["failed"] == 0
        assert qwen[run_name]["ratio"] > 0 and qwen[run_name]["per_sample_s"] > 0
    assert qwen["floor"]["b1_s"] > 0 and qwen["floor"]["b8_s"] > 0 and qwen["floor"]["b1_compiled_s"] > 0
    assert qwen["floor"]["n"] == 3 and qwen["bound_s"] is None  # no bound on a CPU
    assert "b1-compile:" in done.stdout and "bound n/a on cpu" in done.stdout
