"""The `lvu` command line. Thin: parses arguments, calls the library, prints."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from lvu.errors import LvuError

app = typer.Typer(
    help="lvu: run, score and analyse long-video understanding benchmarks under their official protocols.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from lvu.version import __version__

        print(f"lvu {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print lvu's version and exit.")] = False,
) -> None:
    """lvu: run, score and analyse long-video understanding benchmarks under their official protocols."""
data_app = typer.Typer(help="Benchmark release files: validation and the papers' data tables.", no_args_is_help=True)
app.add_typer(data_app, name="data")
bench_app = typer.Typer(help="Performance benchmarks: lvu against its peers, side by side.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
cache_app = typer.Typer(help="The shared on-disk frame cache: size, pruning, pre-extraction.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")
from lvu.cli.judge import judge_app  # noqa: E402  (typer + rich only)
app.add_typer(judge_app, name="judge")
from lvu.cli.results import results_app  # noqa: E402  (typer + rich only)
app.add_typer(results_app, name="results")
from lvu.cli.run import sweep as _sweep_command  # noqa: E402  (typer + rich only)
app.command("sweep")(_sweep_command)
from lvu.cli.importing import import_results as _import_command  # noqa: E402  (typer + rich only)
app.command("import")(_import_command)
from lvu.cli.build import build_app  # noqa: E402  (typer + rich only)
app.add_typer(build_app, name="build")
from lvu.cli.review import review_app  # noqa: E402  (typer + rich only)
app.add_typer(review_app, name="review")
from lvu.cli.data import data_check as _data_check_command, data_stats as _data_stats_command  # noqa: E402
data_app.command("check")(_data_check_command)
data_app.command("stats")(_data_stats_command)
from lvu.cli.common import (  # noqa: E402  (shared by the command modules; imported here by name too)
    KV_HELP,
    ResultsDir,
    check_tags,
    frames_setting,
    console,
    err_console,
    parse_kv,
)
from lvu.console_output import fold_cells, hide_flag_types  # noqa: E402

hide_flag_types()


@app.command()
def run(
    benchmark: Annotated[list[str], typer.Option("--benchmark", "-b", help="Benchmark name (`lvu list`), or the path of an lvu JSONL file (`-b q.jsonl` is `-b jsonl --data q.jsonl`) — default: the built-in haystack. Several (-b videomme,mlvu or repeated -b) run in turn, then one summary table.")] = ["haystack"],
    model: Annotated[str, typer.Option("--model", "-m", help="Model backend name (`lvu list`).")] = "ocr-match",
    frames: Annotated[Optional[str], typer.Option(help="Frames per sample: a count (0 = none), or a word the benchmark accepts (Neptune: 1fps, center, first; see docs/benchmarks). Default: the benchmark's protocol.")] = None,
    subtitles: Annotated[Optional[str], typer.Option(help="Subtitle mode: none | interleave | covering | all.")] = None,
    audio: Annotated[Optional[str], typer.Option(help="The video's sound in the prompt: none | whole | interleave (benchmarks that allow it; docs/audio.md).")] = None,
    resize: Annotated[Optional[int], typer.Option(help="Shorter side of frames in pixels.")] = None,
    data: Annotated[Optional[Path], typer.Option(help="Benchmark data file or directory (benchmarks that read local files).")] = None,
    video_dir: Annotated[Optional[Path], typer.Option(help="Directory holding the benchmark's videos.")] = None,
    compat: Annotated[Optional[str], typer.Option(help="official (default) | lmms-eval (its release 0.7.3; lmms-eval@0.7.1, lmms-eval@0.6 for older ones) | vlmevalkit (VLMEvalKit at e8e78f05; vlmevalkit@296425e2 for MLVU's older code) | mlvu-literal: reproduce a peer harness's deviations (docs/benchmarks/<name>.md, 'How the harnesses read a reply').")] = None,
    setting: Annotated[list[str], typer.Option("--set", help="Other benchmark setting, KEY=VALUE (repeatable).")] = [],
    model_arg: Annotated[list[str], typer.Option("--model-arg", "-a", help=f"Model argument, {KV_HELP}.")] = [],
    limit: Annotated[Optional[int], typer.Option(help="Only the first K samples (K >= 1).")] = None,
    concurrency: Annotated[int, typer.Option(help="Samples in flight at once.")] = 4,
    fresh: Annotated[bool, typer.Option("--fresh", help="Discard stored results of this exact run and start over, asking the model again (no cached answers).")] = False,
    results_dir: ResultsDir = None,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip writing the HTML report.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Decode every time instead of using the shared frame cache.")] = False,
    asr: Annotated[bool, typer.Option("--asr", help="Transcribe the audio of samples without subtitles (needs lvu\\[asr]).")] = False,
    decode: Annotated[str, typer.Option(help="Decode in threads or processes (processes write the frame cache, the run reads it).")] = "threads",
    decode_workers: Annotated[int, typer.Option(help="Decoding threads or processes.")] = 2,
    executor: Annotated[str, typer.Option(help="local (default) | ray: the same pipeline on a Ray cluster (the ray extra; docs/ray.md).")] = "local",
    ray_address: Annotated[Optional[str], typer.Option(help="Ray cluster to join: ray://HOST:10001, HOST:6379 or auto (default: $RAY_ADDRESS, else a local Ray).")] = None,
    ray_arg: Annotated[list[str], typer.Option("--ray-arg", help="Ray executor setting, KEY=VALUE (repeatable): num_replicas, num_gpus, num_cpus, ...")] = [],
    judge: Annotated[Optional[str], typer.Option("--judge", help="Judge model for open-ended / generation samples (`lvu judge --help`).")] = None,
    judge_arg: Annotated[list[str], typer.Option("--judge-arg", "-J", help="Judge model argument, KEY=VALUE (repeatable).")] = [],
    llm_extract: Annotated[bool, typer.Option("--llm-extract", help="Ask the judge to map replies without an option to one (off in official mode).")] = False,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="Run spec YAML: benchmarks × models × settings (then only --limit, --results-dir, --fresh, --no-report, --no-cache, --tag apply).")] = None,
    tag: Annotated[list[str], typer.Option("--tag", help="Tag stored with the run (repeatable; `lvu results list --tag NAME`).")] = [],
    debug: Annotated[bool, typer.Option("--debug", help="Print the Python traceback of the first sample that failed with an exception (a plugin's bug, say); without it, its failure line says `lvu results show RUN --trace ID`.")] = False,
) -> None:
    """Evaluate MODEL on BENCHMARK. With no arguments: ocr-match on the built-in haystack (offline).

    Re-running the same command resumes: samples already stored are not recomputed.
    Exit code 0 when every sample was scored, 1 when some failed (they are recorded), 2 on bad usage.
    """
    from lvu.api import RunOptions, run as run_engine

    invocation = {"limit": limit, "results_dir": results_dir, "fresh": fresh, "report": not no_report,
                  "frame_cache": not no_cache}  # the flags that also apply to a run spec's runs
    given = RunOptions.parse({k: v for k, v in invocation.items() if v is not None})
    tags = check_tags(tag)
    if config is not None:
        from lvu.cli.run import run_spec_file

        run_spec_file(config, given, tags=tags, debug=debug)
    options = RunOptions.parse({
        "concurrency": concurrency, "asr": asr, "decode": decode, "decode_workers": decode_workers, "judge": judge,
        "judge_args": parse_kv(judge_arg, "--judge-arg"), "llm_extract": llm_extract, "executor": executor,
        "ray_address": ray_address, "ray_args": parse_kv(ray_arg, "--ray-arg")}, base=given)

    settings: dict[str, Any] = {"frames": frames_setting(frames), "subtitles": subtitles, "audio": audio,
                                "resize": resize, "compat": compat, "data": str(data) if data else None,
                                "video_dir": str(video_dir) if video_dir else None}
    settings.update(parse_kv(setting, "--set"))
    benchmarks = list(dict.fromkeys(b.strip() for item in benchmark for b in item.split(",") if b.strip()))
    if len(benchmarks) > 1:
        from lvu.cli.run import run_benchmarks

        run_benchmarks(benchmarks, model, settings={k: v for k, v in settings.items() if v is not None},
                       model_args=parse_kv(model_arg, "--model-arg"), options=options, tags=tags, debug=debug)
    if not benchmarks:
        raise LvuError("--benchmark: no benchmark name given — e.g. -b haystack (`lvu list` names them)")
    name = benchmarks[0]  # one benchmark: the run's own tables and next steps
    from lvu.api.data import benchmark_and_data

    name, path = benchmark_and_data(name, data)  # a path is lvu JSONL data: `-b q.jsonl` runs `-b jsonl --data q.jsonl`
    if name != benchmarks[0]:
        settings["data"] = str(path)
    summary = run_engine(name, model, settings={k: v for k, v in settings.items() if v is not None},
                         model_args=parse_kv(model_arg, "--model-arg"), options=options)
    if tags:
        from lvu.api import tag_run

        tag_run(results_dir, summary.run_id, tags)
    from lvu.cli.run import print_run_end

    print_run_end(summary, f"{name} × {model}", limit=limit, results_dir=results_dir, debug=debug)
    raise typer.Exit(1 if summary.n_failed else 0)


@app.command("list")
def list_parts(
    settings: Annotated[Optional[str], typer.Option(
        "--settings", metavar="BENCHMARK",
        help="List one benchmark's settings instead (for --set): name, default, description.")] = None,
) -> None:
    """List the registered benchmarks and models, built-in and installed plugins (docs/plugins.md)."""
    from lvu.api.catalog import benchmark_settings, list_parts as registered

    if settings is not None:
        from rich.markup import escape

        rows = benchmark_settings(settings)
        table = Table(title=f"{settings} settings (--set NAME=VALUE)", title_justify="left")
        table.add_column("name", no_wrap=True)
        table.add_column("default", no_wrap=True)
        table.add_column("description")
        for row in rows:  # escaped: a description may hold [brackets]
            table.add_row(row.name, escape("unset" if row.default is None else str(row.default)), escape(row.description))
        console.print(fold_cells(table))
        return
    catalog = registered()
    for title, parts in (("benchmarks", catalog.benchmarks), ("models", catalog.models)):
        table = Table(title=title, title_justify="left")
        table.add_column("name", no_wrap=True)
        table.add_column("description")
        for part in parts:  # a broken plugin is listed with its problem, in red; the others still show
            table.add_row(part.name, part.description, style="red" if part.broken else None)
        console.print(fold_cells(table))


from lvu.cli.scoring import score as _score_command  # noqa: E402  (here: `lvu --help` lists commands in this order)
app.command("score")(_score_command)


@app.command("asr")
def asr_command(
    video: Annotated[Path, typer.Argument(help="Video file with an audio track.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output SRT file.")],
    model: Annotated[Optional[Path], typer.Option(help="Local CTranslate2 Whisper model dir (default: $LVU_WHISPER_MODEL or the one lvu\\[asr] ships).")] = None,
    language: Annotated[Optional[str], typer.Option(help="Language code (default: the model's).")] = None,
) -> None:
    """Transcribe a video's speech to SRT with a local Whisper model (offline; cached per video)."""
    from lvu.api.media import transcribe_to_srt

    n = transcribe_to_srt(video, out, model=model, language=language, progress=True)
    console.print(f"wrote {n} cues to {out}")


