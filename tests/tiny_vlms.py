"""Tiny randomly initialised VLMs, built from configs with a tokenizer trained here (no download).

`build_llava(dir)` and `build_qwen2_vl(dir)` / `build_qwen2_5_vl(dir)` write a checkpoint that
transformers loads like a hub model (`AutoModelForImageTextToText.from_pretrained(dir)`): weights,
config, tokenizer with a chat template, and the image processor (the PIL one, no torchvision).
`build_qwen2_5_omni_thinker(dir)` adds audio: an audio encoder and the Whisper feature extractor.
Needs torch and transformers; each build takes well under a second.
"""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = [
    "Look at the video frames and answer the question. What happens first?",
    "(A) a cat (B) a dog (C) a red car (D) nothing. Best option: (",
    "system user assistant subtitle frame the cat sat on the mat",
] * 4

LLAVA_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}SYSTEM: {{ m['content'][0]['text'] }}\n"
    "{% else %}{{ m['role'].upper() }}: "
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>{% else %}{{ c['text'] }}{% endif %}{% endfor %}"
    "</s>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
"""Interleaving template (images where they occur among the texts), LLaVA-OneVision style."""

QWEN_TEMPLATE = (
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""The structure of Qwen2-VL-Instruct's template for images and text."""

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>"]


def train_tokenizer(specials: list[str], bos: str | None = None, **tokens):
    """A byte-level BPE tokenizer trained on a few sentences, wrapped for transformers; with
    `bos`, it puts that token in front of every text (as Llama's tokenizer does)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(CORPUS, trainer)
    if bos:
        tk.post_processor = processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, tk.token_to_id(bos))])
    return PreTrainedTokenizerFast(tokenizer_object=tk, **tokens)


def build_llava(path: Path) -> Path:
    import torch
    from transformers import (CLIPImageProcessorPil, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor)

    tok = train_tokenizer(["<pad>", "<s>", "</s>", "<image>"], bos="<s>", pad_token="<pad>", bos_token="<s>",
                          eos_token="</s>", extra_special_tokens={"image_token": "<image>"})
    tok.chat_template = LLAVA_TEMPLATE
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                              image_size=56, patch_size=14, projection_dim=32)
    text = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    config = LlavaConfig(vision_config=vision, text_config=text, vision_feature_layer=-1,
                         image_token_index=tok.convert_tokens_to_ids("<image>"))
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(path)
    images = CLIPImageProcessorPil(size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56})
    LlavaProcessor(image_processor=images, tokenizer=tok, chat_template=LLAVA_TEMPLATE, patch_size=14,
                   vision_feature_select_strategy="default", num_additional_image_tokens=1).save_pretrained(path)
    return path


def _qwen_tokenizer():
    tok = train_tokenizer(QWEN_SPECIALS, pad_token="<|endoftext|>", eos_token="<|im_end|>")
    tok.chat_template = QWEN_TEMPLATE
    ids = {s: tok.convert_tokens_to_ids(s) for s in QWEN_SPECIALS}
    text = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, bos_token_id=None,
                eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
                rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3]})
    tokens = dict(image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                  vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    return tok, text, tokens


def _save_qwen(model, tok, path: Path) -> Path:
    from transformers import Qwen2VLImageProcessorPil

    model.save_pretrained(path)
    tok.save_pretrained(path)
    # 56x56 .. 112x112 pixels: 4 to 16 patches of 14 px, merged 2x2 -> 1 to 4 tokens per image
    Qwen2VLImageProcessorPil(size={"shortest_edge": 56 * 56, "longest_edge": 112 * 112}).save_pretrained(path)
    return path


def build_qwen2_vl(path: Path) -> Path:
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    tok, text, tokens = _qwen_tokenizer()
    vision = dict(depth=2, embed_dim=32, hidden_size=64, num_heads=4, spatial_merge_size=2, patch_size=14,
                  temporal_patch_size=2)
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(Qwen2VLConfig(text_config=text, vision_config=vision, **tokens))
    return _save_qwen(model, tok, path)


def build_qwen2_5_vl(path: Path) -> Path:
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    tok, text, tokens = _qwen_tokenizer()
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                  spatial_merge_size=2, patch_size=14, temporal_patch_size=2, window_size=56,
                  fullatt_block_indexes=[1])
    torch.manual_seed(0)
    model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(text_config=text, vision_config=vision, **tokens))
    return _save_qwen(model, tok, path)


OMNI_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_bos|>", "<|vision_eos|>", "<|IMAGE|>",
                 "<|VIDEO|>", "<|audio_bos|>", "<|audio_eos|>", "<|AUDIO|>"]
OMNI_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_bos|><|IMAGE|><|vision_eos|>"
    "{% elif c['type'] == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""The structure of Qwen2.5-Omni's template for images, audio and text."""


def build_qwen2_5_omni_thinker(path: Path) -> Path:
    """A tiny random Qwen2.5-Omni thinker (audio + vision + text) with its tokenizer, PIL image
    processor and Whisper feature extractor: what `hf` loads without torchvision (lvu.models.hf_audio)."""
    import torch
    from transformers import (Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration,
                              Qwen2VLImageProcessorPil, WhisperFeatureExtractor)

    tok = train_tokenizer(OMNI_SPECIALS, pad_token="<|endoftext|>", eos_token="<|im_end|>")
    tok.chat_template = OMNI_TEMPLATE
    ids = {s: tok.convert_tokens_to_ids(s) for s in OMNI_SPECIALS}
    config = Qwen2_5OmniThinkerConfig(
        audio_config=dict(num_mel_bins=128, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32,
                          d_model=16, output_dim=64, n_window=100, max_source_positions=1500),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                           spatial_merge_size=2, patch_size=14, temporal_patch_size=2, window_size=56,
                           fullatt_block_indexes=[0], in_channels=3),
        text_config=dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2,
                         rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 10000.0}),
        audio_token_id=ids["<|AUDIO|>"], image_token_id=ids["<|IMAGE|>"], video_token_id=ids["<|VIDEO|>"],
        vision_start_token_id=ids["<|vision_bos|>"], vision_end_token_id=ids["<|vision_eos|>"],
        audio_start_token_id=ids["<|audio_bos|>"], audio_end_token_id=ids["<|audio_eos|>"],
    )
    torch.manual_seed(0)
    Qwen2_5OmniThinkerForConditionalGeneration(config).save_pretrained(path)
    tok.save_pretrained(path)
    # one preprocessor_config.json with both parts' keys, as the released Qwen2.5-Omni checkpoints have
    images = Qwen2VLImageProcessorPil(size={"shortest_edge": 56 * 56, "longest_edge": 112 * 112}).to_dict()
    features = WhisperFeatureExtractor(feature_size=128).to_dict()
    images["image_processor_type"] = "Qwen2VLImageProcessorPil"
    features["feature_extractor_type"] = "WhisperFeatureExtractor"
    (path / "preprocessor_config.json").write_text(json.dumps({**features, **images}, default=_plain), encoding="utf-8")
    return path


