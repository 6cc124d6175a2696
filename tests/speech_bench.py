"""A generated benchmark whose answers are only in the audio: each video's frames are a plain grey
picture (nothing to read), and eSpeak NG says "The secret word is <word>." in its audio track.

    data = speech_benchmark(tmp_path)          # lvu JSONL: one 4-way question per video
    lvu run -b jsonl --data DATA -m ocr-match                # frames only: a guess
    lvu run -b jsonl --data DATA -m ocr-match --audio whole  # hears the word (Whisper)

The words are ones Whisper tiny.en transcribes from eSpeak's voice; the correct option's position
rotates, so a letter bias cannot score. Needs `espeakng-loader` (offline eSpeak NG).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

WORDS = ("banana", "camera", "orange", "guitar", "rocket", "yellow", "purple", "kitchen")
QUESTION = "Which word is spoken in the video?"
SPEECH_START = 0.5
"""Seconds of video before the voice starts."""
SECONDS = 4.0


def grey(_: int) -> np.ndarray:
    return np.full((48, 64, 3), 128, np.uint8)


def speech_benchmark(root: Path, words: tuple[str, ...] = WORDS) -> Path:
    """Write the videos and `speech.jsonl` under `root`; return the JSONL's path."""
    from lvu.media.testing import make_video_with_audio, speak

    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, word in enumerate(words):
        samples, rate = speak(f"The secret word is {word}.")
        video = make_video_with_audio(root / f"spoken_{word}", samples, rate, audio_start=SPEECH_START,
                                      seconds=SECONDS, draw=grey)
        decoys = [w for w in words if w != word][i % 3: i % 3 + 3]
        options = list(decoys)
        options.insert(i % 4, word)  # the answer's position rotates: A, B, C, D, A...
        lines.append({"id": f"say-{word}", "video": video.name, "question": QUESTION, "options": options,
                      "answer": i % 4, "labels": {"modality": "audio-only"}})
    path = root / "speech.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path