@app.command()
def frames(
    video: Annotated[Path, typer.Argument(help="Video file.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")],
    plan: Annotated[str, typer.Option(help="Sampling plan: uniform:N, fps:F\\[:max=M], lvb:N, lmms:N, vlmevalkit:N, center, first, all1fps.")] = "uniform:32",
    approximate: Annotated[bool, typer.Option("--approximate", help="Nearest keyframe at or before each time (fast, inexact).")] = False,
    resize: Annotated[Optional[int], typer.Option(help="Shorter side in pixels (never upscales).")] = None,
    format: Annotated[str, typer.Option("--format", help="jpg (quality 95) or png (lossless; zlib level 1: fast, ~20% larger than level 6).")] = "jpg",
) -> None:
    """Write the frames a plan samples from VIDEO, plus frames.json (index, pts seconds, frame number)."""
    from lvu.api.media import extract_frames

    written = extract_frames(video, out, plan, approximate=approximate, resize=resize, fmt=format)
    console.print(f"wrote {written.n_frames} frames and {written.index}")


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _parse_size(text: str) -> int:
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    t = text.strip().lower().rstrip("b")
    try:
        return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except ValueError:
        raise LvuError(f"size {text!r} is not understood — use e.g. 500M or 5G") from None


def _parse_age(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text)
    except (ValueError, IndexError):
        raise LvuError(f"age {text!r} is not understood — use e.g. 12h or 7d") from None


