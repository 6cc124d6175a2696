"""`lvu build convert ego4d-nlq`: MLVU's Ego Reasoning (ER) from Ego4D's Natural Language Queries
(paper §3.1, App. E.5: NLQ data "restructured to fit a multiple-choice question format"; how is not
published). NLQ gives a query ("What did I put in the drawer?") and the time window where its answer
is seen, no textual answer; lvu asks for that window: "Which part of the video answers the question
"...""?, the options four time spans (mm:ss–mm:ss), the true window and three decoys.

Fields read (nlq_train.json / nlq_val.json, schema at ego4d-data.org/docs/data/annotations-schemas):
`videos[].video_uid`, `.clips[].clip_uid`, `.clips[].annotations[].annotation_uid`,
`.annotations[].language_queries[]`: `query`, `template`, `clip_start_sec` / `clip_end_sec` (seconds
from the clip's start) and `video_start_sec` / `video_end_sec` (from the full video's start). A clip
whose VIDEOS/<clip_uid>.<ext> exists uses the clip times (Ego4D's `clips` download); else
VIDEOS/<video_uid>.<ext> (`full_scale`) with the video times.

Decoys (default): other queries' answer windows of the same clip (or video), at least a whole
second apart from the truth and from each other as shown, never a query with the same text, each
window drawn with weight = its remaining quota of 3 — every window is the answer once and a decoy
about three times, so no options-only rule (longest, earliest, ...) does better than chance. A
question with fewer than three such windows gets three windows of its own length at uniformly
drawn positions ("shifted"). The evidence (`extra.evidence` = the true window) lets
`lvu build ladder` cut these videos (MLVU's ER is on its Time-ladder).
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, ClassVar

from lvu.benchmarks.haystack import AnswerBalancer
from lvu.construct.convert_common import (N_DECOYS, ConvertPipeline, DecoyStage, Problem, allocate_decoys, apart,
                                          parse_choice, place, seeded, shown_span, skip_item, span_text, video_index)
from lvu.construct.pipeline import Item, register_pipeline, register_stage
from lvu.errors import DataError, LvuError
from lvu.types import Sample, VideoRef

QUESTION = 'Which part of the video answers the question "{query}"?'
"""lvu's wording: NLQ has no textual answers, so the question asks for the answer's time span."""
DECOY_PROMPT = """\
You are helping to build a multiple-choice benchmark from Ego4D's natural language queries. Each \
query is answered by one time span of the same first-person video. The question is:

"{query}"

Below are other queries about the same video, numbered. Choose the {n} whose subjects (objects, \
places, people, actions) are most easily confused with the question's; their time spans become the \
wrong options.

{candidates}

Reply with exactly one line: DECOYS: <number>, <number>, <number>"""
"""lvu's prompt for `--llm` (the paper does not say how ER's options were made)."""
MAX_CANDIDATES = 40
"""At most this many other queries are listed in the prompt (the first ones in time)."""
TOLERANCE_S = 0.5
"""A window may end this far past the decoded video (frame rounding) and is clipped to it."""
SHIFT_TRIES = 200
JITTER_S = (1.0, 3.0)
"""How far (seconds, either way) a decoy taken from another query's answer is moved (`jittered`)."""
EXPECTED = ('expected an Ego4D NLQ annotation file (nlq_train.json / nlq_val.json): {"videos": [{"video_uid", '
            '"clips": [{"clip_uid", "annotations": [{"annotation_uid", "language_queries": [{"query", '
            '"clip_start_sec", "clip_end_sec", ...}]}]}]}]}')


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def _same(a: str, b: str) -> bool:
    return re.sub(r"\W+", " ", a).strip().lower() == re.sub(r"\W+", " ", b).strip().lower()


