"""`lvu build run / list / status / show`: any pipeline (built-in, an installed plugin in the
`lvu.pipelines` entry-point group, or module:Class), by one mechanism (lvu.construct.pipeline,
lvu.construct.runner; docs/build.md, "Your own pipeline"). Like every command module this one
imports only typer and rich at module level."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from lvu.cli.common import (KV_HELP, Executor, RayAddress, RayArgs, Replace, check_limit, console, err_console,
                            parse_kv)
from lvu.console_output import fold_cells
from lvu.errors import LvuError


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


def print_status(state: Any, *, title: str) -> None:
    table = Table(title=title, title_justify="left")
    for name, justify in (("stage", "left"), ("model", "left"), ("unit", "left"), ("done", "right"),
                          ("failed", "right"), ("pending", "right"), ("items done/failed/waiting/skipped", "right"),
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


def print_problems(state: Any, *, limit: int | None = None) -> None:
    """Every item a stage dropped (and why) and every failed unit (and its error), one line each;
    `limit`: at most that many of each, then a count."""
    for what, rows in (("skipped", [f"{item} at {stage}: {why}" for stage, item, why in state.skipped()]),
                       ("failed", [f"{stage} {item}" + (f" {unit}" if unit != "-" else "") + f": {error}"
                                   for stage, item, unit, error in state.failures()])):
        if not rows:
            continue
        console.print(f"{what} ({len(rows)}):", highlight=False)
        for row in rows[:limit]:
            console.print(f"  {row}", markup=False, highlight=False)
        if limit is not None and len(rows) > limit:
            console.print(f"  ... and {len(rows) - limit} more (lvu build status shows all)", highlight=False)


def status_command(out: Annotated[Path, typer.Argument(help="A build folder (the -o of lvu build ...).")]) -> None:
    """Per stage: units done / failed / pending, items by state, calls, tokens and wall time; then
    every skipped item with the reason and every failed unit with its error."""
    from lvu.api.building_inspect import build_status

    status = build_status(out)
    state = status.state
    print_status(state, title=f"lvu build {status.pipeline} — {out} ({len(status.items)} item(s))")
    print_problems(state)
    pending = [s for s in state.stages if s.pending]
    if pending:
        console.print(f"pending: {sum(s.pending for s in pending)} unit(s) not run yet, from {pending[0].name} on — "
                      "run the build command again to go on", highlight=False)


def _short(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if width <= 0 or len(text) <= width else text[:width] + f"… ({len(text)} chars)"


def show_command(
    out: Annotated[Path, typer.Argument(help="A build folder.")],
    video: Annotated[str, typer.Argument(help="The item's id (a video's file name without the extension; a question's id).")],
    prompts: Annotated[bool, typer.Option("--prompts", help="Also every call's exact prompt and raw reply.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Outputs in full (default: cut at 300 characters).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Everything stored for the video, as JSON.")] = False,
) -> None:
    """Every stage's output for one item: each unit's result (or error), its calls, tokens, time;
    for an item a stage dropped, the reason and that stage's evidence."""
    from lvu.api.building_inspect import build_item, tokens_of

    dump = build_item(out, video)
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


def _role_models(pairs: list[str], args: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """`--model ROLE=NAME` and `--model-arg ROLE.KEY=VALUE` as role -> (name, args)."""
    models: dict[str, tuple[str, dict[str, Any]]] = {}
    for pair in pairs:
        role, sep, name = pair.partition("=")
        if not sep or not role.strip() or not name.strip():
            raise LvuError(f"--model {pair!r} is not ROLE=NAME — e.g. --model llm=openai (`lvu build list` names "
                           "each pipeline's roles)")
        models[role.strip()] = (name.strip(), {})
    for key, value in parse_kv(args, "--model-arg").items():
        role, dot, arg = key.partition(".")
        if not dot or role not in models:
            raise LvuError(f"--model-arg {key}={value}: write ROLE.KEY=VALUE for a role given with --model "
                           f"({', '.join(models) or 'none given'}) — e.g. --model-arg llm.model=gpt-4o")
        models[role][1][arg] = value
    return models


def run_command(
    pipeline: Annotated[str, typer.Argument(help="A pipeline (`lvu build list`), an installed plugin, or module:Class.")],
    inputs: Annotated[list[str], typer.Argument(help="What the pipeline reads (e.g. a folder of videos; `lvu build list`).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Build folder: the store (lvu.sqlite), build.json and the "
                                                          "pipeline's files. Re-running resumes it.")],
    opt: Annotated[Optional[list[str]], typer.Option("--opt", help=f"A pipeline option, {KV_HELP} (`lvu build list`).")] = None,
    model: Annotated[Optional[list[str]], typer.Option("--model", "-m", help="ROLE=NAME: the model of a role "
                                                                             "(e.g. llm=openai; `lvu build list`).")] = None,
    model_arg: Annotated[Optional[list[str]], typer.Option("--model-arg", "-a", help="ROLE.KEY=VALUE: an argument "
                                                                                     "of a role's model.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Only the first N items.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Units in flight per stage.")] = 4,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
    executor: Executor = "local",
    ray_address: RayAddress = None,
    ray_arg: RayArgs = None,
    replace: Replace = False,
) -> None:
    """Run any build pipeline: its items through its stages, each unit committed as it completes
    (the same command resumes), then its files. Exit codes: 0 all done; 1 some units failed
    (`lvu build status`); 130 interrupted.

        lvu build run neptune videos/ -o nep --opt captioner=ocr --model llm=openai -a llm.model=gpt-4o
        lvu build run my_pipeline:Titles videos/ -o titles --model llm=openai -a llm.model=gpt-4o-mini
    """
    from lvu.api.building import build

    check_limit(limit)
    models = _role_models(model or [], model_arg or [])
    done = build(pipeline, inputs, out, models=models, options=parse_kv(opt or [], "--opt"), limit=limit,
                 concurrency=concurrency, show_progress=not quiet, executor=executor, ray_address=ray_address,
                 ray_args=parse_kv(ray_arg or [], "--ray-arg"), replace=replace,
                 on_note=lambda line: err_console.print(line, highlight=False),
                 arg_flags={role: f"-a {role}." for role in models})
    state, written = done.state, done.written
    print_status(state, title=f"lvu build {done.pipeline} — {out}")
    print_problems(state, limit=20)
    if written:
        console.print("wrote: " + ", ".join(f"{k}: {v}" for k, v in written.items()), markup=False, highlight=False)
    if not state.complete:
        console.print("not complete: run the same command again to resume (failed units are asked again)",
                      highlight=False)
    if state.interrupted:
        raise typer.Exit(130)
    if any(s.failed for s in state.stages):
        raise typer.Exit(1)


def list_command(
    name: Annotated[Optional[str], typer.Argument(help="Only this pipeline (also module:Class).")] = None,
) -> None:
    """Every build pipeline: what it does, its options (type, default, meaning) and model roles."""
    from lvu.api.building_inspect import pipelines

    for info in pipelines(name):
        console.print(f"[bold]{info.name}[/bold] — {info.summary}", highlight=False)
        table = Table(show_edge=False, box=None, pad_edge=False)
        for column in ("option", "type", "default", "meaning"):
            table.add_column(column)
        for option in info.options:
            table.add_row(f"  {option.name}", option.type, option.default_text, option.meaning)
        if info.options:
            console.print(fold_cells(table))
        for role, what in info.models.items():
            console.print(f"  model {role}: {what}", markup=False, highlight=False)
        console.print("")
