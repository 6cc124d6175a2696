"""lvu's native JSONL sample format and the generic `jsonl` benchmark."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from lvu.benchmarks.base import BENCHMARKS
from lvu.benchmarks.jsonl import (
    PROMPT_INSTRUCTION,
    JsonlBenchmark,
    read_samples,
    write_samples,
)
from lvu.errors import DataError, LvuError
from lvu.types import Frame, Response, Sample, Subtitle, SubtitleRef, Text, VideoMeta, VideoRef

DOC = Path(__file__).resolve().parents[1] / "docs" / "jsonl-format.md"


def sample(i: int = 0, **kw) -> Sample:
    fields = dict(id=f"q{i}", benchmark="mine", video=VideoRef(path="videos/a.mp4", duration=60.0),
                  question="Which colour is the car?", options=["red", "blue", "green", "grey"], answer=1)
    return Sample(**{**fields, **kw})


def test_round_trip_keeps_paths_relative_to_the_file(tmp_path):
    folder = tmp_path / "bench"
    outside = tmp_path / "elsewhere.mp4"
    samples = [
        sample(0, video=VideoRef(path=str(folder / "videos" / "a.mp4"), duration=60.0),
               subtitles=SubtitleRef(path=str(folder / "subs" / "a.srt"), offset=1.5)),
        sample(1, video=VideoRef(path=str(outside)), labels={"cat": ["x", "y"]}, extra={"k": [1, 2]}),
        sample(2, options=[], answer="a red car"),
    ]
    path = write_samples(folder / "b.jsonl", samples)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0]["video"]["path"] == "videos/a.mp4"
    assert records[0]["subtitles"] == {"path": "subs/a.srt", "offset": 1.5}
    assert records[1]["video"]["path"] == str(outside)  # outside the folder: kept absolute
    assert records[2] == samples[2].model_dump(mode="json")  # the format is Sample.model_dump()

    moved = tmp_path / "moved"
    folder.rename(moved)
    loaded, bad = read_samples(moved / "b.jsonl")
    assert bad == []
    assert loaded[0].video.path == str(moved / "videos" / "a.mp4")
    assert loaded[0].subtitles.path == str(moved / "subs" / "a.srt")
    assert [s.model_dump(exclude={"video", "subtitles"}) for s in loaded] == \
           [s.model_dump(exclude={"video", "subtitles"}) for s in samples]


def test_malformed_lines_become_bad_records_naming_file_and_line(tmp_path):
    good = sample(0).model_dump_json()
    lines = [
        good,                                                   # 1 ok
        '{"id": "broken", "question": ',                       # 2 not JSON
        "",                                                     # 3 blank: skipped
        '["a", "list"]',                                        # 4 not an object
        json.dumps({"id": "nq", "video": "a.mp4"}),             # 5 no question
        sample(5, answer=7).model_dump_json(),                  # 6 answer out of range
        sample(0).model_dump_json(),                            # 7 repeated id
        json.dumps({"id": "short", "video": "a.mp4", "question": "Q?"}),  # 8 ok (shorthand, defaults)
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(lines) + "\n")
    samples, bad = read_samples(path)
    assert [s.id for s in samples] == ["q0", "short"]
    assert samples[1].benchmark == "mine" and samples[1].video.path == str(tmp_path / "a.mp4")
    assert [b.id for b in bad] == [f"{path}:{n}" for n in (2, 4, 5, 6, 7)]
    for b in bad:
        assert b.error.startswith(f"{b.id}: ") and " — " in b.error and "\n" not in b.error
    errors = {b.id.rsplit(":", 1)[1]: b.error for b in bad}
    assert "not valid JSON" in errors["2"]
    assert "question" in errors["5"]
    assert "answer 7" in errors["6"] and "0..3" in errors["6"]
    assert "repeats line 1" in errors["7"]


def test_missing_file_is_one_line_data_error(tmp_path):
    with pytest.raises(DataError, match=r"nowhere\.jsonl: file not found — "):
        read_samples(tmp_path / "nowhere.jsonl")


def test_documented_example_line_is_a_valid_sample(tmp_path):
    example = next(line for line in DOC.read_text().splitlines() if line.startswith('{"id"'))
    (tmp_path / "doc.jsonl").write_text(example + "\n")
    samples, bad = read_samples(tmp_path / "doc.jsonl")
    assert bad == [] and len(samples) == 1
    assert samples[0].options[samples[0].answer] == "HAMMER"


def test_benchmark_settings_and_plan():
    assert BENCHMARKS.get("jsonl") is JsonlBenchmark
    with pytest.raises(LvuError, match="needs its sample file: --data"):
        JsonlBenchmark().load()
    with pytest.raises(LvuError, match="frames='many'"):
        JsonlBenchmark(data="x.jsonl", frames="many")
    with pytest.raises(LvuError, match="subtitles='sometimes'"):
        JsonlBenchmark(data="x.jsonl", subtitles="sometimes")
    bench = JsonlBenchmark(data="x.jsonl", frames=4, resize=224)
    plan = bench.plan(sample(subtitles=SubtitleRef(path="a.srt")), VideoMeta(10.0))
    assert plan.timestamps == [1.25, 3.75, 6.25, 8.75]
    assert plan.subtitle_mode == "interleave" and plan.resize == 224
    # the protocol's mode either way: without a file the engine has no cues, unless --asr transcribes
    assert bench.plan(sample(), VideoMeta(10.0)).subtitle_mode == "interleave"
    assert JsonlBenchmark(data="x.jsonl", subtitles="none").plan(sample(), VideoMeta(10.0)).subtitle_mode == "none"


def test_prompt_is_interleaved_parts_then_the_pinned_question_text():
    bench = JsonlBenchmark(data="x.jsonl")
    frames = [Frame(image=np.zeros((4, 4, 3), np.uint8), timestamp=t) for t in (1.0, 5.0)]
    cues = [Subtitle(text="hello", start=2.0, end=3.0)]
    prompt = bench.build_prompt(sample(), frames, cues)
    assert [p.kind for p in prompt.parts] == ["frame", "subtitle", "frame", "text"]
    assert prompt.parts[-1] == Text(text=(
        "Which colour is the car?\n(A) red\n(B) blue\n(C) green\n(D) grey\n"
        "Answer with the option's letter from the given choices directly."
    ))
    assert PROMPT_INSTRUCTION == "Answer with the option's letter from the given choices directly."
    assert prompt.choices == ["red", "blue", "green", "grey"]
    assert prompt.question == "Which colour is the car?"
    open_prompt = bench.build_prompt(sample(options=[], answer="red"), frames, [])
    assert open_prompt.parts[-1].text == "Which colour is the car?\nAnswer the question briefly."


@pytest.mark.parametrize("reply, value, score", [
    ("B", 1, 1.0), ("(B) blue", 1, 1.0), ("The answer is C.", 2, 0.0), ("no idea", None, 0.0),
])
def test_extract_and_score_multiple_choice(reply, value, score):
    bench = JsonlBenchmark(data="x.jsonl")
    s = sample()
    prediction = bench.extract(s, Response(text=reply))
    assert prediction.value == value
    result = bench.score(s, prediction)
    assert result.value == score and result.correct is (score == 1.0)
    assert re.search(r"answer B", result.explanation)


def test_open_ended_exact_match_after_normalising():
    bench = JsonlBenchmark(data="x.jsonl")
    s = sample(options=[], answer="The red car")
    assert bench.score(s, bench.extract(s, Response(text="  red car! "))).value == 1.0
    assert bench.score(s, bench.extract(s, Response(text="a blue car"))).value == 0.0
    hidden = bench.score(sample(answer=None), bench.extract(sample(), Response(text="B")))
    assert hidden.counted is False