def read_nlq(path: Path) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Every language query of one file ({source, id, query, template, video_uid, clip_uid, ...,
    clip: [s, e], video: [s, e]}) and the elements that are malformed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"{path}: not readable JSON ({type(e).__name__}) — {EXPECTED}") from None
    if not isinstance(data, dict) or not isinstance(data.get("videos"), list):
        raise DataError(f"{path}: not an Ego4D NLQ annotation file (no top-level 'videos' list) — {EXPECTED}")
    records: list[dict[str, Any]] = []
    problems: list[Problem] = []
    timed = 0
    for vi, video in enumerate(data["videos"]):
        vuid = video.get("video_uid") if isinstance(video, dict) else None
        if not isinstance(vuid, str) or not isinstance(video.get("clips"), list):
            problems.append(Problem(f"{path.name}: videos[{vi}]", f"videos[{vi}]", "bad",
                                    "no video_uid or no clips list — each video needs both"))
            continue
        for ci, clip in enumerate(video["clips"]):
            cuid = clip.get("clip_uid") if isinstance(clip, dict) else None
            where = f"{path.name}: video {vuid} clip {cuid or ci}"
            if not isinstance(cuid, str) or not isinstance(clip.get("annotations"), list):
                problems.append(Problem(where, f"{vuid}/clips[{ci}]", "bad", "no clip_uid or no annotations list"))
                continue
            for ai, ann in enumerate(clip["annotations"]):
                auid = ann.get("annotation_uid") if isinstance(ann, dict) else None
                queries = ann.get("language_queries") if isinstance(ann, dict) else None
                if not isinstance(auid, str) or not isinstance(queries, list):
                    problems.append(Problem(where, f"{cuid}/annotations[{ai}]", "bad",
                                            "no annotation_uid or no language_queries list"))
                    continue
                for qi, q in enumerate(queries):
                    rid, source = f"{auid}_{qi}", f"{where} annotation {auid} query {qi}"
                    if not isinstance(q, dict):
                        problems.append(Problem(source, rid, "bad", "not an object"))
                        continue
                    clip_span = [_number(q.get("clip_start_sec")), _number(q.get("clip_end_sec"))]
                    video_span = [_number(q.get("video_start_sec")), _number(q.get("video_end_sec"))]
                    timed += None not in clip_span or None not in video_span
                    text = q.get("query")
                    if not isinstance(text, str) or not text.strip():
                        problems.append(Problem(source, rid, "bad", "no query text"))
                        continue
                    records.append({"source": source, "id": rid, "query": " ".join(text.split()),
                                    "template": q.get("template") if isinstance(q.get("template"), str) else None,
                                    "video_uid": vuid, "clip_uid": cuid, "annotation_uid": auid, "query_index": qi,
                                    "clip": clip_span, "video": video_span})
    if (records or problems) and not timed:
        raise DataError(f"{path}: no query has an answer window (clip_start_sec / clip_end_sec) — the unannotated "
                        "test split cannot be converted; pass nlq_train.json or nlq_val.json")
    return records, problems


def window_problem(span: list[float | None], duration: float, base: str) -> str | None:
    """Why a window cannot be used in a video of `duration` seconds (None: it can)."""
    a, b = span
    if a is None or b is None:
        return f"no {base}_start_sec / {base}_end_sec numbers"
    if a < 0 or b < a:
        return f"window {a:g}–{b:g} s is not 0 <= start <= end"
    if b > duration + TOLERANCE_S:
        return f"window {a:g}–{b:g} s ends past the video ({duration:.1f} s) — out of range for this file"
    return None


def shifted(truth: tuple[float, float], duration: float, rng: Any) -> list[list[float]] | None:
    """Three windows of the truth's length at uniform positions, apart from it and each other."""
    length = truth[1] - truth[0]
    chosen: list[tuple[float, float]] = []
    for _ in range(SHIFT_TRIES):
        start = round(rng.uniform(0.0, max(0.0, duration - length)), 3)
        w = (start, min(round(start + length, 3), duration))
        if all(apart(w, x) for x in [truth, *chosen]):
            chosen.append(w)
            if len(chosen) == N_DECOYS:
                return [list(x) for x in chosen]
    return None


