"""vllm backend without vllm: the chat it builds (parts in order, images, prefix), the engine
arguments, the import-guard error, and batching / output parsing against a stand-in `vllm` module
that records what `LLM.chat` receives. Real generation needs a CUDA GPU and vllm installed."""

from __future__ import annotations

import asyncio
import base64
import io
import sys
import types as pytypes
from typing import ClassVar

import numpy as np
import pytest
from PIL import Image

from lvu.errors import LvuError
from lvu.models.base import MODELS
from lvu.models.vllm_backend import INSTALL, to_chat
from lvu.types import Frame, Prompt, Subtitle, Text


def image(value: int) -> np.ndarray:
    return np.full((12, 12, 3), value, np.uint8)


def prompt(**kw) -> Prompt:
    return Prompt(parts=[Text(text="Watch."), Frame(image=image(40), timestamp=1.0),
                         Subtitle(text="hello", start=1.0, end=2.0), Frame(image=image(200), timestamp=3.0),
                         Text(text="Q?")], system="sys", max_tokens=5, temperature=0.0, **kw)


def kinds(content: list[dict]) -> list[str]:
    return [c.get("text", c["type"]) for c in content]


def test_chat_parts_follow_the_prompt_order():
    messages = to_chat(prompt())
    assert [m["role"] for m in messages] == ["system", "user"] and messages[0]["content"] == "sys"
    content = messages[1]["content"]
    assert kinds(content) == ["Watch.", "image_pil", "hello", "image_pil", "Q?"]
    assert [np.asarray(c["image_pil"])[0, 0, 0] for c in content if c["type"] == "image_pil"] == [40, 200]


def test_jpeg_images_and_prefix_modes():
    p = prompt(assistant_prefix="Best option: (")
    messages = to_chat(p, images="jpeg", quality=80)
    content = messages[1]["content"]
    assert kinds(content) == ["Watch.", "image_url", "hello", "image_url", "Q?"]
    url = content[3]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    decoded = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    assert abs(int(decoded.mean()) - 200) <= 2
    assert messages[-1] == {"role": "assistant", "content": "Best option: ("}
    user = to_chat(p, prefix="user")
    assert [m["role"] for m in user] == ["system", "user"] and user[1]["content"][-1]["text"] == "Best option: ("


def test_missing_vllm_is_a_one_line_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError, installed or not
    with pytest.raises(LvuError) as err:
        MODELS.get("vllm")(model="Qwen/Qwen2-VL-2B-Instruct")
    assert str(err.value) == INSTALL and "pip install 'lvu[vllm]'" in str(err.value) and "\n" not in str(err.value)


# ---- a stand-in vllm ------------------------------------------------------------------------------


class FakeLLM:
    calls: ClassVar[list] = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def chat(self, conversations, sampling_params, **kwargs):
        FakeLLM.calls.append((conversations, sampling_params, kwargs))
        outs = []
        for conv, params in zip(conversations, sampling_params):
            texts = [c["text"] for c in conv[-1]["content"] if c["type"] == "text"] if conv[-1]["role"] == "user" else []
            if "too long" in texts:
                raise ValueError("The decoder prompt (length 99999) is longer than the maximum model length")
            text = "" if "silence" in texts else "B"
            lp = [{7: pytypes.SimpleNamespace(logprob=-0.2, decoded_token="B"),
                   8: pytypes.SimpleNamespace(logprob=-1.9, decoded_token="A")}] if params.get("logprobs") else None
            completion = pytypes.SimpleNamespace(text=text, token_ids=[7] if text else [], logprobs=lp,
                                                 finish_reason="stop" if text else "length")
            outs.append(pytypes.SimpleNamespace(prompt_token_ids=list(range(40)), outputs=[completion]))
        return outs


@pytest.fixture()
def fake_vllm(monkeypatch):
    FakeLLM.calls = []
    module = pytypes.ModuleType("vllm")
    module.LLM = FakeLLM
    module.SamplingParams = lambda **kw: dict(kw)
    module.__version__ = "0.0-fake"
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_engine_arguments(fake_vllm):
    model = MODELS.get("vllm")(model="/ckpt/qwen2-vl", max_images=32, tensor_parallel_size=2, max_model_len=32768,
                               mm_processor_kwargs={"max_pixels": 100352}, engine_args={"swap_space": 8})
    kw = model.llm.kwargs
    assert kw["limit_mm_per_prompt"] == {"image": 32} and kw["tensor_parallel_size"] == 2
    assert kw["max_model_len"] == 32768 and kw["mm_processor_kwargs"] == {"max_pixels": 100352}
    assert kw["swap_space"] == 8 and kw["model"] == "/ckpt/qwen2-vl"
    assert model.identity["vllm"] == "0.0-fake" and model.identity["backend"] == "vllm"
    with pytest.raises(LvuError, match="no argument.*max_image\\b"):
        MODELS.get("vllm")(model="m", max_image=3)
    with pytest.raises(LvuError, match="images='png'"):
        MODELS.get("vllm")(model="m", images="png")


def test_concurrent_prompts_are_batched_and_parsed(fake_vllm):
    model = MODELS.get("vllm")(model="m", logprobs=2, batch_wait_ms=50)

    async def many():
        prompts = [prompt(), prompt(), prompt(assistant_prefix="Answer: ("), prompt()]
        return await asyncio.gather(*(model.generate(p) for p in prompts))

    responses = asyncio.run(many())
    assert [r.text for r in responses] == ["B"] * 4 and all(r.error is None for r in responses)
    assert responses[0].usage == {"prompt_tokens": 40, "completion_tokens": 1, "total_tokens": 41}
    assert responses[0].logprobs == [{"B": -0.2, "A": -1.9}]
    assert sorted(model.batches) == [1, 3]  # one gathered batch, plus the one that continues a prefix
    by_size = {len(conv): (params, kw) for conv, params, kw in FakeLLM.calls}
    params, kw = by_size[3]
    assert params[0] == {"temperature": 0.0, "max_tokens": 5, "seed": 0, "logprobs": 2}
    assert kw["add_generation_prompt"] is True and kw["continue_final_message"] is False
    conv, _, kw = next(c for c in FakeLLM.calls if len(c[0]) == 1)
    assert kw["continue_final_message"] is True and conv[0][-1] == {"role": "assistant", "content": "Answer: ("}


def test_a_failing_prompt_fails_alone(fake_vllm):
    model = MODELS.get("vllm")(model="m", batch_wait_ms=50)
    bad = Prompt(parts=[Text(text="too long")])
    empty = Prompt(parts=[Text(text="silence")])

    async def run():
        return await asyncio.gather(*(model.generate(p) for p in (prompt(), bad, empty, prompt())))

    ok1, failed, silent, ok2 = asyncio.run(run())
    assert ok1.text == ok2.text == "B"
    assert failed.error.startswith("vllm: ValueError: The decoder prompt (length 99999) is longer")
    assert silent.error == "empty response: finish_reason=length"
    too_many = Prompt(parts=[Frame(image=image(0), timestamp=t) for t in range(65)])
    assert "max_images=64" in asyncio.run(model.generate(too_many)).error
