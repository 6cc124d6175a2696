"""Re-scoring a peer's log gives the peer's number (issue 32, items 1 and 3).

Item 1: lmms-eval logs `filtered_resps` after its evaluator's `strip_reasoning_tags`, and that
strip is not idempotent: `B</th<analysis>x</analysis>ink>A` is `B</think>A` once (lmms-eval's
tasks read B) and `A` twice. `lvu score` / `lvu import` of the log must score the logged text as
it is. The log lines are lmms-eval's own: tests/lmms_eval_peer.py runs the 0.7.3 wheel's
`api/reasoning.py` strip with the CLI's default --reasoning_tags, each task's `process_results` and
aggregation, and writes the --log_samples lines as evaluation_tracker does (`resps` kept beside
`filtered_resps` when they differ). lmms-eval's numbers are compared with lvu's by the parity
helpers of tests/test_peer_lmms_eval.py, on its adversarial replies with some replaced by that one.

Item 3: lmms-eval's LongVideoBench draws `random.choice` from Python's global stream for a reply
without a letter and logs the draw as `lvb_acc.parsed_pred`. The log here is made by the wheel's
`longvideobench_process_results` under `random.seed(SEED)` (nothing stubbed) and aggregated by its
`longvideobench_aggregate_results`: `lvu score longvideobench LOG --set compat=lmms-eval` must give
exactly that accuracy, using the logged pick; lvu's own per-question draw (`random_letter`) stays
for raw replies and for compat=official.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
import test_peer_lmms_eval as parity
from lmms_eval_peer import Peer, write_log
from typer.testing import CliRunner

import lvu.cli.root as cli
from lvu.benchmarks.longvideobench import random_letter
from lvu.types import LETTERS

TRICKY = "B</th<analysis>x</analysis>ink>A"
"""The issue's reply: one strip leaves `B</think>A` (read B), a second leaves `A`."""
TRICKY_AT = (1, 7, 16, 26)
"""Which of the parity replies it replaces (each question then has gold B)."""


@pytest.fixture()
def peer(monkeypatch, tmp_path) -> Peer:
    return Peer(monkeypatch, tmp_path / "hf_home")


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli.app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_the_evaluators_strip_is_not_idempotent(peer):
    """The premise, on the wheel's own function: stripping the logged text again changes it."""
    once = peer.strip_reasoning(TRICKY)
    assert once == "B</think>A" and peer.strip_reasoning(once) == "A"


# ---- item 1: filtered_resps scored as logged, every benchmark with a parity fixture ----------------

# lvu name, the log's task name (parity.saved), the release the parity helper writes (under tmp_path)
PEER_LOGS = {"videomme": ("videomme", "videomme", "videomme.jsonl"),
             "lvbench": ("lvbench", "lvbench", "lvbench/video_info.meta.jsonl"),
             "mlvu": ("mlvu", "mlvu_dev", "mlvu"),
             "longvideobench": ("longvideobench-frames", "longvideobench_val_v", "lvb"),
             "neptune": ("neptune", "neptune_full_i", "neptune/neptune_full.json")}


def lmms_read_b(benchmark: str, line: dict) -> bool:
    """Whether lmms-eval's own process_results, as its log line records it, read B (and scored it)."""
    payload = {"videomme": "videomme_perception_score", "mlvu": "mlvu_percetion_score", "longvideobench": "lvb_acc",
               "neptune": "neptune_acc"}.get(benchmark)
    if payload is None:  # lvbench logs only its 0/1 score (gold B)
        return line["lvbench_score"] is True
    got = line[payload]
    return got.get("pred_answer", got.get("parsed_pred")) == "B"