def jittered(decoys: list[list[float]], truth: tuple[float, float], duration: float, rng: Any) -> list[list[float]]:
    """Each decoy moved by JITTER_S (either way, as much as fits), still a second apart from the
    truth and the other options: another query's exact window would be shown again as that query's
    answer, so whoever holds the other questions' answers could rule it out (never right when
    shown); moved, its text is new. A decoy that fits nowhere moved stays where it was (and when
    that clashes with one moved before it, none is moved)."""
    placed: list[tuple[float, float]] = []
    for a, b in decoys:
        for _ in range(SHIFT_TRIES):
            d = rng.choice((-1, 1)) * rng.uniform(*JITTER_S)
            w = (round(a + d, 3), round(b + d, 3))
            if w[0] >= 0 and w[1] <= duration and all(apart(w, x) for x in [truth, *placed]):
                break
        else:
            w = (a, b)
            if not all(apart(w, x) for x in placed):
                return [list(x) for x in decoys]
        placed.append(w)
    return [list(w) for w in placed]


def plan_questions(records: list[dict[str, Any]], root: Path, seed: int) -> list[Item]:
    """Items (one per query, or skipped with the reason) with default decoys and answer positions,
    drawn per clip (or video) so another clip's records never change them."""
    from lvu.construct.signals import probe_video

    index = video_index(root)
    probed: dict[str, Any] = {}
    items: list[Item] = []
    scopes: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in records:
        base, uid = next(((b, u) for b, u in (("clip", r["clip_uid"]), ("video", r["video_uid"])) if index.get(u)),
                         (None, ""))
        if base is None:  # the same line for every query of the clip: the command prints it once, counted
            why = f"neither {r['clip_uid']}.mp4 (the clip) nor {r['video_uid']}.mp4 (the full video) is under {root}"
            items.append(skip_item(Problem(r["source"], r["id"], "missing", why)))
            continue
        path = index[uid][0]
        if uid not in probed:
            try:
                probed[uid] = probe_video(path)
            except LvuError as e:
                probed[uid] = e
        info = probed[uid]
        if isinstance(info, LvuError):
            items.append(skip_item(Problem(r["source"], r["id"], "unreadable", str(info)), str(path)))
            continue
        unusable = window_problem(r[base], info.duration, base)
        if unusable:
            items.append(skip_item(Problem(r["source"], r["id"], "out-of-range" if "out of range" in unusable else "bad",
                                           unusable), str(path)))
            continue
        a, b = r[base]
        scopes[(base, uid)].append(len(items))
        items.append(Item(r["id"], str(path.resolve()), {
            "source": r["source"], "query": r["query"], "template": r["template"], "video_uid": r["video_uid"],
            "clip_uid": r["clip_uid"], "annotation_uid": r["annotation_uid"], "query_index": r["query_index"],
            "time_base": base, "duration": round(info.duration, 3), "window": [a, min(b, round(info.duration, 3))]}))
    for (base, uid), members in scopes.items():
        _decoys_for_scope([items[i] for i in members], seeded(seed, base, uid))
    for i, item in enumerate(items):
        if "window" in item.data and "decoys" not in item.data:
            items[i] = skip_item(Problem(item.data["source"], item.id, "no-decoys",
                                         "no room for three decoy spans a second apart from the answer in "
                                         f"{item.data['duration']:.0f} s"), item.path)
    return items


def _decoys_for_scope(members: list[Item], rng: Any) -> None:
    """Default decoys (other answers, else shifted copies), LLM candidates and answer positions."""
    windows = [tuple(m.data["window"]) for m in members]

    def ok(i: int, j: int) -> bool:
        return i != j and apart(windows[i], windows[j]) and not _same(members[i].data["query"], members[j].data["query"])

    candidates = [[j for j in range(len(members)) if ok(i, j)] for i in range(len(members))]
    drawn = allocate_decoys(candidates, {j: 3.0 for j in range(len(members))}, rng,
                            fits=lambda chosen, c: all(apart(windows[c], windows[x]) for x in chosen))
    balance = AnswerBalancer(rng)
    for i, m in enumerate(members):
        if (chosen := drawn[i]) is not None:
            m.data |= {"decoys": [list(windows[j]) for j in chosen], "decoy_source": "other answers",
                       "decoy_queries": [members[j].id for j in chosen]}
        elif (shift := shifted(windows[i], m.data["duration"], rng)) is not None:
            m.data |= {"decoys": shift, "decoy_source": "shifted"}
        else:
            continue
        m.data["answer"] = balance.take(N_DECOYS + 1)
        ordered = sorted(candidates[i], key=lambda j: windows[j])[:MAX_CANDIDATES]
        m.data["candidates"] = [[members[j].id, members[j].data["query"], list(windows[j])] for j in ordered]