CacheDir = Annotated[Optional[Path], typer.Option("--cache-dir", help="Frame cache root (default: $LVU_CACHE_DIR/frames or the user cache dir).")]


@cache_app.command("info")
def cache_info(cache_dir: CacheDir = None) -> None:
    """Where the frame cache is, how many entries it holds and how big it is."""
    from lvu.api.media import cache_info as read_cache_info

    info = read_cache_info(cache_dir)
    console.print(f"{info.root}: {info.entries} entries, {_human(info.bytes)} of {_human(info.max_bytes)}")


@cache_app.command("prune")
def cache_prune(
    max_size: Annotated[Optional[str], typer.Option(help="Evict least-recently-used entries down to this size (e.g. 5G).")] = None,
    older_than: Annotated[Optional[str], typer.Option(help="Remove entries not used for this long (e.g. 7d, 12h).")] = None,
    all: Annotated[bool, typer.Option("--all", help="Empty the cache.")] = False,
    cache_dir: CacheDir = None,
) -> None:
    """Remove cache entries, least recently used first."""
    from lvu.api.media import prune_cache

    limit = 0 if all else (_parse_size(max_size) if max_size else None)
    pruned = prune_cache(cache_dir, max_bytes=limit, older_than=_parse_age(older_than) if older_than else None)
    console.print(f"removed {pruned.removed} entries, freed {_human(pruned.freed)}")


