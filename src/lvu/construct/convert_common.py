"""What `lvu build convert ucf-crime|ego4d-nlq` share (MLVU's two converted tasks, docs/build.md
"MLVU's converted tasks"): problems reported per record, decoys drawn so that the options alone do
not give the answer away, time spans as text, one build stage that keeps the default decoys or
lets an LLM choose them, and the export to lvu JSONL.

A converter's pipeline plans everything in `items()` (parsing, finding and probing videos, the
default decoys, the answer positions — all randomness from the seed); every record becomes one
item, a record that cannot be converted an item whose `data["skip"]` says why (`lvu build status`
lists them). One stage, `<prefix>.decoys`, one unit per question: without `--llm` it returns the
planned decoys; with it, it asks the LLM (one retry with the parse error) and, when both replies
are unusable, records that the planned decoys stand (counted). The export writes the JSONL and
summary.json (converted, skipped per kind with every problem, decoy sources, the time-span rules).
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field

from lvu.construct.pipeline import Item, Pipeline, PipelineOptions, Skip, Stage, StageFailure, Unit
from lvu.errors import LvuError
from lvu.types import Sample

K = TypeVar("K", bound=Hashable)
N_OPTIONS = 4
N_DECOYS = N_OPTIONS - 1
SUMMARY_NAME = "summary.json"
_UNUSED = 1e-3
"""Weight of a decoy candidate whose quota is spent: used only when nothing else fits."""


@dataclass(frozen=True)
class Problem:
    """One record that was not converted: where it is, which record, why (one line)."""

    source: str
    """file:line (UCF-Crime) or file: video/clip/annotation path (NLQ)."""
    record: str
    kind: str
    """missing / short / unreadable / bad / out-of-range / repeated / no-decoys."""
    reason: str

    def line(self) -> str:
        return f"{self.source}: {self.record}: {self.reason}"


def skip_item(problem: Problem, path: str = "") -> Item:
    """A record that is not converted, as an item the stage skips with the reason."""
    return Item(problem.record, path, {"skip": problem.reason, "kind": problem.kind, "source": problem.source})


def problems_of(items: Sequence[Item]) -> list[Problem]:
    return [Problem(i.data["source"], i.id, i.data["kind"], i.data["skip"]) for i in items if "skip" in i.data]


def seeded(seed: int, *scope: object) -> random.Random:
    """A generator for one scope (a clip, the whole file): adding another clip changes no other's draws."""
    return random.Random("|".join(str(s) for s in (seed, *scope)))


def allocate_decoys(candidates: Sequence[Sequence[K]], quota: dict[K, float], rng: random.Random, *,
                    k: int = N_DECOYS, fits: Callable[[list[K], K], bool] = lambda chosen, c: True) -> list[list[K] | None]:
    """k decoys per question from its candidates (None: fewer than k fit), each drawn with weight =
    its remaining quota. A quota of 3 × (times a key is the answer) makes every key shown about four
    times as often as it is right, so "pick the option that is usually right" scores chance (the
    options-only leak); questions with the fewest candidates choose first. `fits(chosen, c)`: whether
    c can join the decoys already chosen (non-overlapping time spans)."""
    left = dict(quota)
    out: list[list[K] | None] = [None] * len(candidates)
    order = sorted(range(len(candidates)), key=lambda i: (len(candidates[i]), rng.random()))
    for i in order:
        chosen: list[K] = []
        for _ in range(k):
            pool = [c for c in candidates[i] if c not in chosen and fits(chosen, c)]
            if not pool:
                break
            chosen.append(rng.choices(pool, [max(left.get(c, 0.0), 0.0) + _UNUSED for c in pool])[0])
        if len(chosen) == k:
            out[i] = chosen
            for c in chosen:
                left[c] = left.get(c, 0.0) - 1
    return out


def place(answer: Any, decoys: Sequence[Any], position: int, rng: random.Random) -> list[Any]:
    """The options: the answer at `position` (balanced by the planner), the decoys shuffled around it."""
    rest = list(decoys)
    rng.shuffle(rest)
    return [*rest[:position], answer, *rest[position:]]


# ---- time spans as option text -----------------------------------------------------------------

def clock(seconds: float) -> str:
    """mm:ss, or h:mm:ss from an hour on."""
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


def shown_span(start: float, end: float) -> tuple[int, int]:
    """The whole seconds an option shows: start rounded down, end up, at least one second."""
    a = math.floor(start + 1e-6)
    return a, max(math.ceil(end - 1e-6), a + 1)


def span_text(start: float, end: float) -> str:
    a, b = shown_span(start, end)
    return f"{clock(a)}–{clock(b)}"


