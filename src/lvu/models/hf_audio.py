"""Audio for the hf backend: which checkpoints hear, and Qwen2.5-Omni's audio tokens rebuilt.

Two paths, as for images (lvu.models.hf):
- a processor with a `feature_extractor` (Qwen2.5-Omni, Gemma 3n, Phi-4-multimodal... with
  torchvision installed, AutoProcessor loads them): the chat template places `{"type": "audio"}`
  where the clip is, and the processor gets the clips as `audio=[float32 arrays at 16 kHz]`;
- Qwen2.5-Omni's thinker without torchvision (its AutoProcessor needs a video processor, hence
  torchvision, in transformers 5): tokenizer + the PIL image processor + the Whisper feature
  extractor, each `<|AUDIO|>` expanded to the number of tokens the audio encoder makes of its clip
  (`_get_feat_extract_output_lengths`, what Qwen2_5OmniProcessor does), with
  `input_features` / `feature_attention_mask` beside the text.
"""

from __future__ import annotations

from typing import Any

from lvu.errors import LvuError

OMNI_TYPES = ("qwen2_5_omni_thinker",)
"""Families whose audio + image path lvu rebuilds when their AutoProcessor needs torchvision."""
SAMPLE_RATE = 16_000


def load_omni_parts(model_id: str, config: Any, trust: bool, extra: dict[str, Any]) -> dict[str, Any]:
    """The pieces `encode_omni` needs: tokenizer, image processor, feature extractor, token strings."""
    from transformers import AutoFeatureExtractor, AutoImageProcessor, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_id, trust_remote_code=trust)
    try:
        features = AutoFeatureExtractor.from_pretrained(model_id, trust_remote_code=trust)
    except (OSError, ValueError) as e:
        raise LvuError(f"hf: {model_id!r} ({config.model_type}) has no audio feature extractor: {e}") from None
    images = AutoImageProcessor.from_pretrained(model_id, trust_remote_code=trust, **extra)
    ids = {name: getattr(config, f"{name}_token_id", None) or getattr(config, f"{name}_token_index", None)
           for name in ("image", "audio")}
    image_id, audio_id = ids["image"], ids["audio"]
    if image_id is None or audio_id is None:
        raise LvuError(f"hf: the config of {model_id!r} names no image/audio token ids")
    return {"tokenizer": tokenizer, "features": features, "images": images, "image_id": image_id,
            "image_token": tokenizer.convert_ids_to_tokens(image_id), "audio_id": audio_id,
            "audio_token": tokenizer.convert_ids_to_tokens(audio_id)}


def encode_omni(parts: dict[str, Any], text: str, images: list[Any], audios: list[Any], special: bool,
                model_id: str) -> dict[str, Any]:
    """Qwen2.5-Omni thinker inputs for one prompt: image and audio placeholders expanded in `text`."""
    from transformers.models.qwen2_5_omni.processing_qwen2_5_omni import _get_feat_extract_output_lengths

    out: dict[str, Any] = {}
    image_token, audio_token = parts["image_token"], parts["audio_token"]
    counts: dict[str, list[int]] = {image_token: [], audio_token: []}
    if images:
        feats = parts["images"](images=images, return_tensors="pt")
        merge = int(parts["images"].merge_size) ** 2
        counts[image_token] = [int(g.prod()) // merge for g in feats["image_grid_thw"]]
        out.update(feats)
    if audios:
        feats = parts["features"](audios, sampling_rate=SAMPLE_RATE, return_attention_mask=True,
                                  padding="max_length", return_tensors="pt")
        mask = feats.pop("attention_mask")
        counts[audio_token] = [int(n) for n in _get_feat_extract_output_lengths(mask.sum(-1))]
        out["input_features"], out["feature_attention_mask"] = feats["input_features"], mask
    for token, numbers in counts.items():
        pieces = text.split(token)
        if len(pieces) - 1 != len(numbers):
            what = "frames" if token == image_token else "audio clips"
            raise LvuError(f"hf: the chat template of {model_id!r} placed {len(pieces) - 1} {token} tokens "
                           f"for {len(numbers)} {what}")
        text = pieces[0] + "".join(token * n + rest for n, rest in zip(numbers, pieces[1:]))
    tok = parts["tokenizer"]([text], return_tensors="pt", add_special_tokens=special)
    out["input_ids"], out["attention_mask"] = tok["input_ids"], tok["attention_mask"]
    return out


def processor_hears(processor: Any) -> bool:
    """Whether an AutoProcessor takes audio (it has a feature extractor)."""
    return processor is not None and getattr(processor, "feature_extractor", None) is not None