@cache_app.command("warm")
def cache_warm(
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="Benchmark whose videos to pre-extract.")] = "haystack",
    frames: Annotated[Optional[str], typer.Option(help="Frames per sample: a count (0 = none), or a word the benchmark accepts (Neptune: 1fps, center, first; see docs/benchmarks). Default: the benchmark's protocol.")] = None,
    data: Annotated[Optional[Path], typer.Option(help="Benchmark data file or directory.")] = None,
    video_dir: Annotated[Optional[Path], typer.Option(help="Directory holding the benchmark's videos.")] = None,
    setting: Annotated[list[str], typer.Option("--set", help="Other benchmark setting, KEY=VALUE (repeatable).")] = [],
    workers: Annotated[int, typer.Option(help="Decoding processes.")] = 2,
    cache_dir: CacheDir = None,
) -> None:
    """Decode every frame a benchmark run will need into the cache, in parallel (runs then hit the cache)."""
    from lvu.api.media import warm_cache

    settings: dict[str, Any] = {"frames": frames_setting(frames), "data": str(data) if data else None,
                                "video_dir": str(video_dir) if video_dir else None}
    settings.update(parse_kv(setting, "--set"))
    warmed = warm_cache(benchmark, settings={k: v for k, v in settings.items() if v is not None}, workers=workers,
                        cache_dir=cache_dir)
    for line in dict.fromkeys(warmed.errors):
        err_console.print(f"failed: {line}", markup=False, highlight=False)
    console.print(f"{warmed.videos} videos, {warmed.frames} frames in {warmed.seconds:.1f} s, "
                  f"{len(set(warmed.errors))} errors → {warmed.cache_root}")
    if warmed.interrupted:
        err_console.print("interrupted — what is cached stays; run the same command again to warm the rest",
                          markup=False, highlight=False)
        raise typer.Exit(130)
    raise typer.Exit(1 if warmed.errors else 0)


