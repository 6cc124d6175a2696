"""The `lvu` command as a user meets it: exit codes, one-line errors, results commands."""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.media.testing import make_video
from lvu.types import Sample, SubtitleRef, VideoRef


def lvu(*args: str, cwd: Path | None = None, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "lvu.cli", *args], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.fixture()
def mixed_data(tmp_path: Path) -> Path:
    """A JSONL benchmark with one good sample and every kind of bad input."""
    make_video(tmp_path / "good.mp4", seconds=4, fps=10, gop=10)
    (tmp_path / "corrupt.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"garbage" * 100)
    (tmp_path / "good.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nhello there\n")
    (tmp_path / "broken.srt").write_bytes(b"\xff\xfe\x00 this is not a subtitle file at all -->")
    opts = ["red", "green", "blue", "yellow"]

    def sample(i: str, video: str, subs: str | None = None) -> str:
        s = Sample(id=i, benchmark="jsonl", video=VideoRef(path=video), question="Which colour?",
                   options=opts, answer=1, subtitles=SubtitleRef(path=subs) if subs else None)
        return s.model_dump_json()

    lines = [
        sample("ok", "good.mp4", "good.srt"),
        sample("missing-video", "nowhere.mp4"),
        sample("corrupt-video", "corrupt.mp4"),
        sample("bad-subtitles", "good.mp4", "broken.srt"),
        '{"id": "truncated", "question": ',
    ]
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_help_on_every_command():
    for args in ([], ["run"], ["list"], ["results"], ["results", "list"], ["results", "show"], ["results", "export"]):
        out = lvu(*args, "--help")
        assert out.returncode == 0, args
        assert "Usage" in out.stdout


def test_version():
    import lvu as package

    out = lvu("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"lvu {package.__version__}"


@pytest.mark.slow
def test_unknown_names_are_one_line_errors(tmp_path):
    out = lvu("run", "--benchmark", "haystak", "--results-dir", str(tmp_path))
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "unknown benchmark 'haystak'" in out.stderr and "Did you mean 'haystack'" in out.stderr
    out = lvu("run", "--model", "gpt-7", "--results-dir", str(tmp_path))
    assert out.returncode == 2 and "unknown model 'gpt-7'" in out.stderr


@pytest.mark.slow
def test_bad_inputs_fail_their_sample_only(mixed_data, tmp_path):
    res = tmp_path / "res"
    out = lvu("run", "-b", "jsonl", "--data", str(mixed_data), "-m", "random", "--frames", "4",
              "--results-dir", str(res))
    assert out.returncode == 1, out.stderr
    err = out.stderr
    assert "nowhere.mp4" in err
    assert "corrupt.mp4" in err
    assert "broken.srt" in err
    assert "data.jsonl:5" in err
    assert "5 samples" in out.stdout and "4 failed" in out.stdout
    report = next(line for line in out.stdout.splitlines() if line.startswith("report: "))
    assert Path(report[8:]).exists()
    next_steps = out.stdout.split("\nnext:\n", 1)[1]  # after the report: where to look next
    run_id = re.search(r"^run (\w+):", out.stdout, flags=re.M).group(1)
    assert f"lvu view --results-dir {res}" in next_steps and f"lvu results show {run_id}" in next_steps
    assert report[8:] in next_steps

    exported = lvu("results", "export", "--format", "jsonl", "--results-dir", str(res))
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    by_id = {r["sample_id"]: r for r in rows}
    assert set(by_id) == {"ok", "missing-video", "corrupt-video", "bad-subtitles", f"{mixed_data}:5"}
    assert by_id["ok"]["error"] is None and by_id["ok"]["prediction"] in range(4)
    assert len(by_id["ok"]["frame_timestamps"]) == 4

    csv_path = tmp_path / "out.csv"
    assert lvu("results", "export", "-f", "csv", "-o", str(csv_path), "--results-dir", str(res)).returncode == 0
    with open(csv_path) as f:
        table = list(csv.DictReader(f))
    assert {r["sample_id"] for r in table} == set(by_id)
    assert {"run_id", "sample_id", "prediction", "score", "correct", "error"} <= set(table[0])

    listed = lvu("results", "list", "--results-dir", str(res))
    assert "jsonl" in listed.stdout and "random" in listed.stdout
    shown = lvu("results", "show", "--results-dir", str(res))
    assert shown.returncode == 0 and "nowhere.mp4" in shown.stdout


@pytest.mark.slow
def test_frames_and_cache_commands(tmp_path):
    make_video(tmp_path / "v.mp4", seconds=6, fps=10, gop=30)
    env = {"LVU_CACHE_DIR": str(tmp_path / "cache")}
    out = lvu("frames", str(tmp_path / "v.mp4"), "--plan", "uniform:4", "--out", str(tmp_path / "f"), env_extra=env)
    assert out.returncode == 0, out.stderr
    index = json.loads((tmp_path / "f" / "frames.json").read_text())
    assert [round(f["pts"], 2) for f in index["frames"]] == [0.7, 2.2, 3.7, 5.2]  # frame shown at (i+.5)*6/4
    assert len(list((tmp_path / "f").glob("frame_*.jpg"))) == 4
    bad = lvu("frames", str(tmp_path / "missing.mp4"), "--out", str(tmp_path / "g"), env_extra=env)
    assert bad.returncode == 2 and "missing.mp4" in bad.stderr

    data = tmp_path / "d.jsonl"
    data.write_text(Sample(id="a", benchmark="jsonl", video=VideoRef(path="v.mp4"), question="q?",
                           options=["x", "y"], answer=0).model_dump_json() + "\n")
    warm = lvu("cache", "warm", "-b", "jsonl", "--data", str(data), "--frames", "3", env_extra=env)
    assert warm.returncode == 0, warm.stderr
    assert "1 videos, 3 frames" in warm.stdout
    info = lvu("cache", "info", env_extra=env)
    assert "1 entries" in info.stdout
    pruned = lvu("cache", "prune", "--all", env_extra=env)
    assert "removed 1 entries" in pruned.stdout
    assert "0 entries" in lvu("cache", "info", env_extra=env).stdout


def test_a_full_disk_is_one_line_whatever_command_hit_it(monkeypatch, capsys):
    """#27: a full disk during a build ended in a 78-98 line double traceback (the cleanup failed too)."""
    import errno
    import sqlite3

    from lvu.cli import root as cli

    def build_on_a_full_disk() -> None:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "out/videos/.v.mp4.tmp")
        except OSError:
            raise sqlite3.OperationalError("database or disk is full")  # the commit after it fails too

    monkeypatch.setattr(cli, "app", build_on_a_full_disk)
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    err = capsys.readouterr().err
    assert stopped.value.code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: disk full (database or disk is full) — free space, then run the same command again")

    def a_bug() -> None:
        raise ValueError("not a disk problem")

    monkeypatch.setattr(cli, "app", a_bug)
    with pytest.raises(ValueError):  # anything else is not swallowed
        cli.main()
