"""LLaVA-OneVision without torchvision: lvu.models.hf_processors rebuilds its processor from the
tokenizer, the PIL image processor and the chat template, and the model accepts what it makes."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in these tests may download

import pytest

pytest.importorskip("torch", reason="needs torch (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="needs transformers (pip install 'lvu[hf]')")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

import tiny_vlms  # noqa: E402
from lvu.models.hf_processors import rebuild_processor  # noqa: E402

pytestmark = pytest.mark.slow  # tiny torch models: docs/testing.md


@pytest.fixture(scope="module")
def onevision(tmp_path_factory):
    from transformers import LlavaOnevisionForConditionalGeneration

    path = tiny_vlms.build_llava_onevision(tmp_path_factory.mktemp("ov") / "llava_onevision")
    return path, LlavaOnevisionForConditionalGeneration.from_pretrained(path).eval()


def encode(processor, images):
    content = [{"type": "text", "text": "Look at the frames."}, *({"type": "image"} for _ in images),
               {"type": "text", "text": "What happens first?"}]
    text = processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                         tokenize=False)
    return text, processor(text=[text], images=[images], return_tensors="pt")


def expected_tokens(model, out) -> int:
    """Image features the model itself makes from these pixels (what the `<image>` tokens must match)."""
    with torch.no_grad():
        feats = model.model.get_image_features(pixel_values=out["pixel_values"], image_sizes=out["image_sizes"],
                                               batch_num_images=out["batch_num_images"],
                                               vision_aspect_ratio=model.config.vision_aspect_ratio)
    feats = getattr(feats, "pooler_output", feats)
    return sum(int(f.shape[0]) for f in feats)


def test_other_families_are_not_rebuilt(onevision):
    path, _ = onevision
    assert rebuild_processor(str(path), "llava", False, {}) is None
    assert rebuild_processor(str(path), "qwen2_vl", False, {}) is None


def test_autoprocessor_needs_torchvision_here(onevision):
    """Why the rebuild exists: in this torchvision-free environment AutoProcessor cannot load."""
    import importlib.util

    from transformers import AutoProcessor

    if importlib.util.find_spec("torchvision") is not None:
        pytest.skip("torchvision is installed: AutoProcessor loads")
    with pytest.raises(Exception):
        AutoProcessor.from_pretrained(onevision[0])


@pytest.mark.parametrize("n_images", [1, 3])
def test_rebuilt_processor_feeds_generate(onevision, n_images):
    path, model = onevision
    processor = rebuild_processor(str(path), "llava_onevision", False, {})
    assert processor is not None and processor.video_processor is None
    assert type(processor.image_processor).__name__ == "LlavaOnevisionImageProcessorPil"
    # frames of the haystack's shape (wide), each a different colour
    images = [Image.new("RGB", (96, 54), (60 * i, 20, 200 - 40 * i)) for i in range(n_images)]
    text, out = encode(processor, images)
    assert text.count("<image>") == n_images  # the template put one per frame, in order
    ids = out["input_ids"][0]
    n_tokens = int((ids == model.config.image_token_id).sum())
    assert n_tokens == expected_tokens(model, out)
    # single image: anyres (base crop + grid + newlines); several: 16 base tokens + newline each
    assert n_tokens > 17 if n_images == 1 else n_tokens == 17 * n_images
    gen = model.generate(**out, max_new_tokens=4, do_sample=False, pad_token_id=processor.tokenizer.pad_token_id)
    assert gen.shape[1] > ids.shape[0] and torch.equal(gen[0, :ids.shape[0]], ids)


def test_wrong_token_count_is_refused(onevision):
    """The check above has teeth: a processor expanding too few `<image>` tokens is refused by the model."""
    path, model = onevision
    processor = rebuild_processor(str(path), "llava_onevision", False, {})
    processor.num_image_tokens = 9
    _, out = encode(processor, [Image.new("RGB", (96, 54))] * 3)
    with pytest.raises(ValueError):
        model.generate(**out, max_new_tokens=2, do_sample=False)


def test_the_hf_backend_runs_llava_onevision_without_torchvision(onevision):
    """`-m hf -a model=<llava-onevision>` loads through the rebuilt processor and batches like the others."""
    import asyncio

    import numpy as np

    from lvu.models.hf import HFModel
    from lvu.types import Frame, Prompt, Text

    path, _ = onevision
    prompts = [Prompt(parts=[Frame(image=np.full((56, 84, 3), 40 * k, np.uint8), timestamp=float(i)) for i in range(k)]
                      + [Text(text=f"What happens first? {k}")], max_tokens=5) for k in (1, 2, 2, 3)]

    def generate_all(backend):
        async def go():
            try:
                return await asyncio.gather(*(backend.generate(p) for p in prompts))
            finally:
                await backend.close()
        return asyncio.run(go())

    one = HFModel(model=str(path))
    assert one.identity["processor"] == "rebuilt" and one.identity["model_type"] == "llava_onevision"
    singles = generate_all(one)
    batched = generate_all(HFModel(model=str(path), batch_size=2))
    assert [r.error for r in singles + batched] == [None] * 8
    assert [r.text for r in batched] == [r.text for r in singles]
    tokens = [r.usage["prompt_tokens"] for r in singles]
    assert tokens[1] == tokens[2] < tokens[3]  # several frames: one base crop each (a lone frame gets anyres)
