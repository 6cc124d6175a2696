"""`lvu build select VIDEOS --rules longvideobench|videomme|lvbench|neptune|FILE -o OUT`: each paper's
video selection (docs/build.md, "Selecting videos"). Thin: lvu.api.build_select runs the `select`
pipeline (resumable, `lvu build status/show OUT` open it); like every command module this one imports only typer and rich at module level."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from lvu.cli.common import KV_HELP, Replace, console, err_console, parse_kv
from lvu.errors import LvuError


def _targets(pairs: list[str], rules: Any) -> Any:
    """The rules with `--target GROUP=N` (GROUP `all`: every group) applied."""
    groups = {g.name: g for g in rules.groups}
    changed = dict(groups)
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not value.strip().isdigit():
            raise LvuError(f"--target {pair!r}: use GROUP=N, e.g. --target {next(iter(groups), 'all')}=50")
        if name != "all" and name not in groups:
            raise LvuError(f"--target {pair!r}: no group {name!r} in rules {rules.name} — its groups: "
                           f"{', '.join(groups) or 'none (use all)'}")
        for g in (groups.values() if name == "all" else [groups[name]]):
            changed[g.name] = g.model_copy(update={"target": int(value)})
    if not groups and pairs:
        raise LvuError(f"--target: rules {rules.name} have no duration groups — edit a copy of the rules "
                       "(--print-rules) to add some")
    return rules.model_copy(update={"groups": [changed[g.name] for g in rules.groups]})


def select_command(
    videos_dir: Annotated[Optional[Path], typer.Argument(help="Folder of videos, sub-folders too (a sub-folder "
                                                              "can be the category); <stem>.srt/.vtt, "
                                                              "<stem>.<lang>.srt and <stem>.info.json beside "
                                                              "them are read.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Build folder: selected.jsonl, evidence.jsonl, "
                                                                   "val/test.jsonl, summary.json and the store. "
                                                                   "Re-running resumes it.")] = None,
    rules: Annotated[str, typer.Option("--rules", help="longvideobench, videomme, lvbench, neptune, or a "
                                                       "YAML/JSON file of the same fields (--print-rules).")] = "longvideobench",
    print_rules: Annotated[bool, typer.Option("--print-rules", help="Print the rules as YAML (to copy and edit) "
                                                                    "and exit.")] = False,
    target: Annotated[Optional[list[str]], typer.Option("--target", help="GROUP=N: sample N videos of that "
                                                        "duration group (all=N: every group).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seeds the sampling and the val/test split.")] = 0,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="Date upload ages count to (YYYY-MM-DD). "
                                                 "Default: the date OUT recorded, else today.")] = None,
    quality: Annotated[Optional[str], typer.Option("--quality", help="Quality model (registered name or "
                                                   "module:Class) scoring frames in [0, 1]; the rules' "
                                                   "threshold (LongVideoBench: > 0.25) applies only with one.")] = None,
    quality_arg: Annotated[Optional[list[str]], typer.Option("--quality-arg", help=f"--quality's arguments: {KV_HELP}")] = None,
    language_model: Annotated[Optional[str], typer.Option("--language-model", help="A local multilingual "
                                                          "faster-whisper model folder: identifies the spoken "
                                                          "language of videos no subtitle or info.json names.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Videos probed at once.")] = 4,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
    replace: Replace = False,
) -> None:
    """Select videos by a paper's rules: duration groups with targets, resolution, subtitles and their
    language, info.json metadata (views, upload age, safety), an optional quality model; seeded
    sampling across categories and a stratified val/test split. One evidence record per video.

        lvu build select videos/ --rules longvideobench -o lvb-select
        lvu build show lvb-select VIDEO_ID
    """
    from lvu.api.building_shortcuts import build_select, rules_text, selection_rules

    loaded = _targets(target or [], selection_rules(rules))
    if print_rules:
        console.print(rules_text(loaded), markup=False, highlight=False, end="")
        return
    if videos_dir is None or out is None:
        raise LvuError("lvu build select: pass the videos folder and -o OUT (or --print-rules)")
    from lvu.cli.build_run import print_problems

    done = build_select(videos_dir, out, loaded, seed=seed, as_of=as_of, quality=quality,
                        quality_args=parse_kv(quality_arg or [], "--quality-arg"), language_model=language_model,
                        concurrency=concurrency, show_progress=not quiet, replace=replace,
                        on_note=lambda line: err_console.print(line, highlight=False))
    state, written = done.state, done.written
    if not written:
        print_problems(state, limit=20)
        console.print("not complete: run the same command again to resume", highlight=False)
        raise typer.Exit(130 if state.interrupted else 1)
    summary = json.loads(Path(written["summary"]).read_text(encoding="utf-8"))
    _print_summary(summary, out)
    if any(s.failed for s in state.stages):
        print_problems(state, limit=20)
        raise typer.Exit(1)


def _print_summary(summary: dict[str, Any], out: Path) -> None:
    from rich.table import Table

    table = Table(title=f"{summary['rules']}: {summary['selected']} of {summary['videos']} video(s) selected",
                  title_justify="left")
    for name in ("group", "target", "passed the rules", "selected", "val", "test"):
        table.add_column(name, justify="left" if name == "group" else "right")
    for group, c in summary["groups"].items():
        table.add_row(str(group), str(c.get("target") if c.get("target") is not None else "all"),
                      str(c.get("passed", 0)), str(c.get("selected", 0)), str(c.get("val", "-")), str(c.get("test", "-")))
    console.print(table)
    if summary["dropped_by"]:
        console.print("dropped, by the first rule failed: " + ", ".join(f"{k} {v}" for k, v in
                                                                     sorted(summary["dropped_by"].items())),
                      highlight=False)
    for line in (f"{out / 'selected.jsonl'}: the selected videos; {out / 'evidence.jsonl'}: every video's checks",
                 f"lvu build show {out} VIDEO_ID: one video's evidence"):
        console.print(line, markup=False, highlight=False)
