"""`lvu build filter`: the papers' blind filters over a benchmark or a JSONL file (docs/build.md,
"Blind filters"). Thin: the rules are lvu.construct.blind_rules, the pipeline lvu.construct.filtering,
the files lvu.construct.filter_files and the summary lvu.analysis.blind."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from lvu.cli_common import (KV_HELP, Replace, ResultsDir, check_limit, console, err_console, parse_kv)
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.benchmarks.base import Benchmark
    from lvu.construct.filtering import FilterOutcome, FilterSettings
    from lvu.models.base import Model

_POSITIONAL = re.compile(r"^(\d+)\.(.+)$")


def split_model_args(models: list[str], args: dict[str, Any]) -> list[dict[str, Any]]:
    """Each model's arguments: `KEY=VALUE` goes to every model, `N.KEY=VALUE` to the N-th only."""
    out: list[dict[str, Any]] = [{} for _ in models]
    shared = {k: v for k, v in args.items() if not _POSITIONAL.match(k)}
    for k, v in args.items():
        if m := _POSITIONAL.match(k):
            n = int(m.group(1))
            if not 1 <= n <= len(models):
                raise LvuError(f"--model-arg {k}={v}: there is no model {n} (-m given {len(models)} time(s)) — "
                               "N.KEY=VALUE sets KEY for the N-th -m only")
            out[n - 1][m.group(2)] = v
    return [{**shared, **own} for own in out]


def filter_pipeline(settings: FilterSettings, n_models: int) -> Any:
    """The blind-filter pipeline this command's settings make (its build.json; check_rebuild)."""
    from lvu.construct.filtering import BlindFilter

    return BlindFilter({"rule": settings.rule, "seeds": settings.seeds, "threshold": settings.threshold,
                        "seed_base": settings.seed_base, "asr": settings.asr, "models": n_models})


async def _filter(bench: Benchmark, names: list[str], args: list[dict[str, Any]], settings: FilterSettings,
                  **kwargs: Any) -> tuple[FilterOutcome, dict[str, Any]]:
    """The outcome, and the build.json that lets `lvu build status OUT` open the filter's folder."""
    from lvu.construct.filtering import filter_samples, model_roles, unique_items
    from lvu.construct.store import build_config
    from lvu.models.probes import build_model

    models: list[Model] = []
    try:
        for name, a in zip(names, args):
            models.append(build_model(name, a))
        outcome = await filter_samples(bench, models, settings, **kwargs)
        config = build_config(filter_pipeline(settings, len(models)), dict(zip(model_roles(len(models)), models)), unique_items(outcome.samples),
                              store_dir=outcome.results_dir)
        return outcome, config
    finally:
        for m in models:
            await m.close()


def filter_command(
    source: Annotated[str, typer.Argument(help="A benchmark name (`lvu list`; its files via --data) or an lvu JSONL file.")],
    rule: Annotated[str, typer.Option("--rule", "-r", help="neptune-qad | lvbench | text-only (docs/build.md).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder: kept.jsonl, removed.jsonl, decisions.jsonl, summary.json.")],
    model: Annotated[list[str], typer.Option("--model", "-m", help="Model backend (`lvu list`); repeat for several.")] = [],
    model_arg: Annotated[list[str], typer.Option("--model-arg", "-a", help=f"Model argument for every model, {KV_HELP}; N.KEY=VALUE for the N-th -m only.")] = [],
    seeds: Annotated[int, typer.Option(help="neptune-qad: rankings per question, options re-shuffled per seed.")] = 3,
    threshold: Annotated[int, typer.Option(help="neptune-qad: removed when the answer is ranked first in at least this many seeds.")] = 2,
    seed_base: Annotated[int, typer.Option(help="neptune-qad: first seed (seeds SEED_BASE..SEED_BASE+SEEDS-1).")] = 0,
    asr: Annotated[bool, typer.Option("--asr", help="Give the transcript too: the sample's subtitles, else Whisper ASR (Neptune's ASR filter).")] = False,
    data: Annotated[Optional[Path], typer.Option(help="Benchmark data file or directory.")] = None,
    video_dir: Annotated[Optional[Path], typer.Option(help="Directory holding the benchmark's videos.")] = None,
    setting: Annotated[list[str], typer.Option("--set", help="Benchmark setting, KEY=VALUE (repeatable).")] = [],
    limit: Annotated[Optional[int], typer.Option(help="Only the first K samples.")] = None,
    concurrency: Annotated[int, typer.Option(help="Questions in flight at once.")] = 8,
    fresh: Annotated[bool, typer.Option("--fresh", help="Decide every question again (nothing from the ledger or a response cache).")] = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Also write the removed-% chart (PNG, SVG or PDF by suffix).")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples per CI (0: no intervals).")] = 1000,
    results_dir: ResultsDir = None,
    replace: Replace = False,
) -> None:
    """Remove the questions a model answers without the video — the papers' blind filters.

    Rules: neptune-qad (rank the options, 3 shuffled seeds, removed when right in >= 2; --asr adds
    the transcript), lvbench (removed iff all models give the same correct answer), text-only
    (removed when any model is right). Decisions are committed as they come: the same command
    resumes after a crash. Example:

        lvu build filter videomme --data ~/data/Video-MME --rule text-only -m openai -a model=gpt-4o -o vmme-clean
    """
    from lvu.construct.filter_files import source_benchmark
    from lvu.construct.filtering import FilterSettings, model_roles, unique_items
    from lvu.construct.store import build_lock, check_rebuild, refuse_other_build

    check_limit(limit)
    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency} is not a positive number of questions — e.g. --concurrency 8")
    settings = FilterSettings(rule=rule, seeds=seeds, threshold=threshold, seed_base=seed_base, asr=asr)
    settings.check(len(model))
    refuse_other_build(out, "blind-filter")  # before any call: OUT is another build's folder
    bench_settings = {**({"data": str(data)} if data else {}), **({"video_dir": str(video_dir)} if video_dir else {}),
                      **parse_kv(setting, "--set")}
    bench = source_benchmark(source, bench_settings)
    samples, bad = bench.loaded()
    if limit is not None:
        samples = samples[:limit]
    args = split_model_args(model, parse_kv(model_arg, "--model-arg"))
    from lvu.runs.store import default_results_dir

    # one builder per output folder; the lock sits beside the filter's ledger, so a killed filter leaves OUT as it was
    with build_lock(out, lock_dir=results_dir if results_dir is not None else default_results_dir()):
        check_rebuild(out, filter_pipeline(settings, len(model)), unique_items(samples),
                      dict(zip(model_roles(len(model)), model)), replace=replace)
        _filter_into(out, bench, model, args, settings, samples, bad, results_dir, concurrency, fresh, plot,
                     bootstrap)