def apart(x: tuple[float, float], y: tuple[float, float], gap: int = 1) -> bool:
    """Whether two spans, as shown, are at least `gap` whole seconds apart (so no two options name
    the same moment)."""
    a, b = shown_span(*x), shown_span(*y)
    return a[1] + gap <= b[0] or b[1] + gap <= a[0]


def parse_span_text(text: str) -> tuple[int, int] | None:
    """(start, end) seconds of an option written by span_text; None for any other text."""
    m = re.fullmatch(r"((?:\d+:)?\d+:\d\d)–((?:\d+:)?\d+:\d\d)", text.strip())
    if not m:
        return None

    def secs(t: str) -> int:
        parts = [int(p) for p in t.split(":")]
        return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))

    return secs(m.group(1)), secs(m.group(2))


# ---- the options-only audit written with every conversion ----------------------------------------

def _tie_score(scores: Sequence[float], answer: int) -> float:
    """1/k when the answer is among the k options sharing the best score (a uniform tie-break), else 0."""
    best = [i for i, v in enumerate(scores) if v == max(scores)]
    return 1 / len(best) if answer in best else 0.0


def options_only_audit(samples: Sequence[Sample]) -> dict[str, Any]:
    """Accuracy (%) of the time-span rules — pick the longest / shortest / earliest / latest span —
    on questions whose options are all spans (chance: 100 / options; k tied best options score 1/k).
    The generic options-only audit every build ends with (OUT/leak.json, lvu.scoring.leak) reads
    span texts as text, so these are its complement for ER; {} when the options are not spans."""
    mc = [(s.answer, s.options) for s in samples if s.options and isinstance(s.answer, int)]
    parsed = [[parse_span_text(o) for o in options] for _, options in mc]
    if not mc or not all(p is not None for v in parsed for p in v):
        return {}
    spans = [[p for p in v if p is not None] for v in parsed]  # (every one: checked above)
    rules: list[tuple[str, Callable[[tuple[int, int]], int]]] = [
        ("longest", lambda p: p[1] - p[0]), ("shortest", lambda p: p[0] - p[1]),
        ("earliest", lambda p: -p[0]), ("latest", lambda p: p[0])]
    out = {}
    for name, key in rules:
        score = sum(_tie_score([key(p) for p in v], answer) for (answer, _), v in zip(mc, spans))
        out[name] = round(100 * score / len(mc), 1)
    return {"questions": len(mc), "chance": round(100 / N_OPTIONS, 1), "accuracy": out}


# ---- the pipeline ------------------------------------------------------------------------------

class ConvertOptions(PipelineOptions):
    seed: int = Field(default=0, description="all randomness (decoys, answer positions) comes from it")
    decoys: Literal["default", "llm"] = Field(default="default", description="default: drawn as documented; llm: the "
                                                                      "llm model chooses them among the candidates")


def parse_choice(reply: str, candidates: Sequence[str], n: int = N_DECOYS,
                 normalise: Callable[[str], str] = lambda t: t.strip().lower()) -> list[str]:
    """The n distinct candidates a `DECOYS: a, b, c` reply names (ValueError saying what is wrong:
    the stage asks once more with it)."""
    m = re.search(r"DECOYS\s*:\s*(.+)", reply, re.I)
    if not m:
        raise ValueError("no 'DECOYS:' line")
    named = [p.strip().strip(".*\"'`[]") for p in re.split(r"[,;]", m.group(1).splitlines()[0]) if p.strip()]
    known = {normalise(c): c for c in candidates}
    outside = [p for p in named if normalise(p) not in known]
    if outside:
        raise ValueError(f"{outside[0]!r} is not in the list — name {n} of: {', '.join(candidates)}")
    chosen = list(dict.fromkeys(known[normalise(p)] for p in named))
    if len(chosen) != n:
        raise ValueError(f"named {len(chosen)} distinct entries of the list, not {n}")
    return chosen


