"""The hf backend end to end: real transformers generation on tiny random VLMs built here."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in these tests may download

import numpy as np
import pytest

pytest.importorskip("torch", reason="the hf backend needs torch (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="the hf backend needs transformers (pip install 'lvu[hf]')")

import tiny_vlms  # noqa: E402
from lvu.benchmarks.jsonl import write_samples  # noqa: E402
from lvu.errors import LvuError  # noqa: E402
from lvu.models.hf import HFModel  # noqa: E402
from lvu.api import run  # noqa: E402
from lvu.runs.store import Store  # noqa: E402
from lvu.types import Frame, Prompt, Sample, Subtitle, Text, VideoRef  # noqa: E402

pytestmark = pytest.mark.slow  # tiny torch models: docs/testing.md

BUILDERS = {"llava": tiny_vlms.build_llava, "qwen2_vl": tiny_vlms.build_qwen2_vl,
            "qwen2_5_vl": tiny_vlms.build_qwen2_5_vl}
IMAGE_TOKEN = {"llava": "<image>", "qwen2_vl": "<|image_pad|>", "qwen2_5_vl": "<|image_pad|>"}


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """family -> directory of a saved tiny random checkpoint."""
    root = tmp_path_factory.mktemp("tiny_vlms")
    return {name: build(root / name) for name, build in BUILDERS.items()}


def frame(level: int, t: float, h: int = 112, w: int = 112) -> Frame:
    return Frame(image=np.full((h, w, 3), level, np.uint8), timestamp=t)


def interleaved() -> Prompt:
    """Three frames of different sizes and grey levels, with text and a subtitle between them."""
    return Prompt(
        parts=[Text(text="Look at the video."), frame(200, 1.0, 112, 112),
               Subtitle(text="the cat sat", start=0.5, end=1.5), frame(20, 2.0, 56, 56),
               Text(text="then"), frame(120, 3.0, 56, 112), Text(text="What happens first? (A) a cat (B) a dog")],
        system="Answer briefly.", max_tokens=6)


def record_generate(monkeypatch, backend: HFModel) -> list[dict]:
    """Wrap the model's generate to keep what it received."""
    calls: list[dict] = []
    original = backend.model.generate

    def spy(**kwargs):
        calls.append(kwargs)
        return original(**kwargs)

    monkeypatch.setattr(backend.model, "generate", spy)
    return calls


def spans(ids: list[int], token: int) -> list[tuple[int, int]]:
    """(start, end) of each run of `token` in ids."""
    out, start = [], None
    for i, t in enumerate([*ids, -1]):
        if t == token and start is None:
            start = i
        elif t != token and start is not None:
            out.append((start, i))
            start = None
    return out


def generate_all(backend: HFModel, prompts: list[Prompt]):
    async def go():
        return await asyncio.gather(*(backend.generate(p) for p in prompts))

    return asyncio.run(go())


