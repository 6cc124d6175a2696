"""`--asr` in runs: fail fast when it cannot work, and say so when it put no cue in any prompt.

Where a sample's cues come from is decided in `Engine.prepare` (both executors): the benchmark's
plan names the subtitle mode its protocol wants if cues exist (`InputPlan.subtitle_mode`; "none"
when the user or the protocol takes no subtitles); the cues are the sample's subtitle file, else —
no file, or a named file that is missing — the Whisper transcript when --asr is on, else none. A
record whose cues came from a transcript stores how many in `prompt["asr_cues"]`, which is what
`asr_unused_warning` reads back, so it works the same for local and Ray runs and on resume.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lvu.benchmarks.base import Benchmark
    from lvu.types import SampleResult

log = logging.getLogger("lvu.runs")


def require_asr() -> None:
    """One-line LvuError before a run starts when --asr cannot transcribe here (no lvu[asr])."""
    from lvu.media.asr import check_installed

    check_installed()


def asr_unused_warning(results: list[SampleResult], bench: Benchmark, run_id: str) -> str | None:
    """The warning for a run made with --asr whose stored prompts hold no transcript cue, else None."""
    transcribed = [r for r in results if "asr_cues" in r.prompt]
    if any(r.prompt["asr_cues"] for r in transcribed):
        return None
    mode = bench.settings.get("subtitles")
    if transcribed:
        why = f"the transcripts of {len(transcribed)} sample(s) hold no speech near their sampled frames"
    elif mode is None:
        why = f"{bench.name} takes no subtitle cues — drop --asr"
    elif mode == "none":
        why = (f"{bench.name}'s subtitles setting is 'none' — pass --subtitles with a mode it supports to put "
               "the transcript in the prompt, or drop --asr")
    else:
        why = (f"no sample was transcribed: each had a subtitle file, failed before its cues, or {bench.name} "
               "reads its subtitle files itself — drop --asr")
    return f"warning: --asr added no cue to any prompt of run {run_id}: {why}"


def warn_if_asr_unused(results: list[SampleResult], bench: Benchmark, run_id: str) -> None:
    """Log `asr_unused_warning` (one line on stderr from the CLI) when there is one."""
    if (message := asr_unused_warning(results, bench, run_id)) is not None:
        log.warning(message)
