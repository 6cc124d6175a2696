"""ocr-match reads frames for real (rapidocr), caches what it read, reasons over timed text, and
beats the random baseline on a small haystack by a wide margin: proof that frames reach models."""

from __future__ import annotations

import asyncio
from collections import Counter

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from lvu.benchmarks.haystack import HaystackBenchmark, generate
from lvu.media.subtitles import load_cues, select_cues
from lvu.media.video import VideoReader
from lvu.models import ocr_match
from lvu.models.base import MODELS
from lvu.models.baselines import RandomChoice
from lvu.models.ocr_match import Evidence, OcrMatch, choose, question_times
from lvu.runs.engine import video_meta
from lvu.types import Frame, Prompt, Subtitle, Text

pytest.importorskip("rapidocr")


def word_frame(word: str | None, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = Image.fromarray(rng.integers(60, 160, size=(216, 384, 3), dtype=np.uint8))
    if word:
        draw = ImageDraw.Draw(img)
        draw.rounded_rectangle((50, 60, 330, 140), radius=8, fill=(245, 245, 235))
        draw.text((70, 75), word, font=ImageFont.load_default(size=44), fill=(20, 20, 20))
    return np.asarray(img)


def mcq(frames: list[Frame], question: str, options: list[str], cues: list[Subtitle] = ()) -> Prompt:
    parts = sorted([*frames, *cues], key=lambda p: p.timestamp if isinstance(p, Frame) else p.start)
    return Prompt(parts=[*parts, Text(text=question)], choices=options, question=question)


def ask(model, prompt: Prompt, sample_id: str = "s") -> str:
    response = asyncio.run(model.generate(prompt, sample_id=sample_id))
    assert response.error is None
    return response.text


def test_reads_a_rendered_word_from_a_frame(tmp_path):
    model = MODELS.get("ocr-match")(cache=str(tmp_path))
    frames = [Frame(image=word_frame(None, 1), timestamp=2.0), Frame(image=word_frame("LANTERN"), timestamp=5.0),
              Frame(image=word_frame("MAGNET", 2), timestamp=30.0)]
    prompt = mcq(frames, "What word is shown on screen at 00:05?", ["MAGNET", "OLIVE", "LANTERN", "PRISM"])
    assert ask(model, prompt) == "C"  # MAGNET is on screen too, but 25 s later
    lines = model.reader.read(frames[1].image)
    assert [ln.text for ln in lines] == ["LANTERN"] and lines[0].score > 0.9


def test_cache_hit_does_not_run_the_engine(tmp_path, monkeypatch):
    image = word_frame("FALCON")
    first = OcrMatch(cache=str(tmp_path)).reader.read(image)
    assert [ln.text for ln in first] == ["FALCON"]
    assert len(list(tmp_path.rglob("*.json"))) == 1

    calls = []

    def counting_engine(threads):
        calls.append(threads)
        return lambda img: pytest.fail("the engine ran although the frame was cached")

    monkeypatch.setattr(ocr_match, "_get_engine", counting_engine)
    fresh = OcrMatch(cache=str(tmp_path)).reader  # new process-like reader: empty memory
    assert fresh.read(image.copy()) == first  # same pixels, another array: a hit
    assert calls == [] and fresh.engine_calls == 0
    with pytest.raises(pytest.fail.Exception):
        fresh.read(word_frame("FALCON", seed=9))  # different pixels: a miss reaches the engine
    assert len(calls) == 1


def test_reasoning_over_timed_text():
    def ev(seen: dict[float, str], cues=()) -> Evidence:
        return Evidence(frames=[(t, [w] if w else []) for t, w in sorted(seen.items())], cues=list(cues))

    words = ["KOALA", "EMBER", "PUFFIN", "NUTMEG"]
    seen = {5: "", 10: "KOALA", 15: "", 20: "EMBER", 25: "KOALA", 30: "", 35: "KOALA", 40: "PUFFIN"}
    assert question_times("at 01:02 and 1:02:03") == [62, 3723]
    assert choose("What word is shown on screen at 00:20?", words, ev(seen))[0] == 1
    # Nothing near 00:31 (KOALA is 4 s away): options seen elsewhere are ruled out, the guess is
    # among the others.
    assert choose("What word is shown at 00:31?", words, ev(seen)) == (None, [3])
    counts = ["1", "2", "3", "4"]
    assert choose('How many times does the word "KOALA" appear?', counts, ev(seen))[0] == 2
    assert choose('How many times does "KOALA" appear?', counts, ev({**seen, 30: "KOALA"}))[0] == 1  # 25-35: one run
    order = ['"PUFFIN" appears before "EMBER"', '"EMBER" appears before "PUFFIN"', '"NUTMEG" appears before "KOALA"']
    assert choose("Which statement is true?", order, ev(seen))[0] == 1
    cues = [(18.0, 22.5, "THE BAKER WAITS NEAR THE OLD MILL"), (36.0, 41.0, "THE BAKER WAITS NEAR THE RED BRIDGE")]
    q = 'Which word is shown while the subtitle "The baker waits near the red bridge." is displayed?'
    assert choose(q, words, ev(seen, cues))[0] == 2  # PUFFIN at 40 s, inside the quoted cue


def test_random_baseline_is_seeded_and_uniform():
    prompt = Prompt(parts=[Text(text="q")], choices=["a", "b", "c", "d"])
    model = RandomChoice()
    letters = [ask(model, prompt, f"id{i}") for i in range(400)]
    assert letters == [ask(RandomChoice(seed=0), prompt, f"id{i}") for i in range(400)]
    assert letters != [ask(RandomChoice(seed=1), prompt, f"id{i}") for i in range(400)]
    assert set(Counter(letters)) == set("ABCD") and min(Counter(letters).values()) > 70
    assert asyncio.run(model.generate(Prompt(parts=[Text(text="open")]), sample_id="x")).error


def evaluate(bench: HaystackBenchmark, models: dict, frames: int) -> dict[str, float]:
    """The pipeline by hand: load -> plan -> frames -> cues -> prompt -> generate -> extract -> score."""
    bench.settings["frames"] = frames
    samples, bad = bench.load()
    assert bad == []
    scores: dict[str, list[float]] = {name: [] for name in models}
    for s in samples:
        plan = bench.plan(s, video_meta(s))
        with VideoReader(s.video.path) as reader:
            batch = reader.get_frames_played_at(plan.timestamps, resize=plan.resize)
        frames_ = [Frame(image=img, timestamp=t) for img, t in zip(batch.data, batch.pts_seconds)]
        cues = select_cues(load_cues(s.subtitles.path), [f.timestamp for f in frames_], plan.subtitle_mode)
        prompt = bench.build_prompt(s, frames_, cues)
        for name, model in models.items():
            response = asyncio.run(model.generate(prompt, sample_id=s.id))
            scores[name].append(bench.score(s, bench.extract(s, response)).value)
    chance = 100 * float(np.mean([1 / len(s.options) for s in samples]))
    return {"chance": chance, **{name: 100 * float(np.mean(v)) for name, v in scores.items()}}


@pytest.mark.slow
def test_ocr_match_beats_random_on_a_small_haystack(tmp_path):
    data = generate(tmp_path / "hay", seed=0, n_videos=3, scale=0.35)
    bench = HaystackBenchmark(data=str(data))
    models = {"ocr": OcrMatch(cache=str(tmp_path / "ocr")), "random": RandomChoice()}
    dense = evaluate(bench, models, frames=24)
    assert dense["ocr"] >= dense["random"] + 25, dense
    assert dense["ocr"] >= dense["chance"] + 25, dense
    sparse = evaluate(bench, {"ocr": models["ocr"]}, frames=6)
    assert sparse["ocr"] < dense["ocr"], (sparse, dense)  # fewer frames, less evidence
