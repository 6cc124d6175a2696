"""`lvu build needle` / `lvu build ladder` on the build mechanism: kill -9 mid-build and the same
command gives the files of an uninterrupted build; a committed video that was deleted is made
again; `lvu build run needle` writes what the shortcut writes; `lvu build status` / `show` open the
folders (no inputs needed). On generated 160x96 videos."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from golden._builds import video_digest
from lvu.cli import app
from lvu.errors import LvuError
from needle_videos import needle_media

DEPTHS = "0,10,20,30,40,50,60,70,80,90,100"


@pytest.fixture(scope="module")
def media(tmp_path_factory) -> dict[str, Path]:
    return needle_media(tmp_path_factory.mktemp("needle-resume"))


def needle_argv(media: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return ["build", "needle", "-b", str(media["bg"]), "-n", str(media["needles"]), "--needle-seconds", "1.5",
            "--depths", DEPTHS, "--lengths", "45", "--workers", "1", *extra, "-o", str(out)]


def lvu(*argv: str) -> str:
    result = CliRunner().invoke(app, list(argv))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def product(out: Path) -> dict[str, bytes | str]:
    """Every file the build wrote but its store and lock: text byte for byte (OUT as a placeholder),
    videos by their decoded frames and sound (x264 now and then ends a slice a byte differently
    for the same pictures)."""
    files: dict[str, bytes | str] = {}
    for p in sorted(out.rglob("*")):
        name = p.relative_to(out).as_posix()
        if p.is_file() and not name.startswith(("lvu.sqlite", "build.json", "locks/")):
            files[name] = decoded_digest(p) if p.suffix == ".mp4" else \
                p.read_bytes().replace(str(out.resolve()).encode(), b"OUT")
    return files


_digests: dict[str, str] = {}


def decoded_digest(path: Path) -> str:
    """video_digest, decoded once per distinct file content."""
    memo = hashlib.sha256(path.read_bytes()).hexdigest()
    if memo not in _digests:
        _digests[memo] = video_digest(path)
    return _digests[memo]


def committed(out: Path) -> int:
    try:
        with sqlite3.connect(f"file:{out / 'lvu.sqlite'}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT count(*) FROM ledger_items WHERE error IS NULL").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


@pytest.fixture(scope="module")
def full(media) -> Path:
    out = media["root"] / "full"
    lvu(*needle_argv(media, out))
    return out


@pytest.mark.slow
def test_kill_9_mid_build_then_the_same_command_gives_the_same_files(media, full, tmp_path):
    out = tmp_path / "killed"
    env = {**os.environ, "COLUMNS": "200", "LVU_CACHE_DIR": str(tmp_path / "cache")}
    child = subprocess.Popen([sys.executable, "-m", "lvu.cli", *needle_argv(media, out)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while committed(out) < 2 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, "the build ended before it could be killed"
    done = committed(out)
    assert 2 <= done < 11 and not (out / "needle.jsonl").exists()
    status = lvu("build", "status", str(out))
    assert "pending:" in status and "needle.splice" in status

    again = lvu(*needle_argv(media, out))
    made = int(again.split("(", 1)[1].split(" videos made")[0])
    assert 11 - done - 1 <= made <= 11 - done and "already there)" in again  # one may be on disk, uncommitted
    assert product(out) == product(full)  # no partial .tmp left, every video, subtitle and the JSONL the same


@pytest.mark.slow
def test_a_deleted_video_is_made_again_and_status_and_show_open_the_folder(media, full, tmp_path):
    out = tmp_path / "copy"
    lvu(*needle_argv(media, out))
    victim = sorted((out / "videos").glob("*.mp4"))[3]
    victim.unlink()
    assert "pending: 1 unit(s)" in lvu("build", "status", str(out))
    rerun = lvu(*needle_argv(media, out))
    assert "(1 videos made: 1 copy" in rerun and "10 already there" in rerun
    assert product(out) == product(full)
    item = victim.name.rsplit("-", 1)[0]
    shown = json.loads(lvu("build", "show", str(out), item, "--json"))
    (unit,) = shown[0]["units"]
    assert unit["state"] == "done" and unit["output"]["file"] == f"videos/{victim.name}" and unit["output"]["made"]


@pytest.mark.slow
def test_build_run_needle_writes_what_the_shortcut_writes(media, full, tmp_path):
    out = tmp_path / "run"
    lvu("build", "run", "needle", str(media["bg"]), "-o", str(out), "--opt", f"needles={media['needles']}",
        "--opt", "needle_seconds=1.5", "--opt", f"depths={DEPTHS}", "--opt", "lengths=45", "--concurrency", "2", "-q")
    assert product(out) == product(full)
    config = json.loads((out / "build.json").read_text())
    assert config["pipeline"] == "needle" and config["options"]["depths"][1] == 10.0


@pytest.mark.slow
def test_the_ladder_resumes_from_its_store(full, tmp_path):
    out = tmp_path / "ladder"
    argv = ("build", "ladder", str(full / "needle.jsonl"), "--lengths", "10,20", "-o", str(out))
    first = lvu(*argv)
    before = product(out)
    cut = sorted((out / "videos").glob("*.mp4"))[0]
    cut.unlink()
    assert "pending: 1 unit(s)" in lvu("build", "status", str(out))
    assert lvu(*argv) == first and product(out) == before


@pytest.mark.slow
def test_a_needle_build_of_another_task_into_the_same_folder_is_refused(media, tmp_path):
    """#27: `lvu build needle --task count -o niah` over an NQA build deleted its videos without a word."""
    out = tmp_path / "niah"
    lvu(*needle_argv(media, out, "--depths", "50"))
    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.suffix != ".sqlite" and
             p.parent.name != "locks" and not p.name.startswith("lvu.sqlite")}
    result = CliRunner().invoke(app, needle_argv(media, out, "--task", "count", "--depths", "50"))
    assert isinstance(result.exception, LvuError) and "option task: 'nqa' -> 'count'" in str(result.exception)
    assert {p: p.read_bytes() for p in files} == files
    replaced = lvu(*needle_argv(media, out, "--task", "count", "--depths", "50", "--replace"))
    assert "--replace: rebuilding" in replaced and "option task: 'nqa' -> 'count'" in replaced
    assert all(json.loads(line)["labels"]["task"] == "count" for line in (out / "needle.jsonl").read_text().splitlines())
