"""The library's entry points, one module per job (docs/api.md); `import lvu` exposes the main ones:

    running.py   run (one benchmark × model, then its report), run_planned (specs, sweeps)
    planning.py  the runs a spec file, a sweep or several benchmarks plan
    records.py   read_run (a stored run: spec, info, per-sample records)
    results.py   list, show, tag, delete, submit and export stored runs
    scoring.py   score (saved predictions, nothing stored), import_results (stored as a run)
    analysis.py  report, compare, analyse, the leak audit, the temporal certificate
    judging.py   judge (post-hoc judging of a stored run), judge calibration and dev-set evaluation
    building.py  build (a construction pipeline); building_*.py the blind filters, the build
                 shortcuts (neptune, needle, select, ...), a build's status
    review.py    rater review of a build: open, serve, status, export; the results viewer
    catalog.py   the registered benchmarks and models, a benchmark's settings
    data.py      checking release files, the papers' data tables
    media.py     frames, speech transcripts, the frame cache
    location.py  where results are (one rule); stopping.py how a command stops on Ctrl-C

Every `lvu` command parses its options, calls one of these and prints (tests/test_cli_thin.py keeps
it so); so can Python:

    import lvu
    summary = lvu.run("haystack", "ocr-match", limit=20)
    print(summary.tables[0].rows, lvu.read_run(summary.run_id).status)

They sit above the run engine (lvu.runs), the construction pipelines (lvu.construct) and the
reports (lvu.analysis), so a run ends with its report while the engine knows nothing of reports
(docs/architecture.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for checkers and editors; at run time __getattr__ below imports each on first use
    from lvu.api.analysis import CompareResult, ReportResult, compare, report
    from lvu.api.building import BuildResult, build
    from lvu.api.judging import JudgeResult, judge
    from lvu.api.records import RunRecord, read_run
    from lvu.api.running import Outcome, run, run_planned, write_run_report
    from lvu.api.scoring import ImportResult, ScoreResult, import_results, score
    from lvu.runs.options import RunOptions
    from lvu.api.catalog import Catalog, Part, SettingDoc, benchmark_settings, list_parts
    from lvu.api.data import StatsResult, benchmark_and_data, check_data, data_stats
    from lvu.api.location import (RESULTS_DIR_HELP, RESULTS_DIR_RULE, existing_results, location_line, results_location,
                                  where_results_are)
    from lvu.api.media import (FramesResult, PruneResult, WarmResult, bench_decode, cache_info, extract_frames,
                               prune_cache, transcribe_to_srt, warm_cache)
    from lvu.api.planning import Plan, plan_benchmarks, plan_spec, plan_sweep, plan_sweep_file
    from lvu.api.running import headline_of, scores_of, tag_run
    from lvu.api.stopping import bounded_exit, note_stop_signal, stop_signal
    from lvu.api.building import run_pipeline
    from lvu.api.building_filter import FilterResult, build_filter
    from lvu.api.building_inspect import BuildStatus, PipelineInfo, PipelineOption, build_item, build_status, pipelines
    from lvu.api.building_shortcuts import (QuestionsIncomplete, build_convert, build_ladder, build_needle, build_neptune,
                                            build_select, build_subsets, rules_text, selection_rules)
    from lvu.api.analysis import (ANALYSES, AnalysisResult, CertificateResult, LeakAudit, analyse, cell_text, certificate,
                                  leak_audit)
    from lvu.api.judging import (DevEvaluation, DevJudged, JudgeCalibration, as_judge, calibrate_judge, evaluate_dev,
                                 judge_dev, paper_judge_reference)
    from lvu.api.results import (EXPORT_FIELDS, ListedRun, RunDeletion, RunList, RunView, TagChange, check_export_format,
                                 delete_run, export_rows, list_runs, sample_of, set_run_tag, submit_run, view_run,
                                 write_export)
    from lvu.api.review import (ReviewExport, ReviewLink, ReviewSession, ReviewStats, export_review, open_review,
                                review_stats, serve_review, view)

_WHERE: dict[str, str] = {  # each name -> the module it comes from (imported on first use: `lvu --help` stays light)
    'ANALYSES': 'lvu.api.analysis',
    'AnalysisResult': 'lvu.api.analysis',
    'BuildResult': 'lvu.api.building',
    'BuildStatus': 'lvu.api.building_inspect',
    'Catalog': 'lvu.api.catalog',
    'CertificateResult': 'lvu.api.analysis',
    'CompareResult': 'lvu.api.analysis',
    'DevEvaluation': 'lvu.api.judging',
    'DevJudged': 'lvu.api.judging',
    'EXPORT_FIELDS': 'lvu.api.results',
    'FilterResult': 'lvu.api.building_filter',
    'FramesResult': 'lvu.api.media',
    'ImportResult': 'lvu.api.scoring',
    'JudgeCalibration': 'lvu.api.judging',
    'JudgeResult': 'lvu.api.judging',
    'LeakAudit': 'lvu.api.analysis',
    'ListedRun': 'lvu.api.results',
    'Outcome': 'lvu.api.running',
    'Part': 'lvu.api.catalog',
    'PipelineInfo': 'lvu.api.building_inspect',
    'PipelineOption': 'lvu.api.building_inspect',
    'Plan': 'lvu.api.planning',
    'PruneResult': 'lvu.api.media',
    'QuestionsIncomplete': 'lvu.api.building_shortcuts',
    'RESULTS_DIR_HELP': 'lvu.api.location',
    'RESULTS_DIR_RULE': 'lvu.api.location',
    'ReportResult': 'lvu.api.analysis',
    'ReviewExport': 'lvu.api.review',
    'ReviewLink': 'lvu.api.review',
    'ReviewSession': 'lvu.api.review',
    'ReviewStats': 'lvu.api.review',
    'RunDeletion': 'lvu.api.results',
    'RunList': 'lvu.api.results',
    'RunOptions': 'lvu.runs.options',
    'RunRecord': 'lvu.api.records',
    'RunView': 'lvu.api.results',
    'ScoreResult': 'lvu.api.scoring',
    'SettingDoc': 'lvu.api.catalog',
    'StatsResult': 'lvu.api.data',
    'TagChange': 'lvu.api.results',
    'WarmResult': 'lvu.api.media',
    'analyse': 'lvu.api.analysis',
    'as_judge': 'lvu.api.judging',
    'bench_decode': 'lvu.api.media',
    'benchmark_and_data': 'lvu.api.data',
    'benchmark_settings': 'lvu.api.catalog',
    'bounded_exit': 'lvu.api.stopping',
    'build': 'lvu.api.building',
    'build_convert': 'lvu.api.building_shortcuts',
    'build_filter': 'lvu.api.building_filter',
    'build_item': 'lvu.api.building_inspect',
    'build_ladder': 'lvu.api.building_shortcuts',
    'build_needle': 'lvu.api.building_shortcuts',
    'build_neptune': 'lvu.api.building_shortcuts',
    'build_select': 'lvu.api.building_shortcuts',
    'build_status': 'lvu.api.building_inspect',
    'build_subsets': 'lvu.api.building_shortcuts',
    'cache_info': 'lvu.api.media',
    'calibrate_judge': 'lvu.api.judging',
    'cell_text': 'lvu.api.analysis',
    'certificate': 'lvu.api.analysis',
    'check_data': 'lvu.api.data',
    'check_export_format': 'lvu.api.results',
    'compare': 'lvu.api.analysis',
    'data_stats': 'lvu.api.data',
    'delete_run': 'lvu.api.results',
    'evaluate_dev': 'lvu.api.judging',
    'existing_results': 'lvu.api.location',
    'export_review': 'lvu.api.review',
    'export_rows': 'lvu.api.results',
    'extract_frames': 'lvu.api.media',
    'headline_of': 'lvu.api.running',
    'import_results': 'lvu.api.scoring',
    'judge': 'lvu.api.judging',
    'judge_dev': 'lvu.api.judging',
    'leak_audit': 'lvu.api.analysis',
    'list_parts': 'lvu.api.catalog',
    'list_runs': 'lvu.api.results',
    'location_line': 'lvu.api.location',
    'note_stop_signal': 'lvu.api.stopping',
    'open_review': 'lvu.api.review',
    'paper_judge_reference': 'lvu.api.judging',
    'pipelines': 'lvu.api.building_inspect',
    'plan_benchmarks': 'lvu.api.planning',
    'plan_spec': 'lvu.api.planning',
    'plan_sweep': 'lvu.api.planning',
    'plan_sweep_file': 'lvu.api.planning',
    'prune_cache': 'lvu.api.media',
    'read_run': 'lvu.api.records',
    'report': 'lvu.api.analysis',
    'results_location': 'lvu.api.location',
    'review_stats': 'lvu.api.review',
    'rules_text': 'lvu.api.building_shortcuts',
    'run': 'lvu.api.running',
    'run_pipeline': 'lvu.api.building',
    'run_planned': 'lvu.api.running',
    'sample_of': 'lvu.api.results',
    'score': 'lvu.api.scoring',
    'scores_of': 'lvu.api.running',
    'selection_rules': 'lvu.api.building_shortcuts',
    'serve_review': 'lvu.api.review',
    'set_run_tag': 'lvu.api.results',
    'stop_signal': 'lvu.api.stopping',
    'submit_run': 'lvu.api.results',
    'tag_run': 'lvu.api.running',
    'transcribe_to_srt': 'lvu.api.media',
    'view': 'lvu.api.review',
    'view_run': 'lvu.api.results',
    'warm_cache': 'lvu.api.media',
    'where_results_are': 'lvu.api.location',
    'write_export': 'lvu.api.results',
    'write_run_report': 'lvu.api.running',
}
__all__ = [  # the same names as _WHERE (tests/test_api_public.py)
    "ANALYSES", "AnalysisResult", "BuildResult", "BuildStatus", "Catalog", "CertificateResult", "CompareResult",
    "DevEvaluation", "DevJudged", "EXPORT_FIELDS", "FilterResult", "FramesResult", "ImportResult",
    "JudgeCalibration", "JudgeResult", "LeakAudit", "ListedRun", "Outcome", "Part", "PipelineInfo",
    "PipelineOption", "Plan", "PruneResult", "QuestionsIncomplete", "RESULTS_DIR_HELP", "RESULTS_DIR_RULE",
    "ReportResult", "ReviewExport", "ReviewLink", "ReviewSession", "ReviewStats", "RunDeletion", "RunList",
    "RunOptions", "RunRecord", "RunView", "ScoreResult", "SettingDoc", "StatsResult", "TagChange", "WarmResult",
    "analyse", "as_judge", "bench_decode", "benchmark_and_data", "benchmark_settings", "bounded_exit", "build",
    "build_convert", "build_filter", "build_item", "build_ladder", "build_needle", "build_neptune",
    "build_select", "build_status", "build_subsets", "cache_info", "calibrate_judge", "cell_text",
    "certificate", "check_data", "check_export_format", "compare", "data_stats", "delete_run", "evaluate_dev",
    "existing_results", "export_review", "export_rows", "extract_frames", "headline_of", "import_results",
    "judge", "judge_dev", "leak_audit", "list_parts", "list_runs", "location_line", "note_stop_signal",
    "open_review", "paper_judge_reference", "pipelines", "plan_benchmarks", "plan_spec", "plan_sweep",
    "plan_sweep_file", "prune_cache", "read_run", "report", "results_location", "review_stats", "rules_text",
    "run", "run_pipeline", "run_planned", "sample_of", "score", "scores_of", "selection_rules", "serve_review",
    "set_run_tag", "stop_signal", "submit_run", "tag_run", "transcribe_to_srt", "view", "view_run",
    "warm_cache", "where_results_are", "write_export", "write_run_report",
]


def __getattr__(name: str) -> Any:
    """An entry point, imported from its module the first time it is used (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'lvu.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
