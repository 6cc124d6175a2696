"""Neptune's model-based temporal certificate and effort score (Neptune App. E), as a probe that
runs on any benchmark and model.

Per sample the model is asked about clips centred on the video's middle, growing in length and
frame rate (ordered by frame count, then length); the first clip it answers correctly is the
certificate (its frame count and length), and the effort score is Eq. 1:

    effort = max frames of an incorrect query / min frames of a correct query

(0 when the first, smallest clip is already answered; near 1 when nearly every frame asked
for was needed). `verify=K` re-asks a correct clip K more times, all of which must be correct —
the paper's two extra seeded runs against lucky guesses (useful for sampling models only).

Prompts are built by the benchmark's own `build_prompt` through the engine's `prepare` (frames
decoded exactly, cues selected as the benchmark says — only cues at the clip's frames when the
benchmark would give all of them), answers are extracted and scored by the benchmark.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lvu.analysis.stats import Estimate
from lvu.analysis.table import Analysis, Table
from lvu.types import InputPlan, Response, Sample, SampleResult, VideoMeta

PAPER = {"Neptune": (5.39, 21.22, 0.47), "EgoSchema": (1.6, 9.07, 0.19)}
"""Neptune App. E (Gemini 1.5 Pro, 129 samples each): mean certificate frames, clip seconds, effort."""


@dataclass(frozen=True)
class Step:
    """One query: a clip of `seconds` centred on the middle, sampled at `fps`."""

    seconds: float
    fps: float
    start: float
    end: float
    times: tuple[float, ...]

    @property
    def frames(self) -> int:
        return len(self.times)


def schedule(duration: float, *, fps: tuple[float, ...] = (0.5, 1.0), min_clip: float = 2.0,
             max_frames: int = 256) -> list[Step]:
    """Centred clips of min_clip, 2×, 4×, ... seconds up to the whole video, at each rate in `fps`
    (at least one frame; at most `max_frames`), ordered by frame count, then clip length. Frames
    are the segment centres of the clip (uniform:N within it)."""
    if duration <= 0 or min_clip <= 0 or not fps or any(f <= 0 for f in fps):
        raise ValueError("duration, min_clip and every fps must be positive")
    lengths, length = [], min_clip
    while length < duration:
        lengths.append(length)
        length *= 2
    lengths.append(duration)
    mid, steps, seen = duration / 2, [], set()
    for seconds in lengths:
        start, end = max(0.0, mid - seconds / 2), min(duration, mid + seconds / 2)
        for rate in fps:
            n = max(1, round((end - start) * rate))
            if n > max_frames:
                continue
            times = tuple(round(start + (i + 0.5) * (end - start) / n, 6) for i in range(n))
            if times not in seen:
                seen.add(times)
                steps.append(Step(end - start, rate, start, end, times))
    return sorted(steps, key=lambda s: (s.frames, s.seconds, s.fps))


@dataclass
class Certificate:
    """One sample's certificate: the first correct clip and the largest incorrect one before it."""

    sample_id: str
    labels: dict[str, Any]
    duration: float
    frames: int | None = None
    """Frames of the first correctly answered clip (None: no clip was answered correctly)."""
    seconds: float | None = None
    """Length of that clip in seconds."""
    max_incorrect_frames: int = 0
    queries: int = 0
    error: str | None = None
    trail: list[tuple[float, float, int, bool]] = field(default_factory=list)
    """(clip seconds, fps, frames, correct) of every query, in order."""

    @property
    def effort(self) -> float | None:
        """Eq. 1: max frames of an incorrect query / min frames of a correct one."""
        return None if not self.frames else self.max_incorrect_frames / self.frames


class _ClipPlan:
    """The benchmark with one clip's frame times in place of its protocol's plan (all else as is)."""

    def __init__(self, bench: Any, times: tuple[float, ...]) -> None:
        self._bench, self._times = bench, list(times)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bench, name)

    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        base = self._bench.plan(sample, video)
        mode = "covering" if base.subtitle_mode == "all" else base.subtitle_mode  # the clip's cues only
        return base.model_copy(update={"timestamps": self._times, "subtitle_mode": mode})


async def _ask(engine: Any, bench: Any, sample: Sample, step: Step, repeats: int) -> bool:
    """Whether the model answers `sample` correctly from `step`'s clip, `repeats` times in a row."""
    from lvu.runs.engine import grade

    clip = copy.copy(engine)  # samples run concurrently: each query plans its own clip (caches, pool shared)
    clip.bench = _ClipPlan(bench, step.times)
    prompt, _ = await asyncio.get_running_loop().run_in_executor(engine.pool, clip.prepare, sample)
    for _ in range(repeats):
        response: Response = await engine.model.generate(prompt, sample_id=sample.id)
        if response.error:
            raise RuntimeError(f"model error: {response.error}")
        result = grade(bench, sample, response, SampleResult(sample_id=sample.id))
        if not result.correct:
            return False
    return True


