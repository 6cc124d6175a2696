"""`create_app(results_dir)`: the FastAPI results viewer over one run store.

Pages: `/` (runs; `?model=` / `?benchmark=` filter as `lvu results list` does; tick runs to compare),
`/runs/{run_id}` (spec, environment, breakdown tables, filterable samples),
`/runs/{run_id}/samples/{sample_id}` (frames, cues and text in the prompt's order, exact prompt, raw
response, prediction, score, traceback), `/compare?run=A&run=B[&run=C]` (lvu.web.compare).
JSON: `/api/runs`, `/api/runs/{run_id}`, `/api/runs/{run_id}/samples/{sample_id}`, `/api/compare`.
Frames: `/media/{run_id}/{sample_id}/{i}.jpg`, resolved only from the stored record (its video and
its i-th stored timestamp); any other path is a 404 and no URL is ever mapped to a file.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response

from lvu.analysis.runs import RunData
from lvu.analysis.stats import DEFAULT_BOOTSTRAP
from lvu.errors import LvuError
from lvu.runs.headline import Headline
from lvu.runs.run_names import (data_name, matches_benchmark, matches_model, model_identity, no_answers,
                                 unreadable, unreadable_note)
from lvu.runs.store import RunInfo
from lvu.types import SampleResult
from lvu.web import compare as comparing
from lvu.web import pages
from lvu.web.catalog import SHOWS, Catalog, matches, outcome, prompt_parts
from lvu.web.media import FrameImages

PER_PAGE = 200
_FRAME_NAME = re.compile(r"(0|[1-9][0-9]{0,5})\.jpg")


def _label_filter(label: str | None) -> tuple[str, str] | None:
    if not label:
        return None
    if "=" not in label:
        raise HTTPException(400, f"label filter {label!r} is not KEY=VALUE — e.g. label=kind=read")
    key, value = label.split("=", 1)
    return key, value


def _labels_of(results: list[SampleResult]) -> list[str]:
    """Every `key=value` a filter can pick, sorted."""
    found = set()
    for r in results:
        for k, v in r.labels.items():
            for x in v if isinstance(v, list) else [v]:
                found.add(f"{k}={x}")
    return sorted(found)


def _run_json(r: RunInfo, top: Headline | None, unreadable: int | None = None) -> dict[str, Any]:
    """`model_identity` / `data`: how lists name the run (lvu.runs.run_names; `model` and
    `benchmark` stay the bare backend and benchmark); `score`: the headline score in percent
    (lvu.runs.headline; None before anything is scored, and for a run with no answers — every
    stored sample failed: `no_answers` true, as in `lvu results list --json`), `score_row` the
    official row it is; `n_ok` / `n_total`: the coverage `lvu results list` shows; `unreadable`:
    replies with no readable answer."""
    none = no_answers(r.n_ok, r.n_errors)
    return {"run_id": r.run_id, "benchmark": r.benchmark, "model": r.model, "model_identity": model_identity(r.spec),
            "data": data_name(r.spec), "status": r.status, "settings": r.spec.settings, "n_samples": r.n_samples,
            "n_failed": r.n_errors, "n_ok": r.n_ok, "n_total": r.n_total,
            "score": top.value if top and not none else None, "score_row": top.row if top and not none else None,
            "no_answers": none is not None, "unreadable": unreadable, "created": r.created, "updated": r.updated}


def _filtered(runs: list[RunInfo], model: str | None, benchmark: str | None) -> tuple[list[RunInfo], str | None]:
    """The runs `model` / `benchmark` match (as `lvu results list --model/--benchmark`:
    lvu.runs.run_names), and, when none does, one line saying so and what is stored."""
    kept = [r for r in runs if (not model or matches_model(r.spec, model))
            and (not benchmark or matches_benchmark(r.spec, benchmark))]
    if kept or not runs or not (model or benchmark):
        return kept, None
    asked = " and ".join(f"{k}={v}" for k, v in (("model", model), ("benchmark", benchmark)) if v)
    stored = []
    if model:
        stored.append("models stored: " + ", ".join(sorted({model_identity(r.spec) for r in runs})))
    if benchmark:
        stored.append("data stored: " + ", ".join(sorted({data_name(r.spec) for r in runs})))
    return kept, f"no run matches {asked}; {'; '.join(stored)}"


SECURITY_HEADERS = {
    # Scripts only from this server's own files (no inline script), nothing framed, no referrer
    # (a review page's URL carries its rater's token).
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self'; media-src 'self'; object-src 'none'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def new_app(title: str, allowed_hosts: Sequence[str] | None) -> FastAPI:
    """The one app factory of lvu's web pages (`lvu view`, `lvu review`): no generated API docs,
    the security headers above on every response, and — `allowed_hosts` given (e.g. 127.0.0.1,
    localhost) — requests for other Host names refused, so a web page elsewhere cannot reach a
    local server by DNS rebinding; None skips the check (tests)."""
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    if allowed_hosts is not None:  # added last = runs first: a foreign Host never reaches a route
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    return app


def create_app(results_dir: str | Path, *, allowed_hosts: Sequence[str] | None = None,
               frames: FrameImages | None = None) -> FastAPI:
    """The viewer app over `results_dir`'s run store (`allowed_hosts`: see `new_app`)."""
    catalog = Catalog(results_dir)
    images = frames if frames is not None else FrameImages()
    app = new_app("lvu viewer", allowed_hosts)

    def get_run(run_id: str) -> RunInfo:
        info = catalog.run(run_id)
        if info is None:
            raise HTTPException(404, f"no run {run_id!r} here — see the list of runs at /")  # no file paths
        return info

    def get_record(info: RunInfo, sample_id: str) -> dict[str, Any]:
        record = catalog.record(info.run_id, sample_id)
        if record is None:
            raise HTTPException(404, f"run {info.run_id} has no sample {sample_id!r}")
        return record

    def run_view(run_id: str, show: str, label: str | None, page: int) -> dict[str, Any]:
        if show not in SHOWS:
            raise HTTPException(400, f"show={show!r} is unknown — use one of {', '.join(SHOWS)}")
        info = get_run(run_id)
        results = catalog.results(info.run_id)
        wanted = _label_filter(label)
        matching = [r for r in results if matches(r, show, wanted)]
        counts = {s: sum(1 for r in results if matches(r, s, wanted)) for s in SHOWS}
        start = (page - 1) * PER_PAGE
        return {"info": info, "tables": catalog.tables(info, results), "results": results, "matching": matching,
                "shown": matching[start:start + PER_PAGE], "counts": counts}

    def comparison(run_ids: list[str], include_failed: bool, n_boot: int) -> comparing.RunsComparison:
        """The runs picked (exact ids, each once) compared, oldest first — so Δ is newer − older,
        as `lvu compare` without run ids has it, whatever order the boxes were ticked in; LvuError: why not."""
        infos = sorted((get_run(rid) for rid in dict.fromkeys(run_ids)), key=lambda i: i.created)
        key = (tuple((i.run_id, i.updated, i.samples_version) for i in infos), include_failed, n_boot)
        return catalog.remembered(key, lambda: comparing.compare(
            [RunData(i, catalog.results(i.run_id)) for i in infos], include_failed=include_failed, n_boot=n_boot))

    # ---- pages ---------------------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse)
    def runs_page(model: str | None = None, benchmark: str | None = None) -> str:
        runs, message = _filtered(catalog.runs(), model, benchmark)
        return pages.runs_page(runs, catalog.listing(runs), str(catalog.dir),
                               filters={"model": model or "", "benchmark": benchmark or ""}, message=message)

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(run_id: str, show: str = "all", label: str | None = None, page: int = Query(1, ge=1)) -> str:
        v = run_view(run_id, show, label, page)
        return pages.run_page(v["info"], v["tables"], v["shown"], n_matching=len(v["matching"]), counts=v["counts"],
                              labels=_labels_of(v["results"]), show=show, label=label or None, page=page,
                              per_page=PER_PAGE, unreadable=unreadable_note(v["results"]))

    @app.get("/compare", response_class=HTMLResponse)
    def compare_page(run: list[str] = Query([]), include_failed: bool = False,
                     bootstrap: int = Query(DEFAULT_BOOTSTRAP, ge=0, le=10000)) -> HTMLResponse:
        try:
            c = comparison(run, include_failed, bootstrap)
        except LvuError as e:  # different benchmarks, too few runs...: the page says why, in one line
            return HTMLResponse(pages.compare_refused(str(e)), status_code=400)
        return HTMLResponse(pages.compare_page(c))

    @app.get("/runs/{run_id}/samples/{sample_id:path}", response_class=HTMLResponse)
    def sample_page(run_id: str, sample_id: str) -> str:
        info = get_run(run_id)
        record = get_record(info, sample_id)
        ids = catalog.sample_ids(info.run_id)
        at = ids.index(sample_id)
        neighbours = (ids[at - 1] if at > 0 else None, ids[at + 1] if at + 1 < len(ids) else None)
        return pages.sample_page(info, record, prompt_parts(record), neighbours)

    # ---- JSON ----------------------------------------------------------------------------------------

    @app.get("/api/runs")
    def api_runs(model: str | None = None, benchmark: str | None = None) -> list[dict[str, Any]]:
        runs, _ = _filtered(catalog.runs(), model, benchmark)
        listed = catalog.listing(runs)
        return [_run_json(r, listed[r.run_id].headline, listed[r.run_id].unreadable) for r in runs]

    @app.get("/api/compare")
    def api_compare(run: list[str] = Query([]), include_failed: bool = False,
                    bootstrap: int = Query(DEFAULT_BOOTSTRAP, ge=0, le=10000)) -> dict[str, Any]:
        try:
            return comparing.as_json(comparison(run, include_failed, bootstrap))
        except LvuError as e:
            raise HTTPException(400, str(e)) from e

    @app.get("/api/runs/{run_id}")
    def api_run(run_id: str, show: str = "all", label: str | None = None) -> dict[str, Any]:
        v = run_view(run_id, show, label, 1)
        info: RunInfo = v["info"]
        return {
            **_run_json(info, catalog.headline(info), len(unreadable(v["results"]))),
            "spec": info.spec.model_dump(mode="json"), "env": info.env, "unreadable_note": unreadable_note(v["results"]),
            "tables": [{"title": t.title, "rows": [{"group": g, "n": n, "score": s} for g, n, s in t.rows]}
                       for t in v["tables"].tables],
            "tables_note": v["tables"].note,
            "samples": [{"sample_id": r.sample_id, "labels": r.labels, "answer": r.answer, "prediction": r.prediction,
                         "score": r.score, "correct": r.correct, "outcome": outcome(r), "error": r.error}
                        for r in v["matching"]],
        }

    @app.get("/api/runs/{run_id}/samples/{sample_id:path}")
    def api_sample(run_id: str, sample_id: str) -> dict[str, Any]:
        info = get_run(run_id)
        record = get_record(info, sample_id)
        parts = prompt_parts(record)
        times = record.get("frame_timestamps") or []
        return {**record, "run_id": info.run_id, "outcome": outcome(SampleResult.model_validate(record)),
                "parts": parts,
                "frames": [{"index": i, "timestamp": t, "url": pages.media_url(info.run_id, str(record["sample_id"]), i)}
                           for i, t in enumerate(times)]}

    # ---- frames --------------------------------------------------------------------------------------

    @app.get("/media/{run_id}/{rest:path}")
    def media(run_id: str, rest: str) -> Response:
        sample_id, _, name = rest.rpartition("/")
        match = _FRAME_NAME.fullmatch(name)
        if not sample_id or match is None:
            raise HTTPException(404, "frames are /media/RUN/SAMPLE/INDEX.jpg")
        info = get_run(run_id)
        record = get_record(info, sample_id)
        times = record.get("frame_timestamps") or []
        index = int(match.group(1))
        if index >= len(times):
            raise HTTPException(404, f"sample {sample_id!r} has {len(times)} stored frames, not #{index}")
        video = catalog.video_of(info, record)
        if video is None:
            raise HTTPException(404, f"sample {sample_id!r}: its video is not known to the store")
        resize = info.spec.settings.get("resize")
        try:
            data = images.jpeg(video, times, index, resize=resize if isinstance(resize, int) else None)
        except LvuError as e:  # moved or unreadable video: the page still renders, the image is missing
            # the video's file name, not its path: a 404 body never shows where the files live
            raise HTTPException(404, f"sample {sample_id!r}: {str(e).replace(str(video), Path(video).name)}") from e
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=3600"})

    return app
