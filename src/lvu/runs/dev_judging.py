"""Judging a labelled dev set (`lvu judge calibrate` / `lvu judge eval --dev`) as a ledger job.

The job is the judge (`Judge.identity`: its model, the arguments that change answers and its
threshold) on the dev file's content (sha256); an item is one row, keyed by what the judge is
shown (question, reference, candidate), the equivalence prompt's version and the judge. Rows run
on the stage runner (`concurrency` calls in flight, a progress line) and each judgement is
committed as it arrives, so an interrupted calibration resumes where it stopped; a row edited in
the file (a new file hash: a new job) is the only one judged again — the unchanged rows' judgements
are taken from the earlier job (JobLedger.reuse). lvu.scoring.judges.judge_rows is the same work in
memory (scoring sits below runs and knows no ledger). docs/judges.md, "Dev sets on the ledger".
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

from lvu.progress import LoggedProgress
from lvu.runs.ledger import JobLedger, item_key
from lvu.runs.stage_runner import run_each
from lvu.scoring.judges import PROMPT_VERSION, DevRow, Judge, Judgement, dev_task

JOB_KIND = "judge-dev"


@dataclass
class DevJudging:
    """What `judge_dev_set` did: one judgement per dev row, in order (None where a row was not
    judged because the job was interrupted)."""

    judgements: list[Judgement | None]
    job_id: str
    n_reused: int = 0
    """Rows whose judgement was already in the ledger and not asked again."""
    interrupted: bool = False


def dev_row_key(row: DevRow, judge: Judge) -> str:
    """What a row's judgement depends on: the text the judge sees, the prompt version, the judge."""
    return item_key(PROMPT_VERSION, "equivalence", row.question, row.reference, row.candidate, judge.identity)


async def judge_dev_set(judge: Judge, rows: list[DevRow], dev_file: str | Path, *,
                        results_dir: str | Path | None = None, concurrency: int = 8, fresh: bool = False,
                        show_progress: bool = True) -> DevJudging:
    """Judge `rows` (read from `dev_file`) with `judge`, resuming the ledger job of this judge on
    this file's content; `fresh` asks the judge again for every row (no cached replies either).
    Closes the judge."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

    keys = [dev_row_key(row, judge) for row in rows]
    first: dict[str, int] = {}  # rows with the same text are judged once
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    fingerprint = hashlib.sha256(Path(dev_file).read_bytes()).hexdigest()[:16]
    ledger = JobLedger(results_dir)
    job = ledger.open_job(JOB_KIND, {"judge": judge.identity}, fingerprint, fresh=fresh)
    status = "failed"
    try:
        if fresh:
            judge.model.bypass_cache()
        else:
            ledger.reuse(job, first)
        done = ledger.done_keys(job)
        todo = [(key, i) for key, i in first.items() if key not in done]
        progress = LoggedProgress(TextColumn("[bold]judging dev set"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("failed {task.fields[failed]}"), TimeRemainingColumn(),
                                  disable=not show_progress or not todo, label="judging dev set")
        bar = progress.add_task("", total=len(todo), failed=0)
        failed = 0

        async def work(item: tuple[str, int]) -> Judgement:
            return await judge.judge(dev_task(rows[item[1]]), sample_id=rows[item[1]].id)

        def commit(item: tuple[str, int], judgement: Judgement) -> None:
            nonlocal failed
            ledger.commit(job, item[0], ordinal=item[1], result=judgement.model_dump(mode="json"),
                          raw=judgement.raw, error=judgement.error)
            failed += judgement.error is not None
            progress.update(bar, advance=1, failed=failed)

        stop = asyncio.Event()
        with progress:
            await run_each(todo, work, commit, concurrency=concurrency, stop=stop, note=progress.say,
                           what="dev row")
        status = "interrupted" if stop.is_set() else "done"
        by_key = {e.key: Judgement.model_validate(e.result) for e in ledger.entries(job) if e.result is not None}
        return DevJudging([by_key.get(key) for key in keys], job, n_reused=len(first) - len(todo),
                          interrupted=stop.is_set())
    finally:
        ledger.finish_job(job, status)
        ledger.close()
        await judge.close()