@pytest.mark.parametrize("family", list(BUILDERS))
def test_frames_and_text_reach_the_model_in_prompt_order(tiny, family, monkeypatch):
    backend = HFModel(model=str(tiny[family]))
    assert backend.identity["model_type"] == family
    calls = record_generate(monkeypatch, backend)
    (response,) = generate_all(backend, [interleaved()])
    assert response.error is None and isinstance(response.text, str)

    (got,) = calls
    ids = got["input_ids"][0].tolist()
    tok = backend.tokenizer
    image_id = tok.convert_tokens_to_ids(IMAGE_TOKEN[family])
    runs = spans(ids, image_id)
    assert len(runs) == 3  # one span of image tokens per frame
    texts = [tok.decode(ids[a:b], skip_special_tokens=True) for a, b in zip([0] + [e for _, e in runs], [s for s, _ in runs] + [len(ids)])]
    assert "Answer briefly." in texts[0] and texts[0].rstrip().endswith("Look at the video.")
    assert "the cat sat" in texts[1] and "then" in texts[2] and "What happens first?" in texts[3]
    assert response.usage["prompt_tokens"] == len(ids)

    pixels = got["pixel_values"].float()
    if family == "llava":  # one 56x56 crop per frame, in order: grey levels 200, 20, 120
        means = pixels.mean(dim=(1, 2, 3)).tolist()
        assert [b - a for a, b in runs] == [16, 16, 16]
    else:  # patches of each image one after the other; frames of 112x112, 56x56, 56x112 pixels
        grid = got["image_grid_thw"].tolist()
        assert grid == [[1, 8, 8], [1, 4, 4], [1, 4, 8]]
        assert [b - a for a, b in runs] == [t * h * w // 4 for t, h, w in grid]
        bounds = np.cumsum([0] + [t * h * w for t, h, w in grid])
        means = [pixels[a:b].mean().item() for a, b in zip(bounds[:-1], bounds[1:])]
    assert means[1] < means[2] < means[0]


def test_assistant_prefix_follows_the_generation_prompt(tiny, monkeypatch):
    backend = HFModel(model=str(tiny["llava"]))
    calls = record_generate(monkeypatch, backend)
    prompt = Prompt(parts=[frame(50, 0.0), Text(text="Which option?")], assistant_prefix="Best option: (",
                    max_tokens=3)
    (response,) = generate_all(backend, [prompt])
    decoded = backend.tokenizer.decode(calls[0]["input_ids"][0])
    assert decoded.endswith("ASSISTANT:Best option: (")
    assert decoded.startswith("<s>USER: <image>") and decoded.count("<s>") == 1  # one BOS, no system turn
    assert not response.text.startswith("Best option")  # the continuation only
    assert response.usage["completion_tokens"] <= 3

    # a template that writes the BOS itself gets no second one from the tokenizer
    monkeypatch.setattr(backend.processor, "chat_template", "{{ bos_token }}" + tiny_vlms.LLAVA_TEMPLATE)
    generate_all(backend, [prompt])
    assert backend.tokenizer.decode(calls[1]["input_ids"][0]).startswith("<s>USER: <image>")
    assert calls[1]["input_ids"][0].tolist() == calls[0]["input_ids"][0].tolist()


@pytest.mark.parametrize("family", ["llava", "qwen2_vl"])
def test_batched_generation_gives_the_same_greedy_texts(tiny, family, monkeypatch):
    prompts = [
        interleaved(),
        Prompt(parts=[frame(90, 0.0, 56, 56), Text(text="A B C D")], max_tokens=6),
        Prompt(parts=[Text(text="no frames at all, only a question about the mat")], max_tokens=6),
        Prompt(parts=[frame(10, 0.0), frame(240, 1.0, 56, 112), Text(text="the dog?")], max_tokens=6),
    ]
    one = HFModel(model=str(tiny[family]), logprobs=True)
    many = HFModel(model=str(tiny[family]), batch_size=2, logprobs=True)
    calls = record_generate(monkeypatch, many)
    singles = generate_all(one, prompts)
    batched = generate_all(many, prompts)
    assert one.batch_sizes == [1, 1, 1, 1] and many.batch_sizes == [2, 2]
    assert sorted(c["input_ids"].shape[0] for c in calls) == [2, 2]
    assert [r.error for r in batched] == [None] * 4
    assert [r.text for r in batched] == [r.text for r in singles]
    assert [r.usage for r in batched] == [r.usage for r in singles]
    for a, b in zip(singles, batched):
        assert len(a.logprobs) == len(b.logprobs)
        for x, y in zip(a.logprobs, b.logprobs):
            assert list(x)[0] == list(y)[0]
            assert next(iter(x.values())) == pytest.approx(next(iter(y.values())), abs=1e-3)


def test_prompts_with_different_settings_are_not_batched_together(tiny):
    backend = HFModel(model=str(tiny["qwen2_vl"]), batch_size=4)
    prompts = [Prompt(parts=[Text(text="q")], max_tokens=n) for n in (2, 3, 2, 3)]
    responses = generate_all(backend, prompts)
    assert sorted(backend.batch_sizes) == [2, 2]
    assert [r.usage["completion_tokens"] <= n for r, n in zip(responses, (2, 3, 2, 3))] == [True] * 4


def test_logprobs_on_request(tiny):
    plain = HFModel(model=str(tiny["qwen2_vl"]))
    (r,) = generate_all(plain, [interleaved()])
    assert r.logprobs is None

    backend = HFModel(model=str(tiny["qwen2_vl"]), logprobs=True, top_logprobs=3)
    (r,) = generate_all(backend, [interleaved()])
    assert r.logprobs and len(r.logprobs) == r.usage["completion_tokens"] > 0
    for step in r.logprobs:
        values = list(step.values())
        assert 1 <= len(step) <= 4 and all(v <= 0 for v in values)
        assert values[0] == pytest.approx(max(values), abs=1e-5)  # greedy: the chosen token is the top one


def test_a_run_through_the_engine(tiny, tmp_video, tmp_path):
    video = tmp_video(seconds=2.0, size=(96, 64))
    samples = [Sample(id=f"s{i}", benchmark="mine", video=VideoRef(path=str(video.path)),
                      question=f"What is shown {i}?", options=["a bar", "a dot"], answer=i % 2) for i in range(3)]
    data = write_samples(tmp_path / "mine.jsonl", samples)
    summary = run("jsonl", "hf", settings={"data": str(data), "frames": 2},
                  model_args={"model": str(tiny["qwen2_vl"]), "batch_size": 2, "max_new_tokens": 4},
                  results_dir=tmp_path / "results", concurrency=3, show_progress=False)
    assert summary.n_failed == 0 and summary.n_total == 3
    stored = Store(tmp_path / "results").results(summary.run_id)
    assert all(isinstance(r.response, str) and r.prompt["order"] == "FFT" for r in stored)


def test_clear_errors(tiny, tmp_path, monkeypatch):
    with pytest.raises(LvuError, match="hf has no argument.*temprature"):
        HFModel(model=str(tiny["llava"]), temprature=0)
    with pytest.raises(LvuError, match="hf needs the model: -a model="):
        HFModel()
    with pytest.raises(LvuError, match="cannot load") as e:
        HFModel(model=str(tmp_path / "nowhere"))
    assert "\n" not in str(e.value)
    with pytest.raises(LvuError, match="unknown dtype"):
        HFModel(model=str(tiny["llava"]), dtype="float8")

    backend = HFModel(model=str(tiny["llava"]))
    (r,) = generate_all(backend, [Prompt(parts=[Frame(timestamp=1.5), Text(text="?")])])
    assert r.error == "frame at 1.50s has no pixels" and r.text == ""

    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(LvuError, match=r"pip install 'lvu\[hf\]'"):
        HFModel(model=str(tiny["llava"]))


def test_importing_the_backend_does_not_import_torch():
    code = ("import sys, lvu.models, lvu.models.hf; lvu.models.load_all(); "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
