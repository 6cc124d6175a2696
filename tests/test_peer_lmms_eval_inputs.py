"""Peer-code parity of the inputs (issue 20): under compat=lmms-eval, lvu's prompt text, frame
indices and subtitle lines are the ones lmms-eval 0.7.3's own code produces for the same question
and video: its task `doc_to_text` functions (subtitle selection included), the frame loaders of its
`_i` tasks (LongVideoBench `load_video`, Neptune `_sample_video_frames`, decord underneath) and the
model-side reader the other tasks leave frames to (models/model_utils/load_video.py
`load_video_stream`, PyAV). Loaded by path as tests/lmms_eval_peer.py says; the one stand-in here
records which frame indices those loaders ask decord / PyAV for.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import av
import decord
import pytest

from lmms_eval_peer import Peer
from lvu.benchmarks.longvideobench import LongVideoBench, LongVideoBenchFrames
from lvu.benchmarks.lvbench import LvbenchBenchmark
from lvu.benchmarks.mlvu import Mlvu
from lvu.benchmarks.neptune import Neptune
from lvu.benchmarks.videomme import VideoMME, VideoMMESub
from lvu.media.testing import make_video
from lvu.runs.engine import video_meta
from lvu.types import Frame, Text

OPTIONS = ["A cat", "Two dogs", "Three birds", "Nothing", "A horse"]
FONT = '<font color="white" size=".72c">{}</font>'
SRT = "".join(f"{i + 1}\n00:00:{a:02d},{ms:03d} --> 00:00:{b:02d},{ms:03d}\n{FONT.format(text) if font else text}\n\n"
              for i, (a, b, ms, text, font) in enumerate([
                  (0, 1, 0, "first cue", True), (1, 2, 500, "second cue", True), (3, 3, 900, "short cue", True),
                  (4, 6, 0, "plain text, no font tag", False), (6, 8, 250, "third cue", True),
                  (9, 9, 950, "last cue", True)]))


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    """10 s at 10 fps: 100 frames."""
    return make_video(tmp_path_factory.mktemp("peer_clip") / "clip.mp4", seconds=10, fps=10, gop=10,
                      size=(64, 48)).path


@pytest.fixture()
def peer(monkeypatch, tmp_path) -> Peer:
    return Peer(monkeypatch, tmp_path / "hf_home")


def text_of(prompt) -> str:
    texts = [p.text for p in prompt.parts if isinstance(p, Text)]
    assert len(texts) == 1
    return texts[0]


def indices_of(times: list[float], fps: float) -> list[int]:
    return [round(t * fps) for t in times]


# ---- frames: the model-side reader (Video-MME, LVBench, MLVU, LongVideoBench _v) ----------------


def reader_indices(peer: Peer, monkeypatch, path: Path, n: int) -> list[int]:
    """The indices lmms-eval's default PyAV path (`read_video` -> `load_video_stream`) decodes."""
    loader = peer.module("models/model_utils/load_video.py")
    asked = []
    monkeypatch.setattr(loader, "record_video_length_stream", lambda container, indices: asked.extend(indices) or [])
    with av.open(str(path)) as container:
        loader.load_video_stream(container, num_frm=n)
    return [int(i) for i in asked]


@pytest.mark.parametrize("n", [8, 32, 150])
def test_model_reader_frames(peer, monkeypatch, tmp_path, clip, n):
    theirs = reader_indices(peer, monkeypatch, clip, n)
    root = tmp_path / "vmme"
    (root / "data").mkdir(parents=True)
    shutil.copy(clip, root / "data" / "vidX.mp4")
    (root / "videomme.jsonl").write_text(json.dumps(videomme_doc("vidX")) + "\n")
    sample = VideoMME(data=str(root / "videomme.jsonl")).load()[0][0]
    meta = video_meta(sample)
    fps = meta.rate_and_count()[0]
    for bench in (VideoMME(compat="lmms-eval", frames=n), LvbenchBenchmark(compat="lmms-eval", frames=n),
                  Mlvu(compat="lmms-eval", frames=n)):
        assert indices_of(bench.plan(sample, meta).timestamps, fps) == theirs, bench.name
    lvb = LongVideoBenchFrames(compat="lmms-eval", frames=n)
    assert lvb.frame_indices(sample, meta)[0] == theirs


# ---- Video-MME -----------------------------------------------------------------------------------


def videomme_doc(vid: str) -> dict:
    return {"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "Law",
            "url": f"https://www.youtube.com/watch?v={vid}", "videoID": vid, "question_id": "001-1",
            "task_type": "OCR Problems", "question": "What is written on the sign?",
            "options": [f"{L}. {o}." for L, o in zip("ABCD", OPTIONS)], "answer": "C"}