def _filter_into(out: Path, bench: Any, model: list[str], args: list[dict[str, Any]], settings: Any, samples: Any,
                 bad: Any, results_dir: Any, concurrency: int, fresh: bool, plot: Optional[Path], bootstrap: int) -> None:
    import asyncio

    from lvu.analysis.blind import write_filter_summary
    from lvu.analysis_cli import print_summary, print_table
    from lvu.construct.filter_files import write_outputs
    from lvu.construct.runner import audit_benchmark
    from lvu.construct.store import BuildStore

    outcome, config = asyncio.run(_filter(bench, model, args, settings, samples=samples, bad=bad, results_dir=results_dir,
                                  concurrency=concurrency, fresh=fresh))
    for note in outcome.notes:
        err_console.print(f"error: {note}", markup=False, highlight=False)
    if outcome.interrupted or outcome.notes:
        err_console.print(f"{len(outcome.checked)} decisions are in the ledger ({outcome.results_dir}); run the same "
                          "command again to resume — no file written", markup=False, highlight=False)
        raise typer.Exit(130 if outcome.interrupted else 1)
    paths = write_outputs(outcome, out)
    audit_benchmark(paths["kept"], out, say=lambda line: err_console.print(line, markup=False, highlight=False))
    analysis = write_filter_summary(outcome, out, settings, model, bootstrap=bootstrap)
    BuildStore.write_config_to(out, config)  # `lvu build status OUT` / `show OUT ID` open it
    if analysis is not None:
        print_table(analysis.table())
        print_summary(analysis.summary)
        if plot:
            from lvu.analysis.plots import plot_analysis, save

            plot.parent.mkdir(parents=True, exist_ok=True)
            save(plot_analysis(analysis), plot)
            console.print(f"plot: {plot}", markup=False, highlight=False)
    elif not outcome.checked:
        console.print(f"no question to check: {len(outcome.skipped)} skipped (not multiple choice with an answer)",
                      markup=False, highlight=False)
    console.print(f"wrote {paths['kept']} ({len(outcome.kept)} kept), {paths['removed']} ({len(outcome.removed)} "
                  f"removed), {paths['decisions']}, {out / 'summary.json'}, {out / 'leak.json'}", markup=False,
                  highlight=False)
    console.print(f"job {outcome.job_id} in {outcome.results_dir}: {outcome.calls} model calls, {outcome.n_reused} "
                  f"decisions from the ledger, {outcome.wall:.2f} s", markup=False, highlight=False)
    if outcome.bad:  # never silently: the kept file is not the whole input
        err_console.print(f"{len(outcome.bad)} unreadable record(s) are in neither file — fix them and run again "
                          f"(`lvu data check` lists them); first: {outcome.bad[0].error}", markup=False, highlight=False)
    replies, unread = outcome.replies()
    if unread:
        examples = "; ".join(repr(r[:80]) for r in unread[:2])
        err_console.print(f"{len(unread)} of {replies} replies named no option ({len(outcome.unchecked)} question(s) "
                          f"kept unchecked), e.g. {examples}", markup=False, highlight=False)
    if replies and len(unread) * 2 > replies:  # a misconfigured model must not pass for a blind-robust set
        err_console.print("error: most replies named no option — this filter checked little; check the model "
                          "(a chat/instruct model? its prompt template?) with `lvu build show OUT ID`, then run "
                          "again with --fresh", markup=False, highlight=False)
        raise typer.Exit(1)
    if outcome.failed:
        err_console.print(f"{len(outcome.failed)} question(s) undecided (model errors; in neither file) — run the "
                          f"same command again to retry them; first: {outcome.failed[0][0].id}: {outcome.failed[0][1]}",
                          markup=False, highlight=False)
        raise typer.Exit(1)