@pytest.mark.slow
@pytest.mark.parametrize("source", [parity.LOG, parity.EXPORT])
@pytest.mark.parametrize("benchmark", PEER_LOGS)
def test_a_logged_filtered_reply_is_scored_as_logged(benchmark, source, peer, monkeypatch, tmp_path):
    """lmms-eval's log of the reply holds `B</think>A`, which its own process_results read as B (the
    metric entry of that log line); lvu score and lvu import read B, and every number equals lmms-eval's. lvu's export of the raw reply (source EXPORT) is stripped once, as a
    run's reply is, and reads B too."""
    replaced = list(parity.RESPONSES)
    for i in TRICKY_AT:
        replaced[i] = (TRICKY, "B")
    monkeypatch.setattr(parity, "RESPONSES", replaced)
    pairs = parity.BENCHMARKS[benchmark](peer, monkeypatch, tmp_path, source)
    assert len(pairs) >= 2 and [p for p in pairs if p.lmms != p.lvu] == []

    name, task, data = PEER_LOGS[benchmark]
    saved = tmp_path / (f"samples_{task}.jsonl" if source == parity.LOG else f"{task}_lvu_export.jsonl")
    if source == parity.LOG:  # the log holds what lmms-eval's evaluator scored, and its raw reply beside it
        logged = [r for r in records(saved) if r.get("resps") == TRICKY]
        assert len(logged) == len(TRICKY_AT)
        assert {r["filtered_resps"] for r in logged} == {peer.strip_reasoning(TRICKY)}
        assert all(lmms_read_b(benchmark, r) for r in logged)
    out = tmp_path / "scored.jsonl"
    invoke("score", name, str(saved), "--data", str(tmp_path / data), "--set", "compat=lmms-eval", "--out", str(out))
    scored = {r["sample_id"]: r for r in records(out)}
    tricky = [r for r in scored.values() if r["response"] in (TRICKY, peer.strip_reasoning(TRICKY))]
    assert len(tricky) == len(TRICKY_AT), tricky
    assert all(r["prediction"] == LETTERS.index("B") and r["score"] == 1.0 for r in tricky), tricky

    # lvu import of the same file: the stored run grades every row as lvu score did
    results = tmp_path / "results"
    printed = invoke("import", str(saved), "-b", name, "--root", str(tmp_path / data), "--set", "compat=lmms-eval",
                     "--results-dir", str(results))
    run_id = re.search(r"run (\w{12}): imported", printed).group(1)
    exported = tmp_path / "imported.jsonl"
    invoke("results", "export", run_id, "-o", str(exported), "--results-dir", str(results))
    stored = {r["sample_id"]: r for r in records(exported)}
    assert stored.keys() == scored.keys()
    assert {k: (r["prediction"], r["score"]) for k, r in stored.items()} == \
        {k: (r["prediction"], r["score"]) for k, r in scored.items()}


# ---- item 3: LongVideoBench's logged random pick --------------------------------------------------

SEED = 1234
"""random.seed before lmms-eval scores the log (any seed: the test checks that lvu's own draw would
differ somewhere, so it proves the pick is read)."""
FALLBACK_REPLIES = ["c", "I cannot tell.", "", "b", "e", "none of them"]
"""Replies with no capital A-E: lmms-eval's parse_multi_choice_response (and lvu's parse) draw a letter."""


def lvb_log(peer: Peer, monkeypatch, tmp_path: Path) -> tuple[Path, Path, list[dict], dict]:
    """A LongVideoBench --log_samples file scored by the wheel with lmms-eval's global random stream
    seeded: (log, release folder, its lines, lmms-eval's returned values)."""
    n = len(parity.RESPONSES)
    replies = [FALLBACK_REPLIES[i % len(FALLBACK_REPLIES)] if i % 5 else "B" for i in range(n)]
    monkeypatch.setattr(parity, "RESPONSES", [(reply, "B" if reply == "B" else None) for reply in replies])
    docs, data = parity.lvb_release(tmp_path)
    task = peer.task("longvideobench", "longvideobench_val_v.yaml")
    state = random.getstate()
    random.seed(SEED)
    try:
        lmms = peer.evaluate(task, docs, replies)
    finally:
        random.setstate(state)
    log = write_log(tmp_path / "samples_longvideobench_val_v.jsonl", lmms.log_lines)
    return log, data, lmms.log_lines, lmms.values


def score_rows(tmp_path: Path, saved: Path, data: Path, *options: str) -> tuple[dict[str, dict], float]:
    """`lvu score longvideobench SAVED --data DATA [--set ...] --out ...`: its rows by id, and the
    overall accuracy (a fraction) computed from them as LongVideoBench's all-question mean."""
    out = tmp_path / f"rows{len(list(tmp_path.glob('rows*')))}.jsonl"
    invoke("score", "longvideobench", str(saved), "--data", str(data), "--out", str(out), *options)
    rows = {r["sample_id"]: r for r in records(out)}
    return rows, sum(r["score"] for r in rows.values()) / len(rows)


def drawn(rows: dict[str, dict]) -> dict[str, str]:
    """id -> the letter of each row scored by a random pick (lvu's --out explains it as one)."""
    return {i: LETTERS[r["prediction"]] for i, r in rows.items() if r["explanation"].startswith("random pick")}


@pytest.mark.parametrize("compat", ["lmms-eval", "lmms-eval@0.7.1", "lmms-eval@0.6"])
def test_lmms_eval_log_uses_its_own_random_pick(compat, peer, monkeypatch, tmp_path):
    """Every lmms-eval pin: its LongVideoBench parser and draw are the same in 0.6-0.7.3."""
    log, data, lines, values = lvb_log(peer, monkeypatch, tmp_path)
    picks = {line["lvb_acc"]["id"]: line["lvb_acc"]["parsed_pred"] for line in lines}
    rows, overall = score_rows(tmp_path, log, data, "--set", f"compat={compat}")
    fallback = drawn(rows)
    assert len(fallback) >= 20
    assert fallback == {i: picks[i] for i in fallback}  # every fallback letter is lmms-eval's logged one
    assert {i: LETTERS[r["prediction"]] for i, r in rows.items()} == picks
    assert round(overall, 5) == values["lvb_acc"]  # longvideobench_aggregate_results, as it rounds
    # the overall row `lvu score --set compat=lmms-eval` prints is the same number
    tables = parity.lvu_score(monkeypatch, "longvideobench", log, data)
    assert round(tables["overall"]["all"][1] / 100, 5) == values["lvb_acc"]
    # lvu's own draw would have scored another letter somewhere (the old code's number)
    n_options = {r["sample_id"]: r["n_options"] for r in rows.values()}
    own = {i: random_letter(0, i, n_options[i]) for i in fallback}
    assert own != fallback


