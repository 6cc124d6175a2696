#!/usr/bin/env python
"""The run store at scale: a 100,000-sample text-only run, its resume, and listing a big store.

Workload: a JSONL benchmark of `--samples` multiple-choice questions about 50 videos that need not
exist (frames=0, durations given: nothing is decoded), answered by the zero-latency `random` model,
so what is timed is lvu itself — load, fingerprint, pipeline, one committed row per sample, the
final aggregate. Every lvu figure runs in a fresh process (peak RSS is that process's own), side by
side with its floor in the same invocation; medians of `--repeat` (min–max):
  1. samples/s of a fresh run (`lvu.api.run(..., report=False)`), against the physical floor: a bare
     SQLite loop inserting the same stored records one commit each (WAL, synchronous=NORMAL, as the
     store); also `Store.put` alone, and one transaction for everything (what per-sample commits cost).
     The data fingerprint (hashing every sample, stamping every video) is timed on its own.
  2. peak RSS of that run at `--samples`/10 and `--samples`, against a process that only loads the
     same data (the floor: the samples themselves must be in memory).
  3. resuming the finished run (nothing left to do), against loading and fingerprinting its data;
     reading the stored digests; the resume of the smaller run when it writes its HTML report.
  4. `lvu results list` (table and --json), the viewer's run list and /api/runs on a store of `--runs`
     runs × `--per-run` samples, against the same command on an empty store (start-up and imports);
     what the listing's scores cost before they were cached per run (every run's results
     aggregated); the one-time upgrade of such a store made by an older lvu.

    python benchmarks/store_scale.py [--samples 100000] [--runs 200] [--per-run 5000] [--repeat 3]
    python benchmarks/store_scale.py --quick     # 5,000 samples, 20 runs × 500: a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
SETTINGS = {"frames": 0, "subtitles": "none"}


def make_data(path: Path, n: int) -> Path:
    """n text-only questions over 50 (absent) videos of 600 s."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({
                "id": f"q{i:07d}", "video": {"path": f"videos/v{i % 50:02d}.mp4", "duration": 600.0},
                "question": f"Question {i}: what happens near minute {i % 10}?",
                "options": ["a cat", "a dog", "a bird", "a fish"], "answer": i % 4,
                "labels": {"kind": ["count", "read", "order"][i % 3], "duration": ["short", "long"][i % 2]},
            }) + "\n")
    return path


# ---- child processes: one measurement each, printing one JSON line -----------------------------------


