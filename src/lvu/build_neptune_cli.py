"""`lvu build neptune` (Neptune's QAD pipeline on a folder of videos), `lvu build status` and
`lvu build show` (any build folder). Thin: the stages are lvu.construct.neptune, the mechanism
lvu.construct.pipeline / lvu.construct.runner (docs/build.md, "The Neptune pipeline")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from lvu.cli_common import KV_HELP, check_limit, console, err_console, parse_kv
from lvu.console_output import fold_cells
from lvu.errors import LvuError


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


def neptune_command(
    videos_dir: Annotated[Path, typer.Argument(help="Folder of videos (file stem = video id; <stem>.srt/.vtt "
                                                    "subtitles and <stem>.json title/description beside them are used).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Build folder: the store (lvu.sqlite), build.json and "
                                                          "the benchmark files. Re-running resumes it.")],
    llm: Annotated[str, typer.Option("--llm", help="Text model for captioning, QA and decoys (any lvu model: "
                                                   "openai, gemini, hf, vllm, ...).")],
    llm_arg: Annotated[Optional[list[str]], typer.Option("--llm-arg", help=f"--llm's arguments: {KV_HELP}")] = None,
    vlm: Annotated[Optional[str], typer.Option("--vlm", help="Image model for the 1 fps frame captions "
                                                             "(needed with --captioner vlm).")] = None,
    vlm_arg: Annotated[Optional[list[str]], typer.Option("--vlm-arg", help=f"--vlm's arguments: {KV_HELP}")] = None,
    captioner: Annotated[str, typer.Option("--captioner", help="vlm: the paper's caption prompt per frame via "
                                                               "--vlm; ocr: each frame's on-screen text (offline).")] = "vlm",
    filter_model: Annotated[Optional[str], typer.Option("--filter-model", help="Ranking model of the QAD blind "
                                                                               "filter (default: --llm).")] = None,
    filter_arg: Annotated[Optional[list[str]], typer.Option("--filter-arg", help=f"--filter-model's arguments: {KV_HELP}")] = None,
    asr: Annotated[str, typer.Option("--asr", help="auto: the subtitle file beside a video, else Whisper; "
                                                   "subtitles: files only; none: no speech.")] = "auto",
    questions: Annotated[int, typer.Option("--questions", help="Questions generated per video ({target_number}).")] = 5,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Only the first N videos (by name).")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Model calls (units) in flight per stage.")] = 4,
    min_seconds: Annotated[float, typer.Option("--min-seconds", help="Shortest video kept.")] = 16.0,
    max_seconds: Annotated[float, typer.Option("--max-seconds", help="Longest video kept.")] = 900.0,
    min_face_height: Annotated[float, typer.Option("--min-face-height", help="Talking-head frame: face box "
                                                                             "taller than this fraction.")] = 0.20,
    max_talking_fraction: Annotated[float, typer.Option("--max-talking-fraction", help="Drop a video when more "
                                                        "than this fraction of frames are talking-head frames.")] = 0.30,
    filter_seeds: Annotated[int, typer.Option("--filter-seeds", help="QAD filter runs per question.")] = 3,
    filter_threshold: Annotated[int, typer.Option("--filter-threshold", help="Remove a QAD when the filter "
                                                  "top-ranks its answer in at least this many runs.")] = 2,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
) -> None:
    """Neptune's automatic QAD pipeline: a folder of videos in, a filtered benchmark out.

    Stages: selection filters, signals (shots, speech, frame captions, title), dense captions,
    questions, six decoys, the QAD blind filter; writes Neptune's release schema and lvu JSONL that
    `lvu run` evaluates. Every output is committed as it comes: run the same command to resume.
    Exit codes: 0 all done; 1 some units failed (see lvu build status); 130 interrupted."""
    from lvu.construct.neptune import CAPTIONERS, Neptune
    from lvu.construct.runner import find_videos, run_build

    check_limit(limit)
    if captioner not in CAPTIONERS:
        raise LvuError(f"--captioner {captioner!r}: use one of {', '.join(CAPTIONERS)}")
    if captioner == "vlm" and not vlm:
        raise LvuError("--captioner vlm needs --vlm MODEL (an image model for the frame captions) — "
                       "or pass --captioner ocr to caption frames with their on-screen text, offline")
    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency}: must be at least 1")
    if not 1 <= filter_threshold <= filter_seeds:
        raise LvuError(f"--filter-threshold {filter_threshold}: must be from 1 to --filter-seeds ({filter_seeds})")
    if questions < 1:
        raise LvuError(f"--questions {questions}: must be at least 1")
    videos = find_videos(videos_dir, limit)
    pipeline = Neptune({"captioner": captioner, "asr": asr, "questions": questions, "min_seconds": min_seconds,
                        "max_seconds": max_seconds, "min_face_height": min_face_height,
                        "max_talking_fraction": max_talking_fraction, "filter_seeds": filter_seeds,
                        "filter_threshold": filter_threshold})
    llm_spec = (llm, parse_kv(llm_arg or [], "--llm-arg"))
    models = {"llm": llm_spec,
              "filter": (filter_model, parse_kv(filter_arg or [], "--filter-arg")) if filter_model else llm_spec}
    if vlm:
        models["vlm"] = (vlm, parse_kv(vlm_arg or [], "--vlm-arg"))
    err_console.print(f"lvu build neptune: {len(videos)} video(s) from {videos_dir} into {out}", highlight=False)
    state, written = asyncio.run(run_build(pipeline, videos, out, models, concurrency=concurrency,
                                           show_progress=not quiet))
    print_status(state, title=f"lvu build neptune — {out}")
    console.print(f"{written['questions']} question(s) on {written['videos']} video(s) kept; "
                  f"{written['removed by the QAD filter']} removed by the QAD filter"
                  + (f"; {written['incomplete']} without decoys or filter verdict yet" if written["incomplete"] else ""),
                  highlight=False)
    if not state.complete:
        console.print("not complete: run the same command again to resume (failed units are asked again)",
                      highlight=False)
    console.print("next:", highlight=False)
    for line in (f"lvu run -b neptune --data {out} -m MODEL",
                 f"lvu run -b jsonl --data {out / 'benchmark.jsonl'} -m MODEL",
                 f"lvu build status {out}", f"lvu build show {out} VIDEO_ID"):
        console.print(f"  {line}", markup=False, highlight=False)
    if state.interrupted:
        raise typer.Exit(130)
    if any(s.failed for s in state.stages):  # like `lvu run`: 1 when some items failed (each is recorded)
        raise typer.Exit(1)


def print_status(state: Any, *, title: str) -> None:
    table = Table(title=title, title_justify="left")
    for name, justify in (("stage", "left"), ("model", "left"), ("unit", "left"), ("done", "right"),
                          ("failed", "right"), ("pending", "right"), ("videos done/failed/waiting/skipped", "right"),
                          ("calls", "right"), ("tokens", "right"), ("wall", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for s in state.stages:
        v = s.videos
        table.add_row(s.name, s.role, s.unit, str(s.done), str(s.failed), str(s.pending),
                      f"{v['done']}/{v['failed']}/{v['blocked'] + v['pending']}/{v['skipped']}",
                      str(s.calls), str(s.tokens), _duration(s.seconds))
    console.print(fold_cells(table))
    calls = sum(s.calls for s in state.stages)
    tokens = sum(s.tokens for s in state.stages)
    seconds = sum(s.seconds for s in state.stages)
    console.print(f"total: {calls} model call(s), {tokens} token(s), {_duration(seconds)} of unit wall time",
                  highlight=False)


def status_command(out: Annotated[Path, typer.Argument(help="A build folder (the -o of lvu build ...).")]) -> None:
    """Per stage: units done / failed / pending, videos by state, calls, tokens and wall time."""
    from lvu.construct.runner import open_build

    pipeline, videos, state = open_build(out)
    print_status(state, title=f"lvu build {pipeline.name} — {out} ({len(videos)} video(s))")
    for stage in state.stages:
        for video, why in state.notes.get(stage.name, {}).items():
            console.print(f"  {stage.name} {video}: {why}", markup=False, highlight=False)


def _short(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if width <= 0 or len(text) <= width else text[:width] + f"… ({len(text)} chars)"


def show_command(
    out: Annotated[Path, typer.Argument(help="A build folder.")],
    video: Annotated[str, typer.Argument(help="The video's id (its file name without the extension).")],
    prompts: Annotated[bool, typer.Option("--prompts", help="Also every call's exact prompt and raw reply.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Outputs in full (default: cut at 300 characters).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Everything stored for the video, as JSON.")] = False,
) -> None:
    """Every stage's output for one video: each unit's result (or error), its calls, tokens, time."""
    from lvu.construct.runner import open_build, tokens_of

    _, videos, state = open_build(out)
    if video not in {v.id for v in videos}:
        raise LvuError(f"{out}: no video {video!r} — its videos: {', '.join(v.id for v in videos[:20])}")
    dump = []
    for stage in state.stages:
        vstate = state.states[stage.name].get(video, "?")
        units = []
        for view in state.units.get(stage.name, {}).get(video, []):
            e = view.entry
            record = (e.result or {}) if e else {}
            units.append({"unit": view.unit.id, "state": "pending" if e is None else "failed" if e.error else "done",
                          "output": record.get("output"), "error": e.error if e else None,
                          "calls": record.get("calls", []), "seconds": round(e.finished - e.started, 3) if e else None})
        dump.append({"stage": stage.name, "role": stage.role, "state": vstate,
                     "note": state.notes[stage.name].get(video), "units": units})
    if as_json:
        console.print_json(json.dumps(dump, ensure_ascii=False))
        return
    width = 0 if full else 300
    for block in dump:
        note = f" — {block['note']}" if block["note"] else ""
        console.print(f"[bold]{block['stage']}[/bold] ({block['role']}): {block['state']}{note}", highlight=False)
        for u in block["units"]:
            tokens = tokens_of(u["calls"])
            head = f"  {u['unit']} [{u['state']}] {len(u['calls'])} call(s), {tokens} tokens"
            head += f", {u['seconds']:.2f} s" if u["seconds"] is not None else ""
            console.print(head, markup=False, highlight=False)
            if u["error"]:
                console.print(f"    error: {u['error']}", markup=False, highlight=False)
            elif u["state"] == "done":
                console.print(f"    {_short(u['output'], width)}", markup=False, highlight=False)
            if prompts:
                for i, c in enumerate(u["calls"], 1):
                    console.print(f"    --- call {i} prompt ---\n{c['prompt']}\n    --- call {i} reply ---\n"
                                  f"{c['reply'] if c['reply'] is not None else c['error']}", markup=False,
                                  highlight=False)


def subsets_command(
    source: Annotated[Path, typer.Argument(help="A `lvu build neptune` folder, or a `lvu review export` folder "
                                                "(its raters' modality labels make MMH).")],
    llm: Annotated[str, typer.Option("--llm", help="Ranking model of the QAD and ASR filters (any lvu model).")],
    llm_arg: Annotated[Optional[list[str]], typer.Option("--llm-arg", help=f"--llm's arguments: {KV_HELP}")] = None,
    seeds: Annotated[int, typer.Option("--seeds", help="Filter runs per question (shuffled options each).")] = 3,
    threshold: Annotated[int, typer.Option("--threshold", help="Remove a question when the filter top-ranks its "
                                                               "answer in at least this many runs.")] = 2,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Questions in flight.")] = 8,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
) -> None:
    """Neptune's hard subsets MMA and MMH, written beside a build's neptune_full.json.

    MMA: questions neither the ASR filter (the QAD filter with the transcript) nor the QAD filter
    removes. MMH: questions the raters marked as not audio-only (a `lvu review export` folder) that
    the QAD filter does not remove. Resumable: every filter decision is stored as it is made."""
    from lvu.construct.neptune_subsets import build_subsets
    from lvu.construct.runner import load_models

    if not 1 <= threshold <= seeds:
        raise LvuError(f"--threshold {threshold}: must be from 1 to --seeds ({seeds})")
    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency}: must be at least 1")
    model = load_models({"filter": (llm, parse_kv(llm_arg or [], "--llm-arg"))})["filter"]

    async def go() -> Any:
        try:
            return await build_subsets(source, [model], seeds=seeds, threshold=threshold, concurrency=concurrency,
                                       show_progress=not quiet)
        finally:
            await model.close()

    done = asyncio.run(go())
    if done.interrupted:
        err_console.print("interrupted: the decisions made so far are stored — run the same command to go on",
                          highlight=False)
        raise typer.Exit(130)
    console.print(f"{done.n_full} question(s): QAD filter removes {len(done.qad_removed)}, ASR filter removes "
                  f"{len(done.asr_removed)}" + (f", {len(done.undecided)} undecided (a call failed: run again)"
                                                if done.undecided else ""), highlight=False)
    console.print(f"MMA: {len(done.mma)} question(s) → {done.written['mma']}", highlight=False)
    if done.mmh is not None:
        console.print(f"MMH: {len(done.mmh)} question(s) ({len(done.audio_only)} audio-only dropped) → "
                      f"{done.written['mmh']}", highlight=False)
    if done.mmh_skipped:
        err_console.print(f"MMH: {done.mmh_skipped}", highlight=False)
    console.print("next:", highlight=False)
    console.print(f"  lvu run -b neptune --data {source} --set subset=mma -m MODEL", markup=False, highlight=False)
    if done.undecided:
        raise typer.Exit(1)