@pytest.mark.parametrize("frame_num", [32, 4, -1])
def test_videomme_prompts_and_subtitles(peer, tmp_path, clip, frame_num):
    cache = tmp_path / "hf_home" / "videomme"  # where lmms-eval looks: $HF_HOME/videomme/{data,subtitle}
    (cache / "data").mkdir(parents=True)
    (cache / "subtitle").mkdir()
    shutil.copy(clip, cache / "data" / "vidSub.mp4")
    (cache / "subtitle" / "vidSub.srt").write_text(SRT)
    doc = videomme_doc("vidSub")
    (cache / "rows.jsonl").write_text(json.dumps(doc) + "\n" + json.dumps({**videomme_doc("vidNone"),
                                                                           "question_id": "002-1"}) + "\n")
    (cache / "data" / "vidNone.mp4").symlink_to(clip)
    plain = peer.task("videomme", "videomme.yaml")
    with_subs = peer.task("videomme", "videomme_w_subtitle.yaml")
    kwargs = {**with_subs.kwargs, "frame_num": frame_num}
    where = {"data": str(cache / "rows.jsonl"), "video_dir": str(cache / "data"),
             "subtitle_dir": str(cache / "subtitle")}
    for compat in ("lmms-eval", "lmms-eval@0.7.1", "lmms-eval@0.6"):  # the prompts are the same in 0.6-0.7.3
        sample, no_srt = VideoMME(**where, compat=compat).load()[0]
        assert VideoMME(compat=compat).prompt_texts(sample, None) == [plain.doc_to_text(doc)]
        bench = VideoMMESub(**where, compat=compat, subtitle_grid=frame_num)
        sample, no_srt = bench.load()[0]
        for s, d in ((sample, doc), (no_srt, {**doc, "videoID": "vidNone"})):
            bench.plan(s, video_meta(s))
            assert text_of(bench.build_prompt(s, [], [])) == with_subs.fn("doc_to_text")(d, dict(kwargs))
    gemini = VideoMMESub(**where, compat="lmms-eval", subtitles="all")
    sample = gemini.load()[0][0]
    gemini.plan(sample, video_meta(sample))
    full = with_subs.fn("doc_to_text")(doc, {"gemini_api_flag": "full subtitle"})
    assert text_of(gemini.build_prompt(sample, [], [])) == full and "third cue" in full


# ---- LVBench, MLVU, Neptune: prompt text ---------------------------------------------------------


def test_lvbench_prompt(peer, tmp_path):
    task = peer.task("lvbench", "lvbench.yaml")
    question = "What year appears?\n" + "\n".join(f"({L}) {o}" for L, o in zip("ABCD", OPTIONS))
    info = {"duration_minutes": 61.5, "fps": 30.0, "resolution": {"width": 640, "height": 360}}
    qa = {"uid": "7", "question": question, "answer": "B", "question_type": ["reasoning"], "time_reference": ""}
    (tmp_path / "video_info.meta.jsonl").write_text(json.dumps({"key": "k1", "type": "cartoon", "qa": [qa],
                                                                "video_info": info}) + "\n")
    doc = {"key": "k1", "type": "cartoon", **qa, "video_path": "k1.mp4"}
    for compat in ("lmms-eval", "lmms-eval@0.7.1"):
        bench = LvbenchBenchmark(data=str(tmp_path / "video_info.meta.jsonl"), compat=compat)
        sample = bench.load()[0][0]
        prompt = bench.build_prompt(sample, [Frame(timestamp=0.0)], [])
        assert text_of(prompt) == task.doc_to_text(doc) and prompt.max_tokens == task.config["generation_kwargs"][
            "max_new_tokens"]


@pytest.mark.parametrize("split", ["dev", "test"])
def test_mlvu_prompt(peer, tmp_path, split):
    task = peer.task("mlvu", f"mlvu_{split}.yaml")
    record = {"video": "count_1.mp4", "duration": 30.0, "question": "How many times?", "candidates": OPTIONS[:4],
              "answer": "Two dogs", "question_type": "count"}
    if split == "dev":
        (tmp_path / "MLVU" / "json").mkdir(parents=True)
        (tmp_path / "MLVU" / "json" / "4_count.json").write_text(json.dumps([record]))
    else:
        (tmp_path / "test_mcq_gt.json").write_text(json.dumps([{**record, "question_id": "count_1"}]))
    bench = Mlvu(data=str(tmp_path), split=split, compat="lmms-eval")
    sample = bench.load()[0][0]
    lines = "\n".join(f"({L}) {o}" for L, o in zip("ABCD", OPTIONS))
    doc = {"video_name": "count_1.mp4", "question": f"How many times?\n{lines}", "answer": "B", "task_type": "count"}
    prompt = bench.build_prompt(sample, [Frame(timestamp=0.0)], [])
    assert text_of(prompt) == task.doc_to_text(doc) and prompt.system is None and prompt.assistant_prefix is None
    assert prompt.max_tokens == task.config["generation_kwargs"]["max_new_tokens"]