class DecoyStage(Stage):
    """One unit per question: the planned decoys, or (decoys=llm) the LLM's choice among the
    candidates, validated; a second unusable reply keeps the planned decoys (`fallback` says why)."""

    unit = "question"
    partial = True
    max_tokens = 200

    def uses_model(self) -> str | None:
        return "llm" if self.options.get("decoys") == "llm" else None

    def settings(self) -> Any:  # not the seed: the planned decoys are in the payload, an LLM's choice is not seeded
        return {"decoys": self.options.get("decoys")}

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit] | Skip:
        if "skip" in video.data:
            return Skip(video.data["skip"])
        if self.options.get("decoys") != "llm":
            return [Unit(video.id, "question", {"decoys": video.data["decoys"]})]
        return [Unit(video.id, "question", self.llm_payload(video))]

    def llm_payload(self, item: Item) -> dict[str, Any]:
        """What the LLM is shown (hashed into the unit's key): the question and its candidates."""
        raise NotImplementedError

    def llm_prompt(self, payload: dict[str, Any]) -> str | None:
        """The prompt, or None when there is nothing to choose (fewer candidates than decoys)."""
        raise NotImplementedError

    def parse(self, reply: str, payload: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any]:
        if self.options.get("decoys") != "llm":
            return {"decoys": unit.payload["decoys"], "source": "default"}
        prompt = self.llm_prompt(unit.payload)
        if prompt is None:
            return {"decoys": None, "source": "default", "fallback": "fewer candidates than decoys: nothing to choose"}
        reply = await ctx.generate(prompt)  # a model error fails the unit (asked again next run)
        try:
            return {"decoys": self.parse(reply, unit.payload), "source": "llm"}
        except ValueError as e:
            retry = self.retry_prompt(prompt, reply, e)
        reply = await ctx.generate(retry)
        try:
            return {"decoys": self.parse(reply, unit.payload), "source": "llm"}
        except ValueError as e:  # the planned decoys stand; counted in summary.json
            return {"decoys": None, "source": "default", "fallback": f"llm reply unusable twice: {e}"}

    def collect(self, video: Item, results: dict[str, Any]) -> Any:
        if "question" not in results:
            raise StageFailure("no result")
        return results["question"]


class ConvertPipeline(Pipeline):
    """A converter: `read(annotations, videos)` -> items; `sample(item, decoys)` -> the question."""

    Options: ClassVar[type[PipelineOptions]] = ConvertOptions
    models = {"llm": "chooses the decoys among the candidates (only with decoys=llm)"}
    jsonl_name: ClassVar[str] = ""
    stage_class: ClassVar[type[DecoyStage]] = DecoyStage

    def stages(self) -> list[Stage]:
        return [self.stage_class(self.options)]

    def items(self, inputs: Sequence[str]) -> list[Item]:
        if len(inputs) < 2:
            raise LvuError(f"{self.name} build: pass the annotation file(s), then the videos folder "
                           f"(got {len(inputs)} input(s))")
        *annotations, videos = (Path(i).expanduser() for i in inputs)
        if not videos.is_dir():
            raise LvuError(f"{videos}: not a folder — the last input is the folder holding the videos")
        for a in annotations:
            if not a.is_file():
                raise LvuError(f"{a}: file not found — pass the annotation file(s) before the videos folder")
        items = self.read(annotations, videos)
        seen: set[str] = set()
        for item in items:  # the mechanism keys items by id: a reader bug must not merge two
            if item.id in seen:
                raise LvuError(f"{self.name} build: two items named {item.id!r}")
            seen.add(item.id)
        return items

    def read(self, annotations: list[Path], videos: Path) -> list[Item]:
        raise NotImplementedError

    def sample(self, item: Item, decoys: list[Any]) -> Sample:
        raise NotImplementedError

    def export(self, state: Any, videos: Sequence[Item], out: Path) -> dict[str, Any]:
        from lvu.benchmarks.jsonl import write_samples

        results = state.outputs.get("decoys", {})
        todo = [v for v in videos if "skip" not in v.data]
        if any(v.id not in results for v in todo):
            return {}  # a unit failed or is pending: no file yet (`lvu build status` says which)
        samples: list[Sample] = []
        sources: Counter[str] = Counter()
        fallbacks: list[str] = []
        for item in todo:
            r = results[item.id]
            # the planned decoys (of this plan: a fallback stored earlier names none) unless the llm chose
            source = r["source"] if r["source"] == "llm" else item.data.get("decoy_source", "default")
            sources[source + (" (llm fallback)" if r.get("fallback") else "")] += 1
            if r.get("fallback"):
                fallbacks.append(f"{item.id}: {r['fallback']}")
            s = self.sample(item, r["decoys"] if r["source"] == "llm" else item.data["decoys"])
            samples.append(s.model_copy(update={"extra": {**s.extra, "decoys_from": source}}))
        path = write_samples(out / self.jsonl_name, samples)
        problems = problems_of(videos)
        summary = {"converted": len(samples), "skipped": dict(Counter(p.kind for p in problems)),
                   "decoys": dict(sources), "llm_fallbacks": fallbacks,
                   "time_span_rules": options_only_audit(samples), "problems": [asdict(p) for p in problems]}
        (out / SUMMARY_NAME).write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return {"jsonl": path, "samples": len(samples), "summary": out / SUMMARY_NAME}


def video_index(root: Path) -> dict[str, list[Path]]:
    """Every video file under `root` (any depth), by file name and by stem, sorted paths."""
    from lvu.construct.pipeline import VIDEO_EXTS

    index: dict[str, list[Path]] = defaultdict(list)
    for p in sorted(root.rglob("*")):
        if p.suffix.lower() in VIDEO_EXTS and p.is_file():
            index[p.name].append(p)
            if p.stem != p.name:
                index[p.stem].append(p)
    return index
