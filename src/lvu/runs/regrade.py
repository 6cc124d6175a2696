"""Stored scores follow the scoring code: a record graded by other code is graded again.

A record's prediction and score come from its benchmark's extraction and scoring code at the time
it was answered. When that code changes (an lvu upgrade fixing an extractor, a new
`compat=lmms-eval` release, an edited plugin), a resumed run must not reuse the old scores beside
new ones: the headline would mix two scorers and name neither. So every record carries
`graded_by`, a content hash of that code (`lvu.runs.grading.grading_stamp`), and resuming a run grades the reused
records whose stamp differs again from their stored response — no model call — writing back only
what changed (the stamp is written in any case, so the next resume reads nothing).

Judged records (an LLM judge or LLM extraction decided them) keep their judgement: regrading them
needs the judge, which `lvu judge score` does. Records stored before lvu kept the stamp count as
graded by other code: the first resume after the upgrade grades them once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lvu.benchmarks.base import Benchmark
from lvu.errors import LvuError
from lvu.runs.grading import grade, grading_stamp
from lvu.types import Response, Sample


@dataclass
class Regraded:
    """What regrading a run's stored records did."""

    checked: int = 0
    """Stored records graded by other code (or before lvu kept the stamp), graded again."""
    changed: list[str] = field(default_factory=list)
    """Ids whose prediction, score or error changed."""
    failed: list[str] = field(default_factory=list)
    """Ids the current code cannot grade (now stored with the error: the next run answers them again)."""


_SCORED_FIELDS = ("prediction", "score", "correct", "counted", "explanation", "error")


def regrade_stored(store, run_id: str, bench: Benchmark, samples: dict[str, Sample]) -> Regraded:
    """Grade again the run's completed, unjudged records of `samples` (id -> the loaded sample the
    record answered) whose `graded_by` is not the current `grading_stamp`; write back each one."""
    stamp = grading_stamp(bench)
    done = Regraded()
    rewritten = []
    for ordinal, result in store.stale_graded(run_id, stamp):
        sample = samples.get(result.sample_id)
        if sample is None:  # not in this invocation's data (or changed): its next run redoes it
            continue
        done.checked += 1
        before = {name: getattr(result, name) for name in _SCORED_FIELDS}
        try:
            grade(bench, sample, Response(text=result.response or "", logged=result.logged), result)
        except LvuError as e:
            result.error = str(e)
            done.failed.append(result.sample_id)
        except Exception as e:  # one bad record never stops the others
            result.error = f"{result.sample_id}: {type(e).__name__}: {e}"
            done.failed.append(result.sample_id)
        result.graded_by = stamp
        if {name: getattr(result, name) for name in _SCORED_FIELDS} != before:
            done.changed.append(result.sample_id)
        rewritten.append((result, ordinal))
    store.put_many(run_id, rewritten)  # one transaction: a kill leaves every record as it was
    return done


def say_regraded(done: Regraded, run_id: str) -> str | None:
    """The line a run prints after regrading (None when nothing was graded by other code)."""
    if not done.checked:
        return None
    line = (f"run {run_id}: {done.checked} stored answers were scored by other (or older) lvu code — graded again "
            f"from their stored responses ({len(done.changed)} changed")
    if done.failed:
        line += f"; {len(done.failed)} cannot be graded now and are answered again"
    return line + ")"


def regrade_reused(store, run_id: str, bench: Benchmark, samples: list[Sample], reused: set[str]) -> set[str]:
    """Before a resumed run goes on: grade again its reused records of other code (`regrade_stored`
    over the `reused` ids), say so on stderr, and return the ids to answer again (now ungradable)."""
    if not reused:
        return set()
    done = regrade_stored(store, run_id, bench, {s.id: s for s in samples if s.id in reused})
    line = say_regraded(done, run_id)
    if line is not None:
        from rich.console import Console

        Console(stderr=True, soft_wrap=True).print(line, markup=False, highlight=False)
    return set(done.failed)
