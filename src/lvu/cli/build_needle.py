"""`lvu build needle` and `lvu build ladder`: needle-in-a-haystack benchmarks on your own videos
and MLVU's Time-ladder (docs/build.md, "Needles and the time ladder"). Thin: the work is in
lvu.construct.needle_pipeline / needles / splice and lvu.construct.ladder (the `needle` and `ladder`
build pipelines: resumable through OUT's build store, `lvu build status OUT` opens them), run by
lvu.api.build_needle / build_ladder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from lvu.cli.common import KV_HELP, Replace, console, err_console, parse_kv
from lvu.errors import LvuError


def needle_command(
    background: Annotated[Path, typer.Option("--background", "-b", help="A background video or a folder of them (subtitles: same name, .srt/.vtt).")],
    needles: Annotated[Path, typer.Option("--needles", "-n", help="A folder of needle clips / images / .txt files, one such file, or a needle JSONL file (.jsonl).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder: needle.jsonl, videos/, subtitles/.")],
    segments: Annotated[Optional[Path], typer.Option("--segments", help="An ActivityNet-Captions file ({id: {duration, timestamps, sentences}}): --task order from consecutive captioned segments of the videos in --needles (a folder), MLVU's second Action Order form.")] = None,
    task: Annotated[str, typer.Option("--task", "-t", help="nqa (one needle, its question) | order (several, their order) | count (one needle, how often).")] = "nqa",
    depths: Annotated[str, typer.Option(help="nqa: where each needle starts, percent of the video (0 = first frame, 100 = ends on the last); 'random' as MLVU.")] = "0,25,50,75,100",
    lengths: Annotated[Optional[str], typer.Option(help="Output lengths in seconds, comma-separated (background trimmed or looped); default: the background's.")] = None,
    per_cell: Annotated[int, typer.Option("--per-cell", help="Videos per background x length x depth (nqa) or per background x length (order, count).")] = 1,
    order_size: Annotated[int, typer.Option("--order-size", help="order: needles per video.")] = 4,
    max_count: Annotated[int, typer.Option("--max-count", help="count: the most times a needle is inserted.")] = 4,
    needle_seconds: Annotated[float, typer.Option("--needle-seconds", help="How long images and text needles are shown (a JSONL line's `seconds` wins).")] = 3.0,
    seed: Annotated[int, typer.Option(help="Same seed and inputs, same benchmark (bytes).")] = 0,
    crf: Annotated[int, typer.Option(help="x264 quality of re-encoded spans (lower is better).")] = 18,
    reencode: Annotated[bool, typer.Option("--reencode", help="Decode and re-encode every frame (never copy background packets).")] = False,
    exact_audio: Annotated[bool, typer.Option("--exact-audio", help="Re-encode all sound sample-exactly (default: copy the background's AAC packets between splice points, within half an AAC frame of the picture).")] = False,
    workers: Annotated[int, typer.Option(help="Videos made at once.")] = 2,
    questions: Annotated[str, typer.Option("--questions", help="nqa: template (the needle's own question, else which label appears) | llm (MLVU Figure 7: 1-3 questions per needle written by --llm from its caption: <stem>.caption beside it, a JSONL `caption`, or --captioner).")] = "template",
    llm: Annotated[Optional[str], typer.Option("--llm", help="--questions llm: the text model writing the questions (any lvu model: openai, gemini, hf, vllm, ...).")] = None,
    llm_arg: Annotated[Optional[list[str]], typer.Option("--llm-arg", help=f"--llm's arguments: {KV_HELP}")] = None,
    vlm: Annotated[Optional[str], typer.Option("--vlm", help="--questions llm: an image model captioning needles without a caption (Neptune's frame caption prompt at 1 fps; implies --captioner vlm).")] = None,
    vlm_arg: Annotated[Optional[list[str]], typer.Option("--vlm-arg", help=f"--vlm's arguments: {KV_HELP}")] = None,
    captioner: Annotated[Optional[str], typer.Option("--captioner", help="--questions llm, needles without a caption: none (stop, naming them) | ocr (their on-screen text, offline) | vlm (--vlm). Default: vlm with --vlm, else none.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="--questions llm: model calls in flight.")] = 8,
    replace: Replace = False,
) -> None:
    """Insert needles (clips, images shown N seconds, or text) into background videos at chosen
    depths and lengths: an lvu JSONL benchmark for `lvu run -b jsonl --data OUT/needle.jsonl`.

        lvu build needle -b backgrounds/ -n needles.jsonl --task nqa --depths 0,25,50,75,100 --lengths 180,600 -o niah
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

    from lvu.api.building_shortcuts import QuestionsIncomplete, build_needle

    if workers < 1:
        raise LvuError(f"--workers {workers}: must be at least 1")
    models = _question_models(task, questions, llm, llm_arg, vlm, vlm_arg, captioner, concurrency)
    bar = Progress(TextColumn("making needle videos"), BarColumn(), MofNCompleteColumn(), console=err_console,
                   transient=True)
    todo: list[TaskID] = []

    def start(n_items: int) -> None:
        bar.start()
        todo.append(bar.add_task("", total=n_items))

    try:
        result = build_needle(background, needles, out, options={
            "segments": str(segments) if segments else None, "task": task, "depths": depths,
            "lengths": lengths, "per_cell": per_cell,
            "order_size": order_size, "max_count": max_count, "needle_seconds": needle_seconds, "seed": seed, "crf": crf,
            "reencode": reencode, "exact_audio": exact_audio, "questions": questions,
            "captioner": captioner or ("vlm" if vlm else "none")}, models=models, workers=workers,
            concurrency=concurrency, replace=replace, on_start=start, progress=lambda item, made: bar.advance(todo[0]))
    except QuestionsIncomplete as e:  # the videos are made; some needles' questions are not
        bar.stop()
        for line in e.lines:
            err_console.print(f"failed: {line}", markup=False, highlight=False)
        err_console.print(f"no needle.jsonl yet: {len(e.lines)} unit(s) failed (each recorded; `lvu build status "
                          f"{out}`) — run the same command again to ask them again", markup=False, highlight=False)
        raise typer.Exit(1) from None
    finally:
        bar.stop()
    modes = ", ".join(f"{n} {m}" for m, n in sorted(result.modes.items()))
    total = sum(result.frames.values())
    copied = f", {100 * result.frames.get('copied', 0) / total:.0f}% of frames copied" if total else ""
    console.print(f"{len(result.samples)} samples → {result.jsonl} ({result.made} videos made"
                  f"{f': {modes}' if modes else ''}{copied}; {result.reused} already there)", markup=False,
                  highlight=False)
    asked = [s for s in result.samples if "nqa_question" in s.extra]
    if asked:
        needle_count = len({s.extra["needles"][0]["source"] for s in asked})
        console.print(f"{len(asked)} of the samples ask questions --llm wrote from the captions of {needle_count} needle(s)",
                      markup=False, highlight=False)
    for how, n in sorted(result.audio.items()):
        console.print(f"sound of {n} video(s): {how}", markup=False, highlight=False)
    for path, why in result.reasons.items():
        err_console.print(f"note: {path}: every frame re-encoded because {why}", markup=False, highlight=False)
    console.print(f"run it: lvu run -b jsonl --data {result.jsonl} -m MODEL --frames 32; then lvu analyse niah",
                  markup=False, highlight=False)


