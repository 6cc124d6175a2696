"""The library's entry points, one module per job: running.py (`run`, `run_planned`). The `lvu`
command calls these and prints; so can Python:

    from lvu.api import run
    summary = run("haystack", "ocr-match", limit=20)
    print(summary.tables[0].rows, summary.report_path)

They sit above the run engine (lvu.runs), the construction pipelines (lvu.construct) and the
reports (lvu.analysis), so a run ends with its report while the engine knows nothing of reports
(docs/architecture.md).
"""

from lvu.api.running import Outcome, progress_line, run, run_options, run_planned, write_run_report

__all__ = ["Outcome", "progress_line", "run", "run_options", "run_planned", "write_run_report"]
