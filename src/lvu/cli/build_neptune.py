"""`lvu build neptune` (Neptune's QAD pipeline on a folder of videos, the shortcut for `lvu build
run neptune`) and `lvu build subsets`. Thin: lvu.api.build_neptune / build_subsets run them
(docs/build.md, "The Neptune pipeline"); this module parses the flags and prints what they return."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from lvu.cli.build_run import print_problems, print_status
from lvu.cli.common import (KV_HELP, Executor, RayAddress, RayArgs, Replace, check_limit, console, err_console,
                            parse_kv)


def neptune_command(
    videos_dir: Annotated[Path, typer.Argument(help="Folder of videos, or the selected.jsonl of `lvu build select` (file stem = video id; <stem>.srt/.vtt "
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
    min_seconds: Annotated[Optional[float], typer.Option("--min-seconds", help="Shortest video kept (default: no "
                                                        "minimum; the paper's 16 s is its shortest video, not a "
                                                        "rule).")] = None,
    max_seconds: Annotated[Optional[float], typer.Option("--max-seconds", help="Drop videos longer than this "
                                                        "(default: none; they are truncated).")] = None,
    truncate_seconds: Annotated[Optional[float], typer.Option("--truncate-seconds", help="Analyse only the first "
                                                             "N seconds of longer videos (paper: 15 min).")] = 900.0,
    static_threshold: Annotated[Optional[float], typer.Option("--static-threshold", help="Static filter: frames "
                                                             "whose largest 64x48-cell difference (0..1) is at most "
                                                             "this share a cluster (default 0.08).")] = None,
    metadata_rules: Annotated[bool, typer.Option("--metadata-rules/--no-metadata-rules", help="Judge <stem>.info.json: "
                                                 ">= 100 views, uploaded >= 90 days before --as-of, no mature/racy "
                                                 "labels (App. C.1).")] = True,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="Date upload ages count to (YYYY-MM-DD). Default: "
                                                 "the date OUT recorded, else today.")] = None,
    min_face_height: Annotated[float, typer.Option("--min-face-height", help="Talking-head frame: face box "
                                                                             "taller than this fraction.")] = 0.20,
    max_talking_fraction: Annotated[float, typer.Option("--max-talking-fraction", help="Drop a video when more "
                                                        "than this fraction of frames are talking-head frames.")] = 0.30,
    filter_seeds: Annotated[int, typer.Option("--filter-seeds", help="QAD filter runs per question.")] = 3,
    filter_threshold: Annotated[int, typer.Option("--filter-threshold", help="Remove a QAD when the filter "
                                                  "top-ranks its answer in at least this many runs.")] = 2,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
    executor: Executor = "local",
    ray_address: RayAddress = None,
    ray_arg: RayArgs = None,
    replace: Replace = False,
) -> None:
    """Neptune's automatic QAD pipeline: a folder of videos in, a filtered benchmark out.

    Stages: selection filters, signals (shots, speech, frame captions, title), dense captions,
    questions, six decoys, the QAD blind filter; writes Neptune's release schema and lvu JSONL that
    `lvu run` evaluates. Every output is committed as it comes: run the same command to resume.
    Exit codes: 0 all done; 1 some units failed (see lvu build status); 130 interrupted."""
    from lvu.api.building_shortcuts import build_neptune

    check_limit(limit)
    llm_spec = (llm, parse_kv(llm_arg or [], "--llm-arg"))
    models: dict[str, tuple[str, dict[str, Any]]] = {
        "llm": llm_spec, **({"filter": (filter_model, parse_kv(filter_arg or [], "--filter-arg"))} if filter_model else {})}
    if vlm:
        models["vlm"] = (vlm, parse_kv(vlm_arg or [], "--vlm-arg"))
    done = build_neptune(videos_dir, out, llm=llm_spec, vlm=models.get("vlm"), filter_model=models.get("filter"),
                         options={"captioner": captioner, "asr": asr, "questions": questions, "min_seconds": min_seconds,
                                  "max_seconds": max_seconds, "truncate_seconds": truncate_seconds,
                                  "static_threshold": static_threshold, "metadata_rules": metadata_rules,
                                  "as_of": as_of, "min_face_height": min_face_height,
                                  "max_talking_fraction": max_talking_fraction, "filter_seeds": filter_seeds,
                                  "filter_threshold": filter_threshold},
                         limit=limit, concurrency=concurrency, show_progress=not quiet, executor=executor,
                         ray_address=ray_address, ray_args=parse_kv(ray_arg or [], "--ray-arg"), replace=replace,
                         on_note=lambda line: err_console.print(line, highlight=False),
                         arg_flags={role: f"--{role}-arg " for role in models})
    state, written = done.state, done.written
    print_status(state, title=f"lvu build neptune — {out}")
    print_problems(state)
    console.print(f"{written['questions']} question(s) on {written['videos']} video(s) kept; "
                  f"{written['removed by the QAD filter']} removed by the QAD filter"
                  + (f"; {written['incomplete']} without decoys or filter verdict yet" if written["incomplete"] else ""),
                  highlight=False)
    if not state.complete:
        console.print("not complete: run the same command again to resume (failed units are asked again)",
                      highlight=False)
    console.print("next:", highlight=False)
    runs = (f"lvu run -b neptune --data {out} -m MODEL", f"lvu run -b jsonl --data {out / 'benchmark.jsonl'} -m MODEL")
    for line in (*(runs if written["questions"] else ()),  # an empty benchmark is nothing to run
                 f"lvu build status {out}", f"lvu build show {out} VIDEO_ID"):
        console.print(f"  {line}", markup=False, highlight=False)
    if state.interrupted:
        raise typer.Exit(130)
    if any(s.failed for s in state.stages):  # like `lvu run`: 1 when some items failed (each is recorded)
        raise typer.Exit(1)


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
    from lvu.api.building_shortcuts import build_subsets

    done = build_subsets(source, (llm, parse_kv(llm_arg or [], "--llm-arg")), seeds=seeds, threshold=threshold,
                         concurrency=concurrency, show_progress=not quiet, arg_flags={"filter": "--llm-arg "})
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
