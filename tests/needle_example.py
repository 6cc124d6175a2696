"""The README's `lvu build needle` example input: a 2-minute background video (a slowly panning
colour field, no text in it, an SRT beside it) and six text needles.

    python tests/needle_example.py DIR   # DIR/background.mp4, DIR/background.srt, DIR/needles.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import av
import numpy as np
from PIL import Image

from lvu.media.encode import add_h264_stream
from lvu.media.subtitles import srt_text

WORDS = ("MANGO", "CEDAR", "LOTUS", "VELVET", "QUARTZ", "FALCON")
SIZE, FPS, SECONDS = (320, 180), 10, 120


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    w, h = SIZE
    base = np.random.default_rng(0).uniform(40, 170, size=(6, 10, 3)).astype(np.uint8)
    texture = np.asarray(Image.fromarray(base).resize((2 * w, 2 * h), Image.BICUBIC))
    with av.open(str(folder / "background.mp4"), "w", format="mp4") as out:
        stream = add_h264_stream(out, w, h, FPS, gop=2 * FPS)
        for i in range(SECONDS * FPS):
            t = i / FPS
            x, y = int(w / 2 * (1 + np.sin(t / 9))), int(h / 2 * (1 + np.sin(t / 7)))
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(texture[y:y + h, x:x + w]), format="rgb24")
            frame.pts = i
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    cues = [(float(t), t + 3.0, f"The narrator describes minute {t // 60} second {t % 60}.") for t in range(2, SECONDS - 3, 10)]
    (folder / "background.srt").write_text(srt_text(cues), encoding="utf-8")
    (folder / "needles.jsonl").write_text("".join(json.dumps({"text": word, "seconds": 2}) + "\n" for word in WORDS))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "needle-example"))
