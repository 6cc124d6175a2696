"""`lvu build filter`: the papers' blind filters over a benchmark or a JSONL file (docs/build.md,
"Blind filters"). Thin: lvu.api.build_filter filters, revises, writes the files and audits them;
this module parses the flags and prints what it returns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from lvu.cli.common import (KV_HELP, Replace, ResultsDir, check_limit, console, err_console, parse_kv)
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.api.building_filter import FilterResult

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


def review_app_reviews(queue: Path) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The review app's decisions on a revision queue file (lvu.api.building_filter's; a name here so
    a test can stand in for the reviewers)."""
    from lvu.api.building_filter import review_app_reviews as reviews

    return reviews(queue)


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
    from lvu.api.building_filter import build_filter

    check_limit(limit)
    bench_settings = {**({"data": str(data)} if data else {}), **({"video_dir": str(video_dir)} if video_dir else {}),
                      **parse_kv(setting, "--set")}
    args = split_model_args(model, parse_kv(model_arg, "--model-arg"))
    done = build_filter(source, rule, out, model, model_args=args, seeds=seeds, threshold=threshold,
                        seed_base=seed_base, asr=asr, allow_single=allow_single, revise=revise, max_rounds=max_rounds,
                        settings=bench_settings, limit=limit, concurrency=concurrency, fresh=fresh, plot=plot,
                        bootstrap=bootstrap, results_dir=results_dir, replace=replace,
                        reviews=lambda queue: review_app_reviews(queue),  # looked up per call: tests replace it
                        on_note=lambda line: err_console.print(line, markup=False, highlight=False))
    _say(done)


def _say(done: FilterResult) -> None:
    """The filter's closing lines and exit code, from what build_filter returns."""
    from lvu.cli.analysis import print_summary, print_table

    outcome, revision, out = done.outcome, done.revision, done.out
    for note in outcome.notes:
        err_console.print(f"error: {note}", markup=False, highlight=False)
    if not done.written:
        err_console.print(f"{len(outcome.checked)} decisions are in the ledger ({outcome.results_dir}); run the same "
                          "command again to resume — no file written", markup=False, highlight=False)
        raise typer.Exit(130 if outcome.interrupted else 1)
    paths, analysis = done.paths, done.analysis
    if analysis is not None:
        if revision is not None:
            console.print("first pass (--revise: 'removed' below = flagged and sent for revision):", markup=False,
                          highlight=False)
        print_table(analysis.table())
        print_summary([("flagged, sent for revision" if revision is not None and key == "removed" else key, value)
                       for key, value in analysis.summary])
        if done.plot:
            console.print(f"plot: {done.plot}", markup=False, highlight=False)
    elif not outcome.checked:
        console.print(f"no question to check: {len(outcome.skipped)} skipped (not multiple choice with an answer)",
                      markup=False, highlight=False)
    if done.single_model:
        err_console.print("note: --allow-single: LVBench's rule reduced to one model — a question is removed when "
                          "this model is right without the video (the paper: only when GLM-4 and GPT-4 both were)",
                          markup=False, highlight=False)
    if revision is not None:
        _say_revision(revision, done.kept_first_pass, done.queue)
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