def _question_models(task: str, questions: str, llm: str | None, llm_arg: list[str] | None, vlm: str | None,
                     vlm_arg: list[str] | None, captioner: str | None,
                     concurrency: int) -> dict[str, tuple[str, dict[str, object]]]:
    """The models of --questions llm (role -> name, args), or a one-line error for flags that do not fit."""
    if questions not in ("template", "llm"):
        raise LvuError(f"--questions {questions!r}: use template or llm")
    if questions == "template":
        given = [flag for flag, value in (("--llm", llm), ("--vlm", vlm), ("--captioner", captioner)) if value]
        if given:
            raise LvuError(f"{given[0]} is for --questions llm (model-written Needle QA questions) — add "
                           "--questions llm, or leave it out")
        return {}
    if task != "nqa":
        raise LvuError(f"--questions llm writes Needle QA questions — use it with --task nqa (not --task {task})")
    if not llm:
        raise LvuError("--questions llm needs --llm MODEL (the text model writing the questions, e.g. --llm openai "
                       "--llm-arg model=gpt-4o)")
    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency}: must be at least 1")
    if captioner == "vlm" and not vlm:
        raise LvuError("--captioner vlm needs --vlm MODEL (an image model for the needle captions) — or pass "
                       "--captioner ocr to caption needles with their on-screen text, offline")
    models: dict[str, tuple[str, dict[str, object]]] = {"llm": (llm, parse_kv(llm_arg or [], "--llm-arg"))}
    if vlm and (captioner or "vlm") == "vlm":
        models["vlm"] = (vlm, parse_kv(vlm_arg or [], "--vlm-arg"))
    return models


def ladder_command(
    sources: Annotated[list[Path], typer.Argument(help="The MLVU release folder, or lvu JSONL files (e.g. `lvu build needle` outputs).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder: ladder.jsonl, videos/.")],
    lengths: Annotated[str, typer.Option(help="Ladder lengths in seconds (MLVU: 180,360,600).")] = "180,360,600",
    replace: Replace = False,
) -> None:
    """MLVU's Time-ladder: cut videos to each length, keeping the questions whose evidence stays
    inside. Needs evidence positions: `lvu build needle` outputs carry them; the MLVU release does not.

        lvu build needle -b bg/ -n clips/ --depths random --lengths 600 -o nqa && lvu build ladder nqa/needle.jsonl -o ladder
    """
    from lvu.api.building_shortcuts import build_ladder

    result = build_ladder(sources, out, lengths, replace=replace)
    rungs = sorted({length for _, length in result.kept} | {length for _, length in result.outside})
    tasks = sorted({t for t, _ in result.kept} | {t for t, _ in result.outside})
    table = Table(title="questions kept per length (dropped: evidence past the cut or video too short)",
                  title_justify="left")
    table.add_column("task")
    for length in rungs:
        table.add_column(f"{length:g}s")
    for t in tasks:
        table.add_row(t, *(f"{result.kept.get((t, x), 0)} (dropped {result.outside.get((t, x), 0)})" for x in rungs))
    console.print(table)
    for t, n in sorted(result.no_evidence.items()):
        err_console.print(f"note: {n} {t} questions have no evidence position and are left out", markup=False,
                          highlight=False)
    console.print(f"{len(result.samples)} samples → {result.jsonl}; run it, then `lvu analyse niah` shows the "
                  "Time-ladder table (M-Avg per length)", markup=False, highlight=False)