def test_lvus_own_draw_for_raw_replies_and_the_official_mode(peer, monkeypatch, tmp_path):
    """compat=official on the same log, and lvu's export of the raw replies (official format, no
    logged pick) under compat=lmms-eval: lvu's documented per-question draw, seeded by (seed, id)."""
    log, data, lines, _ = lvb_log(peer, monkeypatch, tmp_path)
    official, _ = score_rows(tmp_path, log, data)
    export = tmp_path / "lvu_export.jsonl"
    export.write_text("".join(json.dumps({"sample_id": line["lvb_acc"]["id"], "response": line["filtered_resps"]}) + "\n"
                              for line in lines))
    raw, _ = score_rows(tmp_path, export, data, "--set", "compat=lmms-eval")
    reseeded, _ = score_rows(tmp_path, log, data, "--set", "seed=7")
    for rows, seed in ((official, 0), (raw, 0), (reseeded, 7)):
        fallback = drawn(rows)
        assert len(fallback) >= 20
        assert fallback == {i: random_letter(seed, i, rows[i]["n_options"]) for i in fallback}


def test_a_logged_pick_that_is_no_option_is_ignored(peer, monkeypatch, tmp_path):
    """A pick outside the question's letters (E on a four-option question, a word, lower case) is
    not lmms-eval's draw over those letters: lvu draws its own."""
    log, data, lines, _ = lvb_log(peer, monkeypatch, tmp_path)
    rows, _ = score_rows(tmp_path, log, data, "--set", "compat=lmms-eval")
    fallback = sorted(drawn(rows))
    n_options = {i: rows[i]["n_options"] for i in fallback}
    four = [i for i in fallback if n_options[i] == 4]
    assert len(four) >= 3
    bad = dict(zip(four, ["E", "B or C", "b"]))
    edited = log.with_name("samples_edited.jsonl")
    changed = []
    for line in lines:
        if line["lvb_acc"]["id"] in bad:
            line = {**line, "lvb_acc": {**line["lvb_acc"], "parsed_pred": bad[line["lvb_acc"]["id"]]}}
        changed.append(line)
    write_log(edited, changed)
    again, _ = score_rows(tmp_path, edited, data, "--set", "compat=lmms-eval")
    assert {i: LETTERS[again[i]["prediction"]] for i in bad} == {i: random_letter(0, i, 4) for i in bad}
    kept = [i for i in fallback if i not in bad]
    assert {i: again[i]["prediction"] for i in kept} == {i: rows[i]["prediction"] for i in kept}


def test_an_imported_run_keeps_what_the_log_said(peer, monkeypatch, tmp_path):
    """`lvu import` stores the log's LoggedReply with each record (SampleResult.logged), so what reads
    the stored reply again — regrading after a scoring-code change, the judge stage — reads it as the
    import did: the logged picks stay, no prediction changes."""
    from lvu.runs import regrade
    from lvu.runs.grading import make_benchmark
    from lvu.runs.store import Store

    log, data, lines, _ = lvb_log(peer, monkeypatch, tmp_path)
    results = tmp_path / "results"
    printed = invoke("import", str(log), "-b", "longvideobench", "--root", str(data), "--set", "compat=lmms-eval",
                     "--results-dir", str(results))
    run_id = re.search(r"run (\w{12}): imported", printed).group(1)
    bench = make_benchmark("longvideobench", {"data": str(data), "compat": "lmms-eval"})
    samples = {s.id: s for s in bench.loaded()[0]}
    store = Store(results)
    try:
        stored = {r.sample_id: r for r in store.iter_results(run_id)}
        assert all(r.logged is not None and r.logged.filtered for r in stored.values())
        monkeypatch.setattr(regrade, "grading_stamp", lambda bench: "other code")  # every record is stale
        done = regrade.regrade_stored(store, run_id, bench, samples)
        assert done.checked == len(stored) and done.changed == [] and done.failed == []
        again = {r.sample_id: LETTERS[r.prediction] for r in store.iter_results(run_id)}
    finally:
        store.close()
    assert again == {line["lvb_acc"]["id"]: line["lvb_acc"]["parsed_pred"] for line in lines}