def _plain(value):
    return value.tolist() if hasattr(value, "tolist") else str(value)


OV_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"]
OV_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image>\n{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}"
    "{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""LLaVA-OneVision's (Qwen-style) template: `<image>` where each image occurs among the texts."""


def ov_tokenizer():
    """The Qwen-style tokenizer of LLaVA-OneVision, with its `<image>` and `<video>` specials."""
    tok = train_tokenizer(OV_SPECIALS, pad_token="<|endoftext|>", eos_token="<|im_end|>",
                          extra_special_tokens={"image_token": "<image>", "video_token": "<video>"})
    tok.chat_template = OV_TEMPLATE
    return tok


def ov_config(tok, text: dict, vision: dict):
    """LlavaOnevisionConfig: a Qwen2 text model, a SigLIP vision tower, one 'anyres' grid of the tower's size."""
    from transformers import LlavaOnevisionConfig

    text = dict(model_type="qwen2", vocab_size=len(tok), eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"), **text)
    side = vision["image_size"]
    return LlavaOnevisionConfig(text_config=text, vision_config=dict(model_type="siglip_vision_model", **vision),
                                image_token_index=tok.convert_tokens_to_ids("<image>"),
                                video_token_index=tok.convert_tokens_to_ids("<video>"),
                                vision_feature_layer=-1, vision_feature_select_strategy="full",
                                image_grid_pinpoints=[[side, side], [side, 2 * side], [2 * side, side]])


def save_ov_image_processor(path: Path, side: int) -> None:
    """The PIL image processor only: transformers 5's LlavaOnevisionProcessor needs torchvision (video part)."""
    from transformers import LlavaOnevisionImageProcessorPil

    LlavaOnevisionImageProcessorPil(size={"height": side, "width": side}, crop_size={"height": side, "width": side},
                                    image_grid_pinpoints=[[side, side], [side, 2 * side], [2 * side, side]]
                                    ).save_pretrained(path)


def build_llava_onevision(path: Path) -> Path:
    """A tiny random LLaVA-OneVision (Qwen2 + SigLIP, 56 px tower: 16 tokens per crop) with tokenizer,
    chat template and PIL image processor; no processor_config (lvu.models.hf_processors rebuilds it)."""
    import torch
    from transformers import LlavaOnevisionForConditionalGeneration

    tok = ov_tokenizer()
    config = ov_config(tok, dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                 num_key_value_heads=2),
                       dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                            image_size=56, patch_size=14))
    torch.manual_seed(0)
    LlavaOnevisionForConditionalGeneration(config).save_pretrained(path)
    tok.save_pretrained(path)
    save_ov_image_processor(path, 56)
    return path