async def certify(engine: Any, bench: Any, sample: Sample, *, fps: tuple[float, ...], min_clip: float,
                  max_frames: int, verify: int = 0) -> Certificate:
    """Walk the schedule until a clip is answered correctly (and `verify` more times)."""
    cert = Certificate(sample.id, dict(sample.labels), 0.0)
    try:  # probing too: a missing video is this sample's error (in a decode thread: samples run concurrently)
        cert.duration = duration = await asyncio.get_running_loop().run_in_executor(engine.pool, engine._duration, sample)
        for step in schedule(duration, fps=fps, min_clip=min_clip, max_frames=max_frames):
            ok = await _ask(engine, bench, sample, step, 1)
            if ok and verify:
                ok = await _ask(engine, bench, sample, step, verify)
            cert.queries += 1
            cert.trail.append((round(step.seconds, 3), step.fps, step.frames, ok))
            if ok:
                cert.frames, cert.seconds = step.frames, step.seconds
                break
            cert.max_incorrect_frames = max(cert.max_incorrect_frames, step.frames)
    except Exception as e:  # one bad sample never kills the probe
        cert.error = f"{sample.id}: {type(e).__name__}: {e}"
    return cert


JOB_KIND = "certificate"
"""The ledger kind of certificate jobs (lvu.runs.ledger.JobLedger, `<results-dir>/lvu.sqlite`)."""


@dataclass
class CertificateJob:
    """What `certificate_job` did: the certificates of the samples asked for, in their order."""

    certificates: list[Certificate]
    job_id: str
    results_dir: Path
    n_reused: int = 0
    """Certificates already in the ledger (this job resumed, or an earlier job of the same spec on
    data that has since changed elsewhere) and not computed again."""
    interrupted: bool = False
    """Stopped by Ctrl-C: `certificates` holds only those committed; run again to resume."""


def _record(cert: Certificate) -> dict[str, Any]:
    return asdict(cert)


def _certificate(record: dict[str, Any]) -> Certificate:
    return Certificate(**{**record, "trail": [tuple(t) for t in record.get("trail", [])]})


