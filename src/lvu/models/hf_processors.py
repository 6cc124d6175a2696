"""Processors rebuilt without torchvision (transformers 5 gives every video processor, hence the
`AutoProcessor` of every family with a video part, a hard torchvision dependency).

`rebuild_processor(model_id, model_type, trust, extra)` returns, for LLaVA-OneVision, its own
`LlavaOnevisionProcessor` made of the checkpoint's tokenizer, its PIL image processor
(`LlavaOnevisionImageProcessorPil`, from preprocessor_config.json) and its chat template, with no
video processor: images (frames) are expanded exactly as the full processor does — anyres tokens
for a single image, `num_image_tokens + 1` per image when there are several. Other families: None.
"""

from __future__ import annotations

import json
from typing import Any

REBUILT_TYPES = ("llava_onevision",)


def rebuild_processor(model_id: str, model_type: str, trust: bool, extra: dict[str, Any]) -> Any | None:
    """The checkpoint's processor without its video part, or None when lvu has no recipe for `model_type`."""
    if model_type == "llava_onevision":
        return _llava_onevision(model_id, trust, extra)
    return None


def _llava_onevision(model_id: str, trust: bool, extra: dict[str, Any]) -> Any:
    from transformers import AutoConfig, AutoTokenizer, LlavaOnevisionImageProcessorPil, LlavaOnevisionProcessor

    class ImageOnlyProcessor(LlavaOnevisionProcessor):
        """LlavaOnevisionProcessor with video_processor=None: ProcessorMixin type-checks every part by
        looking its class up in the video-processor mapping, which raises without torchvision."""

        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name == "video_processor" and argument is None:
                return type(None)
            return super().check_argument_for_proper_class(argument_name, argument)

    config = AutoConfig.from_pretrained(model_id, trust_remote_code=trust)
    tokenizer = AutoTokenizer.from_pretrained(model_id, trust_remote_code=trust)
    images = LlavaOnevisionImageProcessorPil.from_pretrained(model_id, **extra)
    saved = _processor_config(model_id)
    vision = config.vision_config
    side = int(vision.image_size) // int(vision.patch_size)
    chat_template = saved.pop("chat_template", None) or tokenizer.chat_template
    if chat_template is None:
        chat_template = chat_template_file(model_id)
    return ImageOnlyProcessor(
        image_processor=images, tokenizer=tokenizer, video_processor=None, chat_template=chat_template,
        # the published processor_config.json, else what the model's config implies (SigLIP: no CLS token)
        num_image_tokens=saved.get("num_image_tokens", side * side),
        vision_feature_select_strategy=saved.get("vision_feature_select_strategy",
                                                 config.vision_feature_select_strategy),
        vision_aspect_ratio=saved.get("vision_aspect_ratio", getattr(config, "vision_aspect_ratio", "anyres_max_9")))


def _processor_config(model_id: str) -> dict[str, Any]:
    """processor_config.json of a local or cached checkpoint ({} when there is none)."""
    from transformers.utils import cached_file

    try:
        path = cached_file(model_id, "processor_config.json", _raise_exceptions_for_missing_entries=False)
    except Exception:
        return {}
    if not path:
        return {}
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {k: v for k, v in data.items() if k in ("num_image_tokens", "vision_feature_select_strategy",
                                                   "vision_aspect_ratio", "chat_template")}


def chat_template_file(model_id: str) -> str | None:
    """A chat template shipped beside the processor (chat_template.jinja / .json) when the
    tokenizer has none — older Qwen2-VL repos keep it only there."""
    import json

    from transformers.utils import cached_file

    for name in ("chat_template.jinja", "chat_template.json"):
        path = cached_file(model_id, name, _raise_exceptions_for_missing_entries=False)
        if path:
            text = open(path, encoding="utf-8").read()
            return json.loads(text)["chat_template"] if name.endswith(".json") else text
    return None