def peak_mb() -> float:
    """This process's peak RSS: VmHWM, which starts afresh at exec (ru_maxrss would carry over the
    parent's peak from before the fork)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 if sys.platform != "darwin" else 2**20)


def child(args: list[str]) -> dict:
    what, data, results = args[0], args[1], args[2]
    if what == "load":  # the memory floor: the benchmark's samples in memory, nothing else
        from lvu.runs.engine import make_benchmark

        start = time.perf_counter()
        samples, bad = make_benchmark("jsonl", {"data": data, **SETTINGS}).loaded()
        loaded = time.perf_counter() - start
        from lvu.runs.identity import data_fingerprint

        start = time.perf_counter()
        data_fingerprint(samples, bad)
        return {"load_s": loaded, "fingerprint_s": time.perf_counter() - start, "peak_mb": peak_mb()}
    if what in ("run", "resume", "resume-report"):
        from lvu.api import run

        start = time.perf_counter()
        summary = run("jsonl", "random", settings={"data": data, **SETTINGS}, results_dir=results,
                      show_progress=False, report=what == "resume-report", frame_cache=False)
        return {"wall_s": time.perf_counter() - start, "peak_mb": peak_mb(), "done_before": summary.n_done_before,
                "n": summary.n_total, "failed": summary.n_failed}
    raise SystemExit(f"unknown child step {what!r}")


def in_child(*args: str) -> dict:
    out = subprocess.run([sys.executable, str(HERE), "--child", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"child {args[0]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def timed_command(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return time.perf_counter() - start


def med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3g} ({min(xs):.3g}–{max(xs):.3g})" if len(xs) > 1 else f"{xs[0]:.3g}"


# ---- 1. the floor: the same records, straight into SQLite ---------------------------------------------


def insert_floor(store_db: Path, tmp: Path, *, batched: bool = False) -> float:
    """Samples/s of a bare loop inserting the run's stored rows into a plain table, one commit each
    (or all in one transaction with `batched`): what SQLite itself allows on this disk."""
    src = sqlite3.connect(store_db)
    rows = src.execute("SELECT run_id, sample_id, ordinal, record, score, correct, error, completed FROM samples").fetchall()
    src.close()
    path = tmp / f"floor-{time.monotonic_ns()}.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE samples (run_id TEXT NOT NULL, sample_id TEXT NOT NULL, ordinal INTEGER NOT NULL,"
               " record TEXT NOT NULL, score REAL, correct INTEGER, error TEXT, completed REAL NOT NULL,"
               " PRIMARY KEY (run_id, sample_id))")
    sql = "INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    start = time.perf_counter()
    if batched:
        with db:
            db.execute("BEGIN")
            db.executemany(sql, rows)
    else:
        for row in rows:
            db.execute(sql, row)  # autocommit: one transaction per sample, as the store
    seconds = time.perf_counter() - start
    db.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return len(rows) / seconds


def store_put_rate(store_db: Path, tmp: Path) -> float:
    """Samples/s of `Store.put` alone (the record serialised, one commit each, the triggers)."""
    from lvu.runs.store import Store
    from lvu.types import SampleResult

    src = sqlite3.connect(store_db)
    results = [SampleResult.model_validate_json(r[0]) for r in src.execute("SELECT record FROM samples ORDER BY ordinal")]
    src.close()
    where = tmp / f"put-{time.monotonic_ns()}"
    store = Store(where)
    start = time.perf_counter()
    for i, r in enumerate(results):
        store.put("bench-run", r, i)
    seconds = time.perf_counter() - start
    store.close()
    shutil.rmtree(where)
    return len(results) / seconds


def digest_queries(store_db: Path, repeat: int) -> tuple[list[float], list[float]]:
    """Seconds to read the run's stored sample digests: lvu's query, and the json_extract it replaced."""
    from lvu.runs.store import Store

    store = Store(store_db.parent)
    run_id = store.runs()[0].run_id
    column, extract = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        store.completed_digests(run_id)
        column.append(time.perf_counter() - start)
        start = time.perf_counter()
        store.db.execute("SELECT sample_id, json_extract(record, '$.sample_digest') FROM samples"
                         " WHERE run_id = ? AND error IS NULL", (run_id,)).fetchall()
        extract.append(time.perf_counter() - start)
    store.close()
    return column, extract


# ---- 4. a big store --------------------------------------------------------------------------------------


def build_big_store(src_db: Path, where: Path, n_runs: int, per_run: int) -> Path:
    """`n_runs` runs of the same benchmark (model seeds 0..n-1) × the first `per_run` stored records of
    the 100k run, written straight into a store (one transaction per run, not through `lvu run`: no
    headline is cached yet)."""
    from lvu.runs.store import Store
    from lvu.types import RunSpec

    src = sqlite3.connect(src_db)
    spec_json, = src.execute("SELECT spec FROM runs").fetchone()
    rows = src.execute("SELECT sample_id, ordinal, record, score, correct, error, completed, digest FROM samples"
                       " ORDER BY ordinal LIMIT ?", (per_run,)).fetchall()
    src.close()
    base = RunSpec.model_validate_json(spec_json)
    store = Store(where)
    for seed in range(n_runs):
        spec = base.model_copy(update={"model_args": {"seed": seed}})
        run_id = store.begin_run(spec, {"lvu": "bench"})
        store.set_total(run_id, per_run)
        with store.db:
            store.db.execute("BEGIN")
            store.db.executemany("INSERT INTO samples (run_id, sample_id, ordinal, record, score, correct, error,"
                                 " completed, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 [(run_id, *r) for r in rows])
        store.finish_run(run_id, "done")
    store.close()
    return where


def list_before(where: Path) -> float:
    """Seconds the listing's scores took before this store cached them: every run's results loaded
    and aggregated, plus the old per-sample LEFT JOIN for the counts."""
    from lvu.runs.headline import stored_headline
    from lvu.runs.store import Store

    store = Store(where)
    start = time.perf_counter()
    store.db.execute("SELECT r.run_id, COUNT(s.sample_id), SUM(s.error IS NOT NULL) FROM runs r"
                     " LEFT JOIN samples s ON s.run_id = r.run_id GROUP BY r.run_id").fetchall()
    for info in store.runs():
        stored_headline(info.spec, store.results(info.run_id))
    seconds = time.perf_counter() - start
    store.close()
    return seconds


def viewer_times(where: Path, repeat: int) -> tuple[list[float], list[float]]:
    from fastapi.testclient import TestClient

    from lvu.web.app import create_app

    client = TestClient(create_app(where))
    page, api = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        assert client.get("/").status_code == 200
        page.append(time.perf_counter() - start)
        start = time.perf_counter()
        assert client.get("/api/runs").status_code == 200
        api.append(time.perf_counter() - start)
    return page, api


def drop_summaries(where: Path) -> None:
    """Make the store an older lvu's: no run_stats, no triggers, no cached summaries."""
    db = sqlite3.connect(where / "lvu.sqlite", isolation_level=None)
    for trigger in ("run_stats_insert", "run_stats_update", "run_stats_delete"):
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    db.execute("DROP TABLE IF EXISTS run_stats")
    db.execute("DELETE FROM run_summary")
    db.close()