def neptune_doc() -> dict:
    return {"key": "nepVid/1", "video_id": "nepVid", "question": "  What happens first?  ",
            **{f"answer_choice_{k}": f" {o} " for k, o in enumerate(OPTIONS)}, "answer_id": 2,
            "answer": OPTIONS[2], "question_type": "Temporal Ordering", "video_path": "nepVid.mp4"}


def test_neptune_prompt_and_frames(peer, monkeypatch, tmp_path, clip):
    task = peer.task("neptune", "neptune_full_i.yaml")
    (tmp_path / "videos").mkdir()
    shutil.copy(clip, tmp_path / "videos" / "nepVid.mp4")
    (tmp_path / "neptune_full.json").write_text(json.dumps([neptune_doc()]))
    bench = Neptune(data=str(tmp_path / "neptune_full.json"), video_dir=str(tmp_path / "videos"), compat="lmms-eval")
    sample = bench.load()[0][0]
    prompt = bench.build_prompt(sample, [Frame(timestamp=0.0)], [])
    assert text_of(prompt) == task.doc_to_text(neptune_doc())
    assert prompt.max_tokens == task.config["generation_kwargs"]["max_new_tokens"]
    asked = record_decord(monkeypatch)
    task.utils._sample_video_frames(str(clip), max_num_frames=task.kwargs["max_num_frames"])
    meta = video_meta(sample)
    assert indices_of(bench.plan(sample, meta).timestamps, meta.rate_and_count()[0]) == asked[0]


def record_decord(monkeypatch, module=decord) -> list[list[int]]:
    """Make `module.VideoReader` note the indices each get_batch asks for (the stand-in)."""
    asked: list[list[int]] = []
    real = module.VideoReader

    class Recording(real):
        def get_batch(self, indices):
            asked.append([int(i) for i in indices])
            return super().get_batch(indices)

    monkeypatch.setattr(module, "VideoReader", Recording)
    return asked


# ---- LongVideoBench: _v and _i prompts, _i frames and interleaved subtitles -----------------------

LVB_SUBS = [{"timestamp": [0.0, 1.5], "text": " Hello there."}, {"timestamp": [2.2, 2.6], "text": " Quick."},
            {"timestamp": [6.0, 8.0], "text": " Long one."}, {"timestamp": [8.5, None], "text": " The end."}]


def test_longvideobench_prompts_and_frames(peer, monkeypatch, tmp_path, clip):
    cache = tmp_path / "hf_home" / "datasets" / "longvideobench"  # its cache_dir, videos/ and subtitles/
    (cache / "videos").mkdir(parents=True)
    (cache / "subtitles").mkdir()
    shutil.copy(clip, cache / "videos" / "lvbA.mp4")
    (cache / "subtitles" / "lvbA_en.json").write_text(json.dumps(LVB_SUBS))
    record = {"video_id": "lvbA", "question": "What happened?", "id": "lvbA_0", "candidates": OPTIONS[:4],
              "correct_choice": 1, "question_category": "T2E", "level": "L1-Perception", "duration_group": 15,
              "duration": 10.0, "video_path": "lvbA.mp4", "subtitle_path": "lvbA_en.json",
              "starting_timestamp_for_subtitles": 0.0, "topic_category": "KS", "position": [1], "type": "local"}
    (cache / "lvb_val.json").write_text(json.dumps([record]))
    doc = {**{k: v for k, v in record.items() if k != "candidates"},
           **{f"option{k}": OPTIONS[k] if k < 4 else "N/A" for k in range(5)}}
    v_task = peer.task("longvideobench", "longvideobench_val_v.yaml")
    i_task = peer.task("longvideobench", "longvideobench_val_i.yaml")
    frames_only = LongVideoBenchFrames(data=str(cache), compat="lmms-eval")
    sample = frames_only.load()[0][0]
    assert text_of(frames_only.build_prompt(sample, [], [])) == v_task.doc_to_text(doc)
    interleaved = LongVideoBench(data=str(cache), compat="lmms-eval")
    assert interleaved.settings["frames"] == i_task.config["dataset_kwargs"].get("max_num_frames", 16)
    assert text_of(interleaved.build_prompt(sample, [], [])) == i_task.doc_to_text(doc)
    asked = record_decord(monkeypatch, i_task.utils)
    i_task.fn("doc_to_visual")(doc)
    assert interleaved.frame_indices(sample, video_meta(sample))[0] == asked[0]
