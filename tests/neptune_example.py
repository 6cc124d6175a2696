"""The README's offline `lvu build neptune` example: four small generated videos and a scripted
stand-in LLM, so the whole pipeline runs on a laptop with no model and no network.

    export PYTHONPATH=tests
    python tests/neptune_example.py neptune-videos          # harbor, valley (+ valley.json), slide, presenter
    lvu build neptune neptune-videos -o neptune-build --captioner ocr --llm neptune_example:ScriptedLLM

`ScriptedLLM` is an lvu model (a `module:Class` plugin, docs/plugins.md) that answers every Neptune
prompt in the paper's format from its input alone (tests/neptune_replies.py: the same replies the
fake OpenAI-compatible server gives in the tests). It is a stand-in to see the pipeline work, not a
model: its questions are about the on-screen text and the order of the sections. Swap in a real one
with `--llm openai --llm-arg model=... --llm-arg base_url=...` (any lvu backend).
"""

from __future__ import annotations

import base64
import io
import json
import sys
from pathlib import Path

from lvu.models.base import Model
from lvu.types import Prompt, Response

SPEECH = "Welcome to the harbor. The boats leave at dawn. Then we climb the mountain."


class ScriptedLLM(Model):
    """Neptune's prompts answered by tests/neptune_replies.ScriptedReplies (frames: their colour)."""

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        from neptune_replies import scripted_reply

        content = [{"type": "image_url", "image_url": {"url": _png(f.image)}} for f in prompt.frames if f.image is not None]
        content.append({"type": "text", "text": prompt.text})
        text = scripted_reply({"messages": [{"role": "user", "content": content}]})
        return Response(text=text, usage={"prompt_tokens": len(prompt.text) // 4, "completion_tokens": len(text) // 4})


def _png(image) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def write_videos(folder: str | Path) -> Path:
    """harbor: 3 shots with speech (Whisper transcribes it); valley: 3 shots, the first topic coming
    back, no audio, a title sidecar; slide: a still picture (the static filter drops it);
    presenter: a face filling the frame (the talking-head filter drops it). ~16-18 s each."""
    from build_videos import ShotSpec, multi_shot_video, static_video, talking_head_video

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    multi_shot_video(folder / "harbor.mp4", speech=SPEECH)
    multi_shot_video(folder / "valley.mp4", shots=[ShotSpec(6.0, (230, 210, 40), "SUNNY FIELD"),
                                                   ShotSpec(6.0, (110, 40, 150), "NIGHT MARKET"),
                                                   ShotSpec(6.0, (240, 140, 30), "SUNNY FIELD")])
    (folder / "valley.json").write_text(json.dumps({"title": "Valley days", "description": "A field and a market."}))
    static_video(folder / "slide.mp4")
    talking_head_video(folder / "presenter.mp4")
    return folder


if __name__ == "__main__":
    print(write_videos(sys.argv[1] if len(sys.argv) > 1 else "neptune-videos"))