def certificate_job(benchmark: str, model: str, *, settings: dict[str, Any] | None = None,
                    model_args: dict[str, Any] | None = None, limit: int | None = None,
                    fps: tuple[float, ...] = (0.5, 1.0), min_clip: float = 2.0, max_frames: int = 256,
                    verify: int = 0, results_dir: str | Path | None = None, concurrency: int = 4,
                    fresh: bool = False, show_progress: bool = True) -> CertificateJob:
    """The certificate of every multiple-choice sample (the first `limit`) of BENCHMARK for MODEL,
    `concurrency` samples at a time, each committed to the ledger as it completes. The job is the
    benchmark, the model (run-neutral arguments left out, as in a run id), the settings and the
    schedule, on the data's fingerprint; an item's key hashes the sample's content (its record,
    video stamp and subtitle file: `data_fingerprint` of the sample alone), the model and the
    schedule. So a rerun skips what is committed, an edited sample (a new data fingerprint: a new
    job) is the only one computed again, and `fresh` recomputes everything."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from lvu.progress import LoggedProgress
    from lvu.runs.engine import Engine, resolve_spec
    from lvu.runs.identity import FINGERPRINT_KEY, data_fingerprint
    from lvu.runs.ledger import JobLedger, item_key
    from lvu.runs.pipeline import ready_models
    from lvu.runs.stage_runner import run_each

    spec, bench, model_cls = resolve_spec(benchmark, model, settings=settings, model_args=model_args)
    mdl = model_cls(**(model_args or {}))
    schedule_params = {"fps": list(fps), "min_clip": min_clip, "max_frames": max_frames, "verify": verify}
    model_identity = {"backend": spec.model, **spec.model_args}
    job_spec = {"benchmark": spec.benchmark, "model": spec.model, "model_args": spec.model_args,
                "settings": {k: v for k, v in spec.settings.items() if k != FINGERPRINT_KEY},
                "schedule": schedule_params}
    loaded = bench.loaded()[0]
    ordinals = {s.id: i for i, s in enumerate(loaded)}
    samples = [s for s in loaded if s.options and s.answer is not None][:limit]
    keys = {s.id: item_key(data_fingerprint([s], []), model_identity, schedule_params) for s in samples}

    ledger = JobLedger(results_dir)
    job = ledger.open_job(JOB_KIND, job_spec, spec.settings[FINGERPRINT_KEY], fresh=fresh)
    status = "failed"
    try:
        if not fresh:  # what an earlier job of this spec certified for samples that have not changed
            ledger.reuse(job, {keys[s.id]: ordinals[s.id] for s in samples})
        done = ledger.done_keys(job)
        todo = [s for s in samples if keys[s.id] not in done]
        engine = Engine(bench, mdl, None, frame_cache=None)  # type: ignore[arg-type]  # the ledger stores, not a run
        progress = LoggedProgress(TextColumn("[bold]certificates"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("failed {task.fields[failed]}"), TimeElapsedColumn(), TextColumn("ETA"),
                                  TimeRemainingColumn(), disable=not show_progress, label="certificates")
        stop = asyncio.Event()
        failed = 0

        async def work(sample: Sample) -> Certificate:
            return await certify(engine, bench, sample, fps=fps, min_clip=min_clip, max_frames=max_frames, verify=verify)

        def commit(sample: Sample, cert: Certificate) -> None:
            nonlocal failed
            ledger.commit(job, keys[sample.id], ordinal=ordinals[sample.id], result=_record(cert), error=cert.error)
            failed += bool(cert.error)
            progress.update(bar, advance=1, failed=failed)

        async def main() -> None:
            try:
                await ready_models(mdl, None, fresh=fresh, model_has_work=bool(todo))
                with progress:
                    await run_each(todo, work, commit, concurrency=concurrency, stop=stop, note=progress.say,
                                   what="sample")
            finally:
                engine.pool.shutdown(wait=False, cancel_futures=True)
                await mdl.close()

        bar = progress.add_task("", total=len(todo), failed=0)
        if show_progress and len(todo) < len(samples):
            progress.say(f"certificates: {len(samples) - len(todo)} of {len(samples)} already in the ledger "
                         f"(job {job}); computing {len(todo)}")
        asyncio.run(main())
        status = "interrupted" if stop.is_set() else "done"
        by_key = {e.key: e for e in ledger.entries(job)}
        certs = [_certificate(by_key[keys[s.id]].result) for s in samples if keys[s.id] in by_key]
        return CertificateJob(certs, job, ledger.dir, n_reused=len(samples) - len(todo),
                              interrupted=status == "interrupted")
    finally:
        ledger.finish_job(job, status)
        ledger.close()


def run_certificates(benchmark: str, model: str, **kwargs: Any) -> list[Certificate]:
    """`certificate_job(...)`'s certificates (the same arguments)."""
    return certificate_job(benchmark, model, **kwargs).certificates


def summarize(certs: list[Certificate]) -> tuple[Table, Analysis]:
    """Per-sample table and the distribution of certificate frames (Neptune Fig. 11), with means."""
    rows = [[c.sample_id, ", ".join(f"{k}={v}" for k, v in c.labels.items()), c.frames,
             None if c.seconds is None else round(c.seconds, 2), c.max_incorrect_frames,
             None if c.effort is None else round(c.effort, 3), c.queries, c.error or ""] for c in certs]
    table = Table("Temporal certificates", ["sample", "labels", "certificate frames", "clip s",
                                            "max incorrect frames", "effort", "queries", "error"], rows)
    done = [c for c in certs if c.frames]
    done_frames = [c.frames for c in done if c.frames]  # (every one of done's)
    counts: dict[int, int] = {}
    for frames in done_frames:
        counts[frames] = counts.get(frames, 0) + 1
    xs = sorted(counts)
    share = [Estimate(100 * counts[x] / len(done), n=counts[x]) for x in xs] if done else []

    def mean(values: list[float]) -> str:
        return f"{sum(values) / len(values):.2f}" if values else "–"

    summary = [
        ("samples with a certificate", f"{len(done)} of {len(certs)} ({sum(1 for c in certs if c.error)} failed)"),
        ("mean certificate frames", mean([float(f) for f in done_frames])),
        ("mean certificate clip (s)", mean([c.seconds for c in done])),  # type: ignore[misc]
        ("mean effort score", mean([c.effort for c in done])),  # type: ignore[misc]
        *[(f"paper, {name} (Gemini 1.5 Pro)", f"{f} frames, {s} s, effort {e}") for name, (f, s, e) in PAPER.items()],
    ]
    analysis = Analysis("certificate", "Certificate frames (first correctly answered centred clip)",
                        "frames", [str(x) for x in xs], {"samples": share}, y_label="share of samples %",
                        kind="bar", summary=summary)
    return table, analysis