# ---- main ---------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--per-run", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="5,000 samples, 20 runs × 500, one repeat")
    ap.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    if args.quick:
        args.samples, args.runs, args.per_run, args.repeat = 5000, 20, 500, 1
    args.per_run = min(args.per_run, args.samples)
    lvu_cli = shutil.which("lvu") or "lvu"
    with tempfile.TemporaryDirectory(prefix="lvu-store-scale-") as tmp_name:
        tmp = Path(tmp_name)
        small, big = max(1, args.samples // 10), args.samples
        data = {n: make_data(tmp / f"d{n}" / "data.jsonl", n) for n in (small, big)}
        print(f"store at scale: {big:,}-sample text-only jsonl run, `random` model (zero latency), "
              f"{os.cpu_count()} cores; medians of {args.repeat} (min–max)\n", flush=True)

        # 1 + 2: fresh runs, their memory, and the floors
        fresh: dict[int, list[dict]] = {small: [], big: []}
        loads: dict[int, list[dict]] = {small: [], big: []}
        floor, put, batched = [], [], []
        for i in range(args.repeat):
            for n in (small, big):
                shutil.rmtree(tmp / f"r{n}", ignore_errors=True)
                loads[n].append(in_child("load", str(data[n]), ""))
                fresh[n].append(in_child("run", str(data[n]), str(tmp / f"r{n}")))
            db = tmp / f"r{big}" / "lvu.sqlite"
            floor.append(insert_floor(db, tmp))
            batched.append(insert_floor(db, tmp, batched=True))
            put.append(store_put_rate(db, tmp))
        runs_s = [big / r["wall_s"] for r in fresh[big]]
        print(f"1. fresh run of {big:,} samples: {med([r['wall_s'] for r in fresh[big]])} s = {med(runs_s)} samples/s")
        print(f"   of which loading the data {med([r['load_s'] for r in loads[big]])} s, the data fingerprint "
              f"{med([r['fingerprint_s'] for r in loads[big]])} s")
        print(f"   floor: bare SQLite insert loop of the same records, one commit each: {med(floor)} samples/s")
        print(f"   Store.put alone (serialise + commit + run_stats triggers): {med(put)} samples/s")
        print(f"   one transaction for all (no crash safety, not lvu): {med(batched)} samples/s")
        print(f"   ratios: lvu run / floor = {statistics.median(runs_s) / statistics.median(floor):.2f}; "
              f"Store.put / floor = {statistics.median(put) / statistics.median(floor):.2f}")

        rss = {n: statistics.median([r["peak_mb"] for r in fresh[n]]) for n in (small, big)}
        data_rss = {n: statistics.median([r["peak_mb"] for r in loads[n]]) for n in (small, big)}
        per_sample = (rss[big] - rss[small]) / (big - small) * 1024
        data_per_sample = (data_rss[big] - data_rss[small]) / (big - small) * 1024
        print(f"\n2. peak RSS: run {rss[small]:.0f} MB at {small:,} samples, {rss[big]:.0f} MB at {big:,} "
              f"({per_sample:.1f} kB per sample); loading the data alone {data_rss[small]:.0f} / {data_rss[big]:.0f} MB "
              f"({data_per_sample:.1f} kB per sample); run minus data: {rss[small] - data_rss[small]:.0f} / "
              f"{rss[big] - data_rss[big]:.0f} MB")

        # 3: resume the finished run
        resume = [in_child("resume", str(data[big]), str(tmp / f"r{big}")) for _ in range(args.repeat)]
        assert all(r["done_before"] == big for r in resume), resume
        start_py = [timed_command([sys.executable, "-c", "import lvu.api"], tmp) for _ in range(args.repeat)]
        digests, extract = digest_queries(tmp / f"r{big}" / "lvu.sqlite", args.repeat)
        print(f"\n3. resume of the finished {big:,}-sample run: {med([r['wall_s'] for r in resume])} s; its floor, "
              f"loading + fingerprinting the data: {med([r['load_s'] + r['fingerprint_s'] for r in loads[big]])} s; "
              f"`import lvu.api` {med(start_py)} s; peak RSS {statistics.median([r['peak_mb'] for r in resume]):.0f} MB")
        print(f"   stored digests of {big:,} samples (read twice per resume): {med(digests)} s from their column, "
              f"{med(extract)} s by json_extract from the records (stores of older lvu versions)")
        report = in_child("resume-report", str(data[small]), str(tmp / f"r{small}"))
        print(f"   the same resume of the {small:,}-sample run writing its HTML report (`lvu run`'s default): "
              f"{report['wall_s']:.1f} s")

        # 4: list a big store
        t = time.perf_counter()
        where = build_big_store(tmp / f"r{big}" / "lvu.sqlite", tmp / "big", args.runs, args.per_run)
        print(f"\n4. store of {args.runs} runs × {args.per_run:,} samples = {args.runs * args.per_run:,} samples "
              f"({(where / 'lvu.sqlite').stat().st_size / 2**20:.0f} MB, built in {time.perf_counter() - t:.0f} s)")
        cmd = [lvu_cli, "results", "list", "--results-dir", str(where)]
        first = timed_command(cmd, tmp)  # computes and caches the headlines of runs not made by `lvu run`
        listing = [timed_command(cmd, tmp) for _ in range(args.repeat)]
        listing_json = [timed_command([*cmd, "--json"], tmp) for _ in range(args.repeat)]
        empty = tmp / "empty"
        timed_command([sys.executable, "-c", f"from lvu.runs.store import Store; Store({str(empty)!r})"], tmp)
        start_lvu = [timed_command([lvu_cli, "results", "list", "--results-dir", str(empty)], tmp)
                     for _ in range(args.repeat)]
        page, api = viewer_times(where, args.repeat)
        before = list_before(where)
        drop_summaries(where)
        migrate = timed_command([sys.executable, "-c", f"from lvu.runs.store import Store; Store({str(where)!r})"], tmp)
        print(f"   `lvu results list`: {med(listing)} s (--json {med(listing_json)} s); the same command on an "
              f"empty store (start-up, imports, no rows) {med(start_lvu)} s")
        print(f"   viewer run list (GET /): {med(page)} s; GET /api/runs: {med(api)} s (in process)")
        print(f"   first listing of runs written outside `lvu run` (caches every headline once): {first:.1f} s")
        print(f"   the listing's scores before this cache (every run's results aggregated): {before:.1f} s "
              f"= {before / statistics.median(listing):.0f}× the whole cached `lvu results list`")
        print(f"   opening it as a store of an older lvu (counts every run once): {migrate:.1f} s")


if __name__ == "__main__":
    main()