@bench_app.command("decode", add_help_option=False,
                   context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench_decode(ctx: typer.Context) -> None:
    """Decode speed: lvu exact/approximate/cache vs lmms-eval sequential, decord, torchcodec, keyframe floor.

    Options are the script's own (`lvu bench decode --help`): --quick, --minutes, --gop, --n, --methods."""
    from lvu.api.media import bench_decode as run_bench

    raise typer.Exit(run_bench(ctx.args))


from lvu.cli.review import view  # noqa: E402  (the results viewer; fastapi/uvicorn load only when it runs)

app.command("view")(view)
from lvu.cli import analysis as analysis_cli  # noqa: E402  (typer + rich only; reports, comparisons, analyses)
for _name in ("report", "compare", "analyse", "certificate"):
    app.command(_name)(getattr(analysis_cli, _name))


def _sigterm_as_ctrl_c(signum: int, frame: object) -> None:
    from lvu.api.stopping import note_stop_signal

    note_stop_signal(signum)
    raise KeyboardInterrupt


def main() -> None:
    """Entry point: user errors print as one line and exit 2, never as a traceback. SIGTERM stops
    like Ctrl-C (a run's pipeline handles both itself: lvu.runs.stage_runner) and exits 143."""
    import signal

    from lvu.api.stopping import bounded_exit

    try:
        previous = signal.signal(signal.SIGTERM, _sigterm_as_ctrl_c)
    except ValueError:  # not the main thread: signals are not ours to handle
        previous = None
    try:
        with bounded_exit():  # a stop signal bounds the exit (lvu.runs.stage_runner)
            app()  # standalone mode: click prints usage errors and handles --help and exit codes
    except LvuError as e:
        err_console.print(f"error: {e}", markup=False, highlight=False)
        sys.exit(2)
    except KeyboardInterrupt as e:  # RunInterrupted says how many samples are stored
        err_console.print(str(e) or "interrupted — completed samples are stored; run the same command again to resume",
                          markup=False, highlight=False)
        _exit_stopped(_interrupted_exit_code())
    except SystemExit as e:
        if e.code == 130:  # typer's exit after a KeyboardInterrupt: 143 when SIGTERM stopped it
            _exit_stopped(_interrupted_exit_code())
        raise
    except Exception as e:
        full = disk_full(e)
        if full is None:
            raise
        err_console.print(f"error: disk full ({full}) — free space, then run the same command again: what was "
                          "completed is kept and a build or run resumes from it", markup=False, highlight=False)
        sys.exit(1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _exit_stopped(code: int) -> None:
    """Exit after a stop signal: at once when a runner stopped (what it committed is stored and the
    last line printed; the interpreter would otherwise wait for threads still decoding a video)."""
    from lvu.api.stopping import stop_signal

    if stop_signal() is None:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def disk_full(error: BaseException) -> str | None:
    """What a full disk said, when it is behind `error` or an error raised while handling it (a
    full disk often fails the cleanup too), else None."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if getattr(e, "errno", None) == 28 or "disk is full" in str(e) or "No space left" in str(e):
            return str(e).splitlines()[0][:200] if str(e) else "no space left on device"
        stack += [e.__cause__, e.__context__]
    return None


def _interrupted_exit_code() -> int:
    """128 + the signal that stopped the command (130 for Ctrl-C, 143 for SIGTERM), as shells report it."""
    import signal

    from lvu.api.stopping import stop_signal

    return 128 + (stop_signal() or signal.SIGINT)


if __name__ == "__main__":
    main()