@register_stage("nlq.decoys")
class NlqDecoys(DecoyStage):
    output = "decoys"
    prompt = DECOY_PROMPT

    def llm_payload(self, item: Item) -> dict[str, Any]:
        return {"query": item.data["query"], "candidates": item.data["candidates"]}

    def llm_prompt(self, payload: dict[str, Any]) -> str | None:
        cands = payload["candidates"]
        if len(cands) < N_DECOYS:
            return None
        lines = "\n".join(f"{n}. {q} ({span_text(*w)})" for n, (_, q, w) in enumerate(cands, 1))
        return DECOY_PROMPT.format(query=payload["query"], n=N_DECOYS, candidates=lines)

    def parse(self, reply: str, payload: dict[str, Any]) -> list[Any]:
        cands = payload["candidates"]
        chosen = [int(n) for n in parse_choice(reply, [str(n) for n in range(1, len(cands) + 1)])]
        spans = [tuple(cands[n - 1][2]) for n in chosen]
        for x in range(len(spans)):
            for y in range(x):
                if not apart(spans[x], spans[y]):
                    raise ValueError(f"{chosen[y]} and {chosen[x]} overlap as shown ({span_text(*spans[y])}, "
                                     f"{span_text(*spans[x])}) — choose queries whose spans are a second apart")
        return [list(s) for s in spans]


@register_pipeline("convert-ego4d-nlq")
class Ego4dNlqConvert(ConvertPipeline):
    """MLVU's Ego Reasoning from Ego4D NLQ: INPUTS = nlq_train.json / nlq_val.json, then the videos
    folder (<clip_uid>.mp4 or <video_uid>.mp4)."""

    jsonl_name: ClassVar[str] = "ego_reasoning.jsonl"
    stage_class = NlqDecoys

    def read(self, annotations: list[Path], videos: Path) -> list[Item]:
        records, problems = [], []
        for path in annotations:
            got, bad = read_nlq(path)
            records += got
            problems += bad
        seen: dict[str, str] = {}
        unique = []
        for r in records:
            if r["id"] in seen:
                problems.append(Problem(r["source"], r["id"] + "~" + r["source"], "repeated",
                                        f"annotation {r['annotation_uid']} query {r['query_index']} again "
                                        f"(first at {seen[r['id']]}) — pass each split file once"))
                continue
            seen[r["id"]] = r["source"]
            unique.append(r)
        return plan_questions(unique, videos, self.options["seed"]) + [skip_item(p) for p in problems]

    def sample(self, item: Item, decoys: list[Any]) -> Sample:
        d = item.data
        decoys_from_plan = decoys == d["decoys"]
        rng = seeded(self.options["seed"], item.id)
        moved = decoys
        if not (decoys_from_plan and d.get("decoy_source") == "shifted"):  # other queries' answers: moved
            moved = jittered(decoys, tuple(d["window"]), d["duration"], rng)
        spans = place(d["window"], moved, d["answer"], rng)
        query = d["query"].rstrip(" ?.!")
        labels: dict[str, str | list[str]] = {"task": "ER", "question_type": "ego", "group": "Single Detail",
                                              "template": d["template"] or "none"}
        extra: dict[str, Any] = {"source": d["source"], "evidence": d["window"], "option_spans": [list(shown_span(*s)) for s in spans],
                 "query": d["query"], **{k: d[k] for k in ("video_uid", "clip_uid", "annotation_uid", "query_index",
                                                          "time_base")}}
        if moved is not decoys:  # where each decoy came from, before it was moved
            extra["decoy_windows"] = decoys
        if d.get("decoy_queries") and decoys_from_plan:
            extra["decoy_queries"] = d["decoy_queries"]
        return Sample(id=item.id, benchmark="ego4d-nlq", video=VideoRef(path=item.path, duration=d["duration"]),
                      question=QUESTION.format(query=query), options=[span_text(*s) for s in spans],
                      answer=d["answer"], labels=labels, extra=extra)
