"""`lvu build filter`: the papers' blind filters over a benchmark or a JSONL file (docs/build.md,
"Blind filters"). Thin: the rules are lvu.construct.blind_rules, the pipeline lvu.construct.filtering,
the files lvu.construct.filter_files and the summary lvu.analysis.blind."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from lvu.cli.common import (KV_HELP, Replace, ResultsDir, check_limit, console, err_console, parse_kv)
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
    from lvu.construct.filtering import BlindFilter, pipeline_options

    return BlindFilter(pipeline_options(settings, n_models))


def review_app_reviews(queue: Path) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The review app's decisions on a revision queue file (its review file beside it)."""
    try:
        from lvu.web.review_export import reviewed_samples
    except ImportError as e:
        raise LvuError(f"reading the reviews of {queue} needs lvu's review app ({e}) — pip install 'lvu[web]'") from None
    got = reviewed_samples(queue)
    return {r["id"]: r for r in got.accepted}, dict(got.rejected)


async def _filter(bench: Benchmark, names: list[str], args: list[dict[str, Any]], settings: FilterSettings,
                  revise_into: Path | None = None, max_rounds: int = 0,
                  **kwargs: Any) -> tuple[FilterOutcome, dict[str, Any]]:
    """The outcome (with `revise_into`: its revision's too), and the build.json that lets `lvu
    build status OUT` open the filter's folder."""
    from lvu.construct.filtering import filter_samples, model_roles, unique_items
    from lvu.construct.revise import revise_flagged
    from lvu.construct.store import build_config
    from lvu.models.probes import build_model

    models: list[Model] = []
    try:
        for name, a in zip(names, args):
            models.append(build_model(name, a))
        outcome = await filter_samples(bench, models, settings, **kwargs)
        if revise_into is not None and not outcome.interrupted and not outcome.notes:
            outcome.revision = await revise_flagged(
                outcome, models, settings, revise_into, max_rounds=max_rounds, reviews=review_app_reviews, concurrency=kwargs["concurrency"],
                fresh=kwargs["fresh"], show_progress=kwargs.get("show_progress", True))
            outcome.calls += outcome.revision.calls
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
    allow_single: Annotated[bool, typer.Option("--allow-single", help="lvbench: allow one model (the paper used two, GLM-4 and GPT-4, and removed a question only when both were right); the rule becomes 'removed when the model is right' and summary.json says single_model: true.")] = False,
    revise: Annotated[bool, typer.Option("--revise", help="Send flagged questions for revision instead of removing them (Video-MME): they wait in OUT/revision/questions.jsonl for `lvu review OUT/revision --protocol videomme-revise`; the same command run again filters the revisions (kept, or back for another round) and drops the rejected ones.")] = False,
    max_rounds: Annotated[Optional[int], typer.Option("--max-rounds", help="With --revise: revisions a question gets; one still flagged after this many is dropped (default 3).")] = None,
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
    the transcript), lvbench (LVBench's evaluation prompt; removed iff both models give the same
    correct answer), text-only (removed when any model is right; --revise sends it for revision
    instead). Decisions are committed as they come: the same command resumes after a crash. Example:

        lvu build filter videomme --data ~/data/Video-MME --rule text-only -m openai -a model=gpt-4o -o vmme-clean
    """
    from lvu.construct.filter_files import source_benchmark
    from lvu.construct.filtering import FilterSettings, model_roles, unique_items
    from lvu.construct.store import build_lock, check_rebuild, refuse_other_build

    check_limit(limit)
    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency} is not a positive number of questions — e.g. --concurrency 8")
    settings = FilterSettings(rule=rule, seeds=seeds, threshold=threshold, seed_base=seed_base, asr=asr,
                              allow_single=allow_single)
    settings.check(len(model))
    from lvu.construct.revise import DEFAULT_MAX_ROUNDS

    if max_rounds is not None and not revise:
        raise LvuError("--max-rounds counts revision rounds: pass it with --revise")
    rounds = DEFAULT_MAX_ROUNDS if max_rounds is None else max_rounds
    if rounds < 1:
        raise LvuError(f"--max-rounds {rounds} — give at least 1 round of revision (default {DEFAULT_MAX_ROUNDS})")
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
        if not revise and not replace:
            refuse_dropping_revisions(out)
        _filter_into(out, bench, model, args, settings, samples, bad, results_dir, concurrency, fresh, plot,
                     bootstrap, rounds if revise else None)


def refuse_dropping_revisions(out: Path) -> None:
    """A filter without --revise into a folder revised before would put the revisions' questions
    back as removed and forget the kept revisions: refused, in one line."""
    import json

    try:
        revised = "revision" in json.loads((out / "summary.json").read_text())
    except (OSError, ValueError, TypeError):
        return
    if revised:
        raise LvuError(f"{out} holds a revision loop (--revise; {out / 'revision'}) — run its command with --revise "
                       "to go on, or pass --replace to filter without revising; nothing was changed")


def _filter_into(out: Path, bench: Any, model: list[str], args: list[dict[str, Any]], settings: Any, samples: Any,
                 bad: Any, results_dir: Any, concurrency: int, fresh: bool, plot: Optional[Path], bootstrap: int,
                 max_rounds: int | None) -> None:
    import asyncio

    from lvu.analysis.blind import write_filter_summary
    from lvu.cli.analysis import print_summary, print_table
    from lvu.construct.filter_files import write_outputs
    from lvu.construct.revise import RevisionOutcome, write_queue
    from lvu.construct.runner import audit_benchmark
    from lvu.construct.store import BuildStore

    outcome, config = asyncio.run(_filter(bench, model, args, settings, revise_into=None if max_rounds is None else out,
                                          max_rounds=max_rounds or 0, samples=samples, bad=bad,
                                          results_dir=results_dir, concurrency=concurrency, fresh=fresh))
    revision = outcome.revision
    assert revision is None or isinstance(revision, RevisionOutcome)  # what _filter's revise_flagged put there
    if revision is not None and revision.stopped:
        outcome.notes.append(revision.stopped)
    for note in outcome.notes:
        err_console.print(f"error: {note}", markup=False, highlight=False)
    if outcome.interrupted or outcome.notes or (revision is not None and revision.interrupted):
        err_console.print(f"{len(outcome.checked)} decisions are in the ledger ({outcome.results_dir}); run the same "
                          "command again to resume — no file written", markup=False, highlight=False)
        raise typer.Exit(130 if outcome.interrupted else 1)
    paths = write_outputs(outcome, out)
    queue = write_queue(revision) if revision is not None else None
    audit_benchmark(paths["kept"], out, say=lambda line: err_console.print(line, markup=False, highlight=False))
    extra: dict[str, Any] = {}
    if settings.rule == "lvbench":
        extra["single_model"] = len(model) == 1
    if revision is not None:
        kept_first = len(outcome.kept) - len(revision.having("kept"))
        extra.update(removed=len(revision.having("dropped")), flagged=len(outcome.removed),
                     revision={"kept_first_pass": kept_first, **revision.counts()},
                     groups_measure="removed_pct: the share the first pass flagged (sent for revision)")
    analysis = write_filter_summary(outcome, out, settings, model, bootstrap=bootstrap, extra=extra)
    BuildStore.write_config_to(out, config)  # `lvu build status OUT` / `show OUT ID` open it
    if analysis is not None:
        if revision is not None:
            console.print("first pass (--revise: 'removed' below = flagged and sent for revision):", markup=False,
                          highlight=False)
        print_table(analysis.table())
        print_summary([("flagged, sent for revision" if revision is not None and key == "removed" else key, value)
                       for key, value in analysis.summary])
        if plot:
            from lvu.analysis.plots import plot_analysis, save

            plot.parent.mkdir(parents=True, exist_ok=True)
            save(plot_analysis(analysis), plot)
            console.print(f"plot: {plot}", markup=False, highlight=False)
    elif not outcome.checked:
        console.print(f"no question to check: {len(outcome.skipped)} skipped (not multiple choice with an answer)",
                      markup=False, highlight=False)
    if extra.get("single_model"):
        err_console.print("note: --allow-single: LVBench's rule reduced to one model — a question is removed when "
                          "this model is right without the video (the paper: only when GLM-4 and GPT-4 both were)",
                          markup=False, highlight=False)
    if revision is not None:
        _say_revision(revision, len(outcome.kept) - len(revision.having("kept")), queue)
    removed = len(outcome.removed_samples())
    console.print(f"wrote {paths['kept']} ({len(outcome.kept)} kept), {paths['removed']} ({removed} "
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
    if revision is not None and revision.having("failed"):
        first = revision.having("failed")[0]
        err_console.print(f"{len(revision.having('failed'))} revision(s) undecided (model errors) — run the same command "
                          f"again to retry them; first: {first.id}: {first.why}", markup=False, highlight=False)
        raise typer.Exit(1)
    if outcome.failed:
        err_console.print(f"{len(outcome.failed)} question(s) undecided (model errors; in neither file) — run the "
                          f"same command again to retry them; first: {outcome.failed[0][0].id}: {outcome.failed[0][1]}",
                          markup=False, highlight=False)
        raise typer.Exit(1)


def _say_revision(revision: Any, kept_first: int, queue: Path | None) -> None:
    """The revision loop in a few lines: kept, dropped, waiting, and what to do next."""
    c = revision.counts()
    console.print(f"revision: {kept_first} kept on the first pass; {c['flagged']} flagged: {c['revised']} revised, "
                  f"{c['kept_after_revision']} kept after revision, "
                  f"{c['dropped_by_reviewer'] + c['dropped_after_max_rounds']} dropped ({c['dropped_by_reviewer']} by "
                  f"the reviewer, {c['dropped_after_max_rounds']} still flagged after {c['max_rounds']} round(s)), "
                  f"{c['waiting']} waiting for revision"
                  + (f" ({', '.join(f'round {r}: {n}' for r, n in c['waiting_by_round'].items())})" if c["waiting"]
                     else ""), markup=False, highlight=False)
    for note in revision.notes:
        err_console.print(f"not a revision: {note}", markup=False, highlight=False)
    if c["waiting"] and queue is not None:
        console.print(f"revise them: lvu review {queue.parent} --protocol videomme-revise — then run this command "
                      "again", markup=False, highlight=False)
