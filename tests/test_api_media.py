"""lvu.api's video tools: `extract_frames` (`lvu frames`), `transcribe_to_srt` (`lvu asr`), the frame
cache's `cache_info` / `prune_cache` / `warm_cache` (`lvu cache ...`) and `bench_decode` — each
returning what its command prints."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lvu.api import (FramesResult, PruneResult, WarmResult, bench_decode, cache_info, extract_frames, prune_cache,
                     transcribe_to_srt, warm_cache)
from lvu.api.media import CacheInfo
from lvu.cli import app
from lvu.errors import LvuError
from lvu.media import asr
from lvu.media.subtitles import load_cues
from lvu.media.testing import make_video
from lvu.types import Subtitle


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "lvu-cache"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Two short videos and q.jsonl: four questions on them, one on a video that is nowhere."""
    root = tmp_path_factory.mktemp("media")
    for name, seconds in (("a.mp4", 2), ("b.mp4", 3)):  # two contents: two cache entries
        make_video(root / name, seconds=seconds, fps=4, gop=4, size=(64, 48))
    lines = [{"id": f"q{i}", "video": "a.mp4" if i % 2 else "b.mp4", "question": f"Question {i}?",
              "options": ["w", "x"], "answer": 0} for i in range(4)]
    lines.append({"id": "gone", "video": "gone.mp4", "question": "?", "options": ["w", "x"], "answer": 0})
    (root / "q.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root


def test_extract_frames_returns_the_index_lvu_frames_prints(folder, tmp_path):
    cli = CliRunner().invoke(app, ["frames", str(folder / "a.mp4"), "-o", str(tmp_path / "cli"), "--plan", "uniform:4"])
    assert cli.exit_code == 0, cli.output

    result = extract_frames(folder / "a.mp4", tmp_path / "api", "uniform:4")
    assert isinstance(result, FramesResult) and result.n_frames == 4
    assert result.index == tmp_path / "api" / "frames.json" and len(list((tmp_path / "api").glob("*.jpg"))) == 4
    assert cli.output.strip() == f"wrote 4 frames and {tmp_path / 'cli' / 'frames.json'}"
    with pytest.raises(LvuError, match="--resize"):
        extract_frames(folder / "a.mp4", tmp_path / "bad", resize=0)


def test_cache_info_prune_and_warm_return_what_lvu_cache_prints(folder, tmp_path):
    cache_dir = tmp_path / "frames"
    data = str(folder / "q.jsonl")
    cli = CliRunner().invoke(app, ["cache", "warm", "-b", "jsonl", "--data", data, "--frames", "3", "--workers", "1",
                                   "--cache-dir", str(cache_dir)])
    assert cli.exit_code == 1, cli.output  # the missing video is an error line

    warmed = warm_cache("jsonl", settings={"data": data, "frames": 3}, workers=1, cache_dir=cache_dir, progress=False)
    assert isinstance(warmed, WarmResult) and not warmed.interrupted
    assert (warmed.videos, warmed.frames, warmed.cache_root) == (2, 6, cache_dir)
    assert len(warmed.errors) == 1 and "gone.mp4" in warmed.errors[0]
    assert (f"{warmed.videos} videos, {warmed.frames} frames in" in cli.output
            and f"1 errors → {cache_dir}" in cli.output.replace("\n", ""))

    info = cache_info(cache_dir)
    assert isinstance(info, CacheInfo) and info.root == cache_dir and info.entries == 2 and info.bytes > 0
    shown = CliRunner().invoke(app, ["cache", "info", "--cache-dir", str(cache_dir)]).output
    assert re.sub(r"\s+", " ", shown).strip().startswith(f"{cache_dir}: 2 entries, ")

    pruned = prune_cache(cache_dir, max_bytes=0)
    assert pruned == PruneResult(removed=2, freed=info.bytes) and cache_info(cache_dir).entries == 0
    again = CliRunner().invoke(app, ["cache", "prune", "--all", "--cache-dir", str(cache_dir)])
    assert again.exit_code == 0 and again.output.strip() == "removed 0 entries, freed 0.0 B"


def test_transcribe_to_srt_writes_the_cues_lvu_asr_counts(folder, tmp_path, monkeypatch):
    model = tmp_path / "fake-whisper"  # passes the model check; Whisper itself is stubbed
    model.mkdir()
    (model / "model.bin").write_bytes(b"not really weights")
    (model / "config.json").write_text("{}")
    monkeypatch.setenv(asr.MODEL_ENV, str(model))
    cues = [Subtitle(text="hello there", start=0.5, end=1.25), Subtitle(text="general", start=1.5, end=1.75)]
    monkeypatch.setattr(asr, "_run_whisper", lambda *args: list(cues))

    out = tmp_path / "a.srt"
    assert transcribe_to_srt(folder / "a.mp4", out) == 2
    assert load_cues(out) == cues
    cli = CliRunner().invoke(app, ["asr", str(folder / "a.mp4"), "-o", str(tmp_path / "cli.srt")])
    assert cli.exit_code == 0 and cli.output.strip() == f"wrote 2 cues to {tmp_path / 'cli.srt'}"


def test_bench_decode_is_the_scripts_exit_code(capsys):
    with pytest.raises(SystemExit) as stop:  # argparse: --help prints and exits 0
        bench_decode(["--help"])
    assert stop.value.code == 0 and "lvu bench decode" in capsys.readouterr().out
