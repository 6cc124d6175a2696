"""The library's entry points, one module per job (docs/api.md); `import lvu` exposes the same names:

    running.py   run (one benchmark × model, then its report), run_planned (specs, sweeps)
    records.py   read_run (a stored run: spec, info, per-sample records)
    scoring.py   score (saved predictions, nothing stored), import_results (stored as a run)
    analysis.py  report, compare
    judging.py   judge (post-hoc judging of a stored run)
    building.py  build (a construction pipeline)

The `lvu` commands call these and print; so can Python:

    import lvu
    summary = lvu.run("haystack", "ocr-match", limit=20)
    print(summary.tables[0].rows, lvu.read_run(summary.run_id).status)

They sit above the run engine (lvu.runs), the construction pipelines (lvu.construct) and the
reports (lvu.analysis), so a run ends with its report while the engine knows nothing of reports
(docs/architecture.md).
"""

from lvu.api.analysis import CompareResult, ReportResult, compare, report
from lvu.api.building import BuildResult, build
from lvu.api.judging import JudgeResult, judge
from lvu.api.records import RunRecord, read_run
from lvu.api.running import Outcome, run, run_planned, write_run_report
from lvu.api.scoring import ImportResult, ScoreResult, import_results, score
from lvu.runs.options import RunOptions

__all__ = ["BuildResult", "CompareResult", "ImportResult", "JudgeResult", "Outcome", "ReportResult", "RunOptions",
           "RunRecord", "ScoreResult", "build", "compare", "import_results", "judge", "read_run", "report", "run",
           "run_planned", "score", "write_run_report"]
