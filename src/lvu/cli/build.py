"""`lvu build ...`: make benchmarks the way the papers made theirs (docs/build.md).

    lvu build run PIPELINE INPUTS -o OUT [--opt K=V] [--model ROLE=NAME]  any pipeline (lvu build list)
    lvu build filter BENCH-OR-FILE --rule neptune-qad -m MODEL -o OUT   the blind filters
    lvu build neptune VIDEOS_DIR -o OUT --llm MODEL                      Neptune's QAD pipeline
    lvu build status OUT / lvu build show OUT VIDEO                      a build's progress, one video
    lvu build needle -b BG -n NEEDLES --task nqa|order|count -o OUT      needles into your videos
    lvu build ladder SOURCES --lengths 180,360,600 -o OUT                MLVU's Time-ladder cuts
    lvu build convert ucf-crime|ego4d-nlq ANNOTATIONS... VIDEOS -o OUT    MLVU's converted tasks (AR, ER)
    lvu build select VIDEOS --rules longvideobench -o OUT              each paper's video selection

Each command lives in its own module (cli/build_filter.py, cli/build_neptune.py) and is
registered here; like every command module this one imports only typer and rich at module level.
"""

from __future__ import annotations

import typer

build_app = typer.Typer(help="Build benchmarks: blind filters, Neptune's QAD pipeline, needle insertion.",
                        no_args_is_help=True)

# Commands register below, one line each: build_app.command("NAME")(function).
from lvu.cli.build_filter import filter_command as _filter_command  # noqa: E402  (typer + rich only)
build_app.command("filter")(_filter_command)
from lvu.cli.build_run import list_command, run_command, show_command, status_command  # noqa: E402
build_app.command("run")(run_command)
build_app.command("list")(list_command)
build_app.command("status")(status_command)
build_app.command("show")(show_command)
from lvu.cli.build_neptune import neptune_command, subsets_command  # noqa: E402
build_app.command("neptune")(neptune_command)
build_app.command("subsets")(subsets_command)
from lvu.cli.build_needle import ladder_command, needle_command  # noqa: E402  (typer + rich only)
build_app.command("needle")(needle_command)
build_app.command("ladder")(ladder_command)
from lvu.cli.build_convert import convert_app  # noqa: E402  (typer + rich only)
build_app.add_typer(convert_app, name="convert")
from lvu.cli.build_select import select_command  # noqa: E402  (typer + rich only)
build_app.command("select")(select_command)
