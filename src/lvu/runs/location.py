"""Where results are: the one rule every command follows (`results_location`), its wording for
every `--results-dir` help, the line each command prints, and the error when there are no runs.

Imports only the standard library, so the command modules (cli/common.py) and the viewer's command
(web/serve.py) use it without loading the store at `lvu --help` time. lvu.runs.store re-exports
these names. docs/runs.md, "Where results are".
"""

from __future__ import annotations

import os
from pathlib import Path

from lvu.errors import LvuError

DB_NAME = "lvu.sqlite"
"""The run store's file inside a results directory (lvu.runs.store)."""

RESULTS_DIR_RULE = ("default: $LVU_RESULTS_DIR, else the nearest lvu-results folder in the current folder or "
                    "above it (as git finds its repository), else ./lvu-results, which only a run creates; "
                    "every command prints which (docs/runs.md, Where results are)")
"""The one rule for where runs are (lvu.runs.store.results_location), as every --results-dir help says it."""

RESULTS_DIR_HELP = f"Where runs are stored ({RESULTS_DIR_RULE})."


RESULTS_FOLDER = "lvu-results"


def results_location(results_dir: str | Path | None = None) -> tuple[Path, str]:
    """(the results directory, why it is that one), by one rule for every command:
    `--results-dir` wins, then `$LVU_RESULTS_DIR`, then the nearest `lvu-results` folder in the
    current folder or one above it (as git finds its repository), else `./lvu-results`, which
    only a run creates. docs/runs.md, "Where results are"."""
    if results_dir is not None:
        return Path(results_dir), "--results-dir"
    env = os.environ.get("LVU_RESULTS_DIR")
    if env:
        return Path(env).expanduser(), "$LVU_RESULTS_DIR"
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / RESULTS_FOLDER).is_dir():
            if folder == here:  # relative, as printed paths (report: lvu-results/reports/...) always were
                return Path(RESULTS_FOLDER), "in the current folder"
            return folder / RESULTS_FOLDER, f"the nearest {RESULTS_FOLDER} above {here}"
    return Path(RESULTS_FOLDER), f"no {RESULTS_FOLDER} in {here} or above: a run creates it here"


def default_results_dir() -> Path:
    """The results directory when no --results-dir is given (`results_location`)."""
    return results_location(None)[0]


def location_line(directory: Path, why: str) -> str:
    """'results: /abs/lvu-results (the nearest lvu-results above /abs/sub)': the one line every
    read command prints (to stderr) so nobody wonders which store they are looking at."""
    return f"results: {directory.absolute()} ({why})"


def existing_results(results_dir: str | Path | None = None) -> tuple[Path, str]:
    """`results_location`, for commands that need runs already stored (every read command, and
    `results tag/delete`, `judge score`): a LvuError saying where lvu looked, and why there, when
    that folder holds no store. Creates nothing."""
    directory, why = results_location(results_dir)
    if not (directory / DB_NAME).is_file():
        raise LvuError(no_runs_message(directory, why))
    return directory, why


def no_runs_message(directory: Path, why: str) -> str:
    """One line: where lvu looked for runs, why there, and what to do (docs/runs.md, Where results are)."""
    where = directory.absolute()
    if why == "--results-dir":
        return (f"no runs: --results-dir {directory} holds no run store ({where / DB_NAME} is missing) — pass "
                "the folder that `lvu run` wrote to (it prints `results: DIR`)")
    if why == "$LVU_RESULTS_DIR":
        return (f"no runs: $LVU_RESULTS_DIR is {directory}, which holds no run store ({DB_NAME}) — unset it, or "
                "point it (or --results-dir) at the folder `lvu run` wrote to")
    if not directory.is_dir():
        return (f"no runs: no {RESULTS_FOLDER} in {Path.cwd()} or above and $LVU_RESULTS_DIR is unset — cd to the "
                "folder you ran lvu in, or pass --results-dir DIR")
    return (f"no runs: {where} ({why}) holds no run store ({DB_NAME}) yet — start a run with `lvu run`, or "
            "pass --results-dir DIR")
