"""LVBench (Wang et al., 2024): 1,549 four-option questions on 103 YouTube videos of 30 min to 2 h.

Release (HF `THUDM/LVBench`, now `zai-org/LVBench`; code `THUDM/LVBench` f998d955): one file,
`video_info.meta.jsonl`, one video per line:

    {"key": "Cm73ma6Ibcs", "type": "cartoon",
     "video_info": {"duration_minutes": 71.4, "fps": 30.0, "resolution": {"width": 640, "height": 360}},
     "qa": [
      {"uid": "55", "answer": "D", "question_type": ["key information retrieval"], "time_reference": "00:15-00:19",
      "question": "What year appears in the opening caption of the video?\\n(A) 1636\\n(B) 1366\\n(C) 1363\\n(D) 1633"}
     ]}

Videos are the user's YouTube downloads named `<key>.mp4` (also .mkv/.webm/.mov) in `video_dir`
(default: `videos/` or the repo's `scripts/videos/` beside the release file); the official
`scripts/download.sh` (video2dataset) layout `videos/00000/000000000.mp4` + `.json` sidecar is
found through the sidecars' YouTube URLs. A missing video fails only its own questions.
`data` is the release folder, the file itself, or `hf:` / `hf:ID[@REV]` (default when `data` is
absent and LVU_OFFLINE is unset): `THUDM/LVBench` at HUB_REVISION, loaded with `datasets`; rows of
lmms-eval's flat mirror (`lmms-eval/LVBench`: one question per row) map through the same mapper.

Sample: id = str(uid) (the official scorer's key); `question` = the stem and `options` = the
four texts, parsed out of the question string exactly (stem before the last "\\n(A) ", one space
after each "(X)" removed, nothing else touched); the raw string is kept in extra["question_raw"].
labels: `question_type` = capability codes (multi-label list, duplicates kept as the scorer
counts them), `video_type` = the paper's category name, `clue_length` (CLUE_BINS of the
time_reference length) and `video_length` (LENGTH_BINS) for Sec. 4.5's analyses (`lvu analyse
clue-length` / `video-length`). extra: key, uid, answer_letter,
time_reference (raw) with clue_spans / clue_seconds parsed from it, duration_s and fps from
video_info (analysis only: frame plans use the user's own copy of the video).

Protocol (official = the paper + the THUDM/LVBench scorer; the paper gives no sampling detail):
- frames: `frames` (default 32, LLaVA-NeXT's row; the paper used 10 GPT-4o, 16 PLLaVA,
  96 TimeChat) uniform segment centres; `fps=F` instead reads one frame every 1/F s, capped at
  `frames` by uniform downsampling (the "native" rows: fps=1, e.g. frames=3600 for Gemini).
  frames=0 gives a blind text-only run. No subtitles and no audio exist in LVBench.
- prompt (Sec. 4.1): frames, then the released question string (stem and "(A) ..." lines:
  the template's "Question (A) Option1 ... (D) Option4") + "\\n" + PROMPT_INSTRUCTION. The paper
  prints the template on one line with no separator detail; we keep the release's own newlines
  and add none of the paper's sentence punctuation.
- extraction: `polish_answer` from lvbench/utils/answer_util.py, exactly: strip, keep the text
  before the first ")", then what follows a "(", then the first space-separated word, then its
  first character. Quirks kept: "Answer: B" -> "A", "The answer is B" -> "T", "**B**" -> "*",
  "b" stays lower case (wrong), "None of the above" -> "N". The paper's GLM-4 fallback for
  unmatched replies is not reproducible and is not applied.
- scoring (compute_accuracy.py): exact string equality of that character with `answer`. Every
  answered question counts; a reply outside A-D is wrong, not dropped. A uid with no answer
  (here: a failed sample, e.g. missing video) is skipped by the official scorer, so it is left out
  of every denominator and listed in a "left out" table.
- aggregation: micro overall; Table 2 per capability, a question counting in every type it
  carries (ER, EU, KIR, TG, Rea, Sum, Overall); Table 3 per video category.
- write_submission: the HF Space leaderboard's result.json (fractions, test_acc.py's keys) and
  the scorer's answer file {uid: letter}. read_predictions (`lvu score`) also reads that answer
  file (compared verbatim, as compute_accuracy does) and lmms-eval sample logs.

compat="lmms-eval" (lmms_eval/tasks/lvbench, 0.7.3): lmms:N frames (linspace over frame numbers),
prompt = question string + "\\nAnswer the question with the option letter" (the YAML's, no final
period), 16 new tokens, extraction `extract_mcq_answer` (0.7.3's priority ranking, choices A-D),
failed samples count as wrong; lmms-eval itself reports only the overall mean. VLMEvalKit has no
LVBench task, so compat="vlmevalkit" is refused.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from lvu.benchmarks.base import (
    BadRecord,
    Benchmark,
    Breakdown,
    json_id_map,
    read_prediction_lines,
    register_benchmark,
)
from lvu.benchmarks.lvbench_ref import REFERENCE
from lvu.errors import DataError, LvuError
from lvu.media.sampling import Fps, Lmms, Uniform
from lvu.scoring.choice import lmms_extract_mcq, mean_pct as _pct
from lvu.types import (
    LETTERS,
    Frame,
    InputPlan,
    Prediction,
    Prompt,
    Response,
    Sample,
    SampleResult,
    Score,
    Subtitle,
    Text,
)

PROMPT_INSTRUCTION = ("Please select the best answer from the options above and directly provide the letter "
                      "representing your choice without giving any explanation.")
LMMS_POST_PROMPT = "\nAnswer the question with the option letter"
META_FILE = "video_info.meta.jsonl"
HUB_ID = "THUDM/LVBench"
HUB_REVISION = "5059bb7a722f6ab14b3636d53ad93bd0559bcbf8"  # "Upload video_info.meta.jsonl"; unchanged on main since
EXPECTED_VIDEOS, EXPECTED_QUESTIONS = 103, 1549
COMPATS = ("official", "lmms-eval", "vlmevalkit")
CHOICES = "ABCD"
VIDEO_EXTS = (".mp4", ".mkv", ".webm", ".mov")

# scripts/test_acc.py's name_map, in Table 2's column order.
CAPABILITIES = {"entity recognition": "ER", "event understanding": "EU", "key information retrieval": "KIR",
                "temporal grounding": "TG", "reasoning": "Rea", "summarization": "Sum"}
# Raw `type` -> the paper's category names. Only "cartoon" is confirmed in quoted records; the
# others follow the per-type files of a public LVBench mirror (sport, documentary, live,
# selfmedia, tv) and the paper's names; anything else is shown as written.
VIDEO_TYPES = {"sport": "Sports", "sports": "Sports", "documentary": "Documentary", "live": "Event Record",
               "event record": "Event Record", "selfmedia": "Lifestyle", "self-media": "Lifestyle",
               "lifestyle": "Lifestyle", "tv": "TV Show", "tv show": "TV Show", "tvshow": "TV Show",
               "cartoon": "Cartoon", "animation": "Cartoon"}
CATEGORY_ORDER = ("Sports", "Documentary", "Event Record", "Lifestyle", "TV Show", "Cartoon")
CLUE_BINS = ("0-10 s", "10-60 s", ">60 s")
"""Sec. 4.5's clue-duration ranges (the time_reference span length): label `clue_length`."""
LENGTH_BINS = ("<30 min", "30-60 min", "60-90 min", "90-120 min", ">120 min")
"""Video-length bins for Sec. 4.5 / Fig. 5 (its threshold: 90 minutes): label `video_length`."""


def clue_bin(seconds: float) -> str:
    return CLUE_BINS[0] if seconds <= 10 else CLUE_BINS[1] if seconds <= 60 else CLUE_BINS[2]


def length_bin(seconds: float) -> str:
    return LENGTH_BINS[min(len(LENGTH_BINS) - 1, int(seconds // 1800))]

_OPTIONS = re.compile(r"^(?P<stem>.*)\n\(A\) ?(?P<A>.*?)\n\(B\) ?(?P<B>.*?)\n\(C\) ?(?P<C>.*?)\n\(D\) ?(?P<D>.*)$",
                      re.DOTALL)
_CLOCK = r"\d+(?::\d{1,2}){1,2}(?:\.\d+)?"
_SPAN = re.compile(rf"({_CLOCK})\s*[-–~]\s*({_CLOCK})")


# ---- the official extraction (lmms-eval's: lvu.scoring.choice.lmms_extract_mcq) ----------


def polish_answer(answer: str) -> str:
    """lvbench/utils/answer_util.py::polish_answer, line for line (its try/except cannot fire)."""
    answer = answer.strip()
    answer = answer.split(")")[0]
    answer = answer.strip()
    if "(" in answer:
        answer = answer.split("(")[1]
        answer = answer.strip()
    answer = answer.split(" ")[0]
    if len(answer) > 0:
        return answer[0]
    return answer


# ---- release records -> Samples ----------------------------------------------------------------


class _RecordError(Exception):
    """'<what> — <fix>' for one record."""


class _Unparsed(str):
    """A line that is not JSON: why."""


def parse_question(raw: str) -> tuple[str, list[str]]:
    """(stem, [A, B, C, D]) from a released question string; _RecordError if it has no option lines."""
    m = _OPTIONS.match(raw)
    if not m:
        raise _RecordError("question has no '\\n(A) …\\n(B) …\\n(C) …\\n(D) …' option lines — "
                           "LVBench questions carry their four options inline")
    return m["stem"], [m[c] for c in CHOICES]


def parse_time_reference(text: Any) -> list[tuple[float, float]]:
    """Clue spans in seconds from 'MM:SS-MM:SS' / 'H:MM:SS-H:MM:SS' (several allowed); [] if none."""
    def seconds(clock: str) -> float:
        total = 0.0
        for part in clock.split(":"):
            total = total * 60 + float(part)
        return total

    return [(seconds(a), seconds(b)) for a, b in _SPAN.findall(str(text or ""))]


def _rows(qa: Any) -> list[dict]:
    """`qa` as a list of dicts; `datasets` may hand a list of structs over column-wise."""
    if isinstance(qa, dict):
        n = max((len(v) for v in qa.values() if isinstance(v, list)), default=0)
        return [{k: (v[i] if isinstance(v, list) else v) for k, v in qa.items()} for i in range(n)]
    if not isinstance(qa, list):
        raise _RecordError(f"'qa' is a {type(qa).__name__}, not a list — each line needs its list of questions")
    return qa


VideoPath = Callable[[str, "str | None"], str]
"""(YouTube key, a row's own relative video_path or None) -> the video file's path."""


def map_record(record: Any, where: str, video_path: VideoPath) -> tuple[list[Sample], list[BadRecord]]:
    """One release line (a video with its `qa` list) or one flat hub row (a question with its
    video's `key`/`type`) -> Samples; per-question problems become BadRecords naming `where`."""
    if not isinstance(record, dict):
        return [], [BadRecord(id=where, error=f"{where}: a JSON {type(record).__name__}, not a video object — "
                                              f"each line of {META_FILE} is one video")]
    key = record.get("key")
    if not isinstance(key, str) or not key:
        return [], [BadRecord(id=where, error=f"{where}: no 'key' (the YouTube id naming <key>.mp4) — fix the line")]
    try:
        questions = _rows(record["qa"]) if "qa" in record else [record]
    except _RecordError as e:
        return [], [BadRecord(id=where, error=f"{where}: video {key}: {e}")]
    info = record.get("video_info") if isinstance(record.get("video_info"), dict) else {}
    vtype = str(record.get("type") or "")
    samples, bad = [], []
    for i, qa in enumerate(questions):
        uid = qa.get("uid") if isinstance(qa, dict) else None
        label = f"{where} qa[{i}]" if uid is None else f"uid {uid}"
        try:
            samples.append(_sample(qa, key, vtype, info, video_path))
        except _RecordError as e:
            bad.append(BadRecord(id=str(uid) if uid is not None else f"{where} qa[{i}]",
                                 error=f"{where}: {label} (video {key}): {e}"))
    return samples, bad


def _sample(qa: Any, key: str, vtype: str, info: dict, video_path: VideoPath) -> Sample:
    if not isinstance(qa, dict):
        raise _RecordError(f"a {type(qa).__name__}, not a question object — fix the 'qa' entry")
    missing = [f for f in ("uid", "question", "answer") if qa.get(f) in (None, "")]
    if missing:
        raise _RecordError(f"no {', '.join(missing)} — every question needs uid, question and answer")
    raw, answer = qa["question"], qa["answer"]
    if isinstance(qa.get("options"), list) and qa["options"]:  # a mirror with an options field
        stem, options = str(raw), [str(o) for o in qa["options"]]
        raw = stem + "".join(f"\n({LETTERS[j]}) {o}" for j, o in enumerate(options))
    else:
        stem, options = parse_question(str(raw))
    if not isinstance(answer, str) or answer not in CHOICES[: len(options)]:
        raise _RecordError(f"answer {answer!r} is not one of {', '.join(CHOICES[: len(options)])} — "
                           "the answer must be the correct option's letter")
    types = qa.get("question_type") or []
    types = [types] if isinstance(types, str) else [str(t) for t in types]
    spans = parse_time_reference(qa.get("time_reference"))
    minutes = info.get("duration_minutes")
    clue_seconds = sum(b - a for a, b in spans) if spans else None
    labels: dict[str, str | list[str]] = {
        "question_type": [CAPABILITIES.get(t.strip().lower(), t) for t in types],
        "video_type": VIDEO_TYPES.get(vtype.strip().lower(), vtype or "unknown")}
    if clue_seconds is not None:  # for lvu analyse clue-length / video-length (aggregate ignores them)
        labels["clue_length"] = clue_bin(clue_seconds)
    if isinstance(minutes, (int, float)):
        labels["video_length"] = length_bin(float(minutes) * 60)
    return Sample(
        id=str(qa["uid"]), benchmark="lvbench",
        video={"path": video_path(key, qa.get("video_path") or None)},
        question=stem, options=options, answer=CHOICES.index(answer),
        labels=labels,
        extra={"key": key, "uid": qa["uid"], "question_raw": str(raw), "answer_letter": answer,
               "question_type_raw": types, "type_raw": vtype, "time_reference": qa.get("time_reference"),
               "clue_spans": [list(s) for s in spans],
               "clue_seconds": clue_seconds,
               "duration_s": float(minutes) * 60 if isinstance(minutes, (int, float)) else None,
               "fps": info.get("fps")},
    )


class VideoIndex:
    """<key>.<ext> in the video folder; else video2dataset's `NNNNN/NNNNNNNNN.mp4` found through
    its `.json` sidecars' YouTube URLs (scanned once, only when a key is not found directly)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._sidecars: dict[str, Path] | None = None

    def __call__(self, key: str, rel: str | None = None) -> str:
        if rel:
            return str((self.root / rel).resolve())
        for ext in VIDEO_EXTS:
            if (p := self.root / f"{key}{ext}").exists():
                return str(p.resolve())
        if self._sidecars is None:
            self._sidecars = self._scan()
        return str(self._sidecars.get(key) or (self.root / f"{key}.mp4").resolve())

    def _scan(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        if not self.root.is_dir():
            return found
        for side in self.root.rglob("*.json"):
            try:
                meta = json.loads(side.read_text(encoding="utf-8"))
                m = re.search(r"(?:v=|youtu\.be/|shorts/)([\w-]{6,})", str(meta.get("url", "")))
            except (OSError, ValueError, AttributeError):
                continue
            video = next((v for ext in VIDEO_EXTS if (v := side.with_suffix(ext)).exists()), None)
            if m and video is not None:
                found.setdefault(m.group(1), video.resolve())
        return found


# ---- the benchmark ----------------------------------------------------------------------------


@register_benchmark("lvbench")
class LvbenchBenchmark(Benchmark):
    """LVBench (THUDM): 103 hour-long videos, 1,549 MCQs; official prompt, polish_answer, Table 2/3."""

    defaults: ClassVar[dict[str, Any]] = {"frames": 32, "fps": None, "resize": None, "compat": "official"}
    expected_counts: ClassVar[dict[str, int]] = {"all": EXPECTED_QUESTIONS}
    reference: ClassVar[list[dict[str, Any]]] = REFERENCE

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        s = self.settings
        if s["compat"] not in COMPATS:
            raise LvuError(f"compat={s['compat']!r} is unknown — use one of {', '.join(COMPATS)}")
        if s["compat"] == "vlmevalkit":
            raise LvuError("compat=vlmevalkit: VLMEvalKit has no LVBench task (checked at e8e78f05) — "
                           "use compat=official or compat=lmms-eval")
        if isinstance(s["frames"], bool) or not isinstance(s["frames"], int) or s["frames"] < 0:
            raise LvuError(f"frames={s['frames']!r} is not a frame count — use a whole number such as 32 (0: no video)")
        if s["fps"] is not None and (isinstance(s["fps"], bool) or not isinstance(s["fps"], (int, float))
                                     or s["fps"] <= 0):
            raise LvuError(f"fps={s['fps']!r} is not a positive rate — e.g. fps=1 (frames then caps the count)")
        self._stats: dict[str, Any] = {}

    @property
    def official(self) -> bool:
        return self.settings["compat"] == "official"

    # ---- loading ------------------------------------------------------------------------------

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        data = self.settings.get("data")
        if data is None or str(data).startswith("hf:"):
            return self._load_hub(str(data or "hf:"))
        path = Path(data).expanduser()
        if path.is_dir():
            found = [p for p in (path / META_FILE, path / "data" / META_FILE) if p.is_file()]
            if not found:
                raise DataError(f"{path}: no {META_FILE} (looked in the folder and its data/) — pass the "
                                "LVBench release folder or the file itself with --data")
            path = found[0]
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise DataError(f"{path}: file not found — pass LVBench's {META_FILE} or its folder with --data") from None
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(f"{path}: cannot read ({e}) — it must be the UTF-8 JSONL {META_FILE}") from None
        index = VideoIndex(self._video_dir(path.parent))
        records = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append((f"{path}:{lineno}", json.loads(line)))
            except json.JSONDecodeError as e:
                records.append((f"{path}:{lineno}", _Unparsed(f"not valid JSON ({e.msg} at column {e.colno})")))
        return self._map_all(records, index)

    def _video_dir(self, base: Path) -> Path:
        if self.settings.get("video_dir"):
            return Path(self.settings["video_dir"]).expanduser()
        candidates = [base / "videos", base / "scripts" / "videos", base.parent / "videos",
                      base.parent / "scripts" / "videos"]
        return next((c for c in candidates if c.is_dir()), candidates[0])

    def _load_hub(self, spec: str) -> tuple[list[Sample], list[BadRecord]]:
        if os.environ.get("LVU_OFFLINE"):
            raise LvuError(f"LVU_OFFLINE is set: pass --data with a local LVBench folder ({META_FILE})")
        try:
            import datasets
        except ImportError:
            raise LvuError("loading LVBench from the hub needs `datasets`: pip install 'lvu[hub]' "
                           f"(or pass --data with a local {META_FILE})") from None
        repo, _, rev = spec[3:].partition("@")
        repo = repo or HUB_ID
        kwargs: dict[str, Any] = {"split": "train", "revision": rev or (HUB_REVISION if repo == HUB_ID else None)}
        if repo == HUB_ID:
            kwargs["data_files"] = META_FILE  # the repo also holds images; read the release file only
        try:
            rows = datasets.load_dataset(repo, **kwargs)
        except Exception as e:  # noqa: BLE001 — network, auth, unknown revision: one line
            raise DataError(f"hub dataset {repo}@{kwargs['revision'] or 'main'}: {type(e).__name__}: {e} — "
                            f"check the id and your connection, or pass --data with a local {META_FILE}") from None
        index = VideoIndex(Path(self.settings.get("video_dir") or "videos").expanduser())
        return self._map_all([(f"{repo} row {i}", dict(row)) for i, row in enumerate(rows)], index)

    def _map_all(self, records: list[tuple[str, Any]], index: VideoIndex) -> tuple[list[Sample], list[BadRecord]]:
        samples: list[Sample] = []
        bad: list[BadRecord] = []
        keys: Counter[str] = Counter()
        n_questions = 0
        for where, record in records:
            if isinstance(record, _Unparsed):
                bad.append(BadRecord(id=where, error=f"{where}: {record} — each line must be one video object"))
                continue
            got, failed = map_record(record, where, index)
            samples += got
            bad += failed
            if isinstance(record, dict) and isinstance(record.get("key"), str):
                keys[record["key"]] += "qa" in record  # lines per video; flat hub rows add 0
                n_questions += len(got) + len(failed)
        self._stats = {"videos": keys, "questions": n_questions}
        return samples, bad

    # ---- validation ---------------------------------------------------------------------------

    def check(self) -> list[str]:
        """Bad records, repeated uids, unknown capability names, missing videos (one line per
        video), and the counts against the paper's 103 videos / 1,549 questions."""
        samples, bad = self.load()
        problems = [b.error for b in bad]
        first: dict[str, str] = {}
        for s in samples:
            if s.id in first:
                problems.append(f"uid {s.id}: repeated (videos {first[s.id]} and {s.extra['key']}) — "
                                "the official scorer keys answers by uid, so uids must be unique")
            first.setdefault(s.id, s.extra["key"])
        unknown = Counter(t for s in samples for t in s.extra["question_type_raw"]
                          if t.strip().lower() not in CAPABILITIES)
        problems += [f"question_type {t!r} ({n} questions) is not one of LVBench's six capabilities "
                     f"({', '.join(CAPABILITIES)})" for t, n in sorted(unknown.items())]
        per_video: dict[str, list[Sample]] = defaultdict(list)
        for s in samples:
            per_video[s.video.path].append(s)
        for path, group in per_video.items():
            if not Path(path).exists():
                problems.append(f"video {group[0].extra['key']}: {path} not found ({len(group)} questions) — "
                                "pass --video-dir with the folder holding <key>.mp4")
        n_videos, n_questions = len(self._stats["videos"]), self._stats["questions"]
        if (n_videos, n_questions) != (EXPECTED_VIDEOS, EXPECTED_QUESTIONS):
            problems.append(f"lvbench: {n_questions:,} questions in {n_videos} videos; the paper has "
                            f"{EXPECTED_QUESTIONS:,} in {EXPECTED_VIDEOS} — is this the complete {META_FILE}?")
        return problems

    # ---- protocol -----------------------------------------------------------------------------

    def plan(self, sample: Sample, duration: float) -> InputPlan:
        n, rate = self.settings["frames"], self.settings["fps"]
        if n == 0:
            return InputPlan(timestamps=[], resize=self.settings["resize"])
        if rate is not None:
            plan: Fps | Lmms | Uniform = Fps(fps=rate, max_frames=n)
        elif not self.official:
            plan = Lmms(n=n)
        else:
            plan = Uniform(n=n)
        from lvu.media.video import probe_cached

        times = plan.timestamps(duration, probe_cached(sample.video.path).fps)
        return InputPlan(timestamps=times, subtitle_mode="none", resize=self.settings["resize"])

    def question_text(self, sample: Sample) -> str:
        """The released question string (stem + '(A) …' lines), rebuilt when it was not kept."""
        rebuilt = sample.question + "".join(f"\n({LETTERS[i]}) {o}" for i, o in enumerate(sample.options))
        return sample.extra.get("question_raw", rebuilt)

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        if self.official:
            text, max_tokens = self.question_text(sample) + "\n" + PROMPT_INSTRUCTION, 64
        else:
            text, max_tokens = self.question_text(sample) + LMMS_POST_PROMPT, 16
        return Prompt(parts=[*frames, Text(text=text)], choices=list(sample.options), question=sample.question,
                      max_tokens=max_tokens)

    def extract(self, sample: Sample, response: Response) -> Prediction:
        if not self.official:
            letter = lmms_extract_mcq(response.text, CHOICES[: len(sample.options)])
            return Prediction(value=CHOICES.index(letter) if letter else None, method="lmms-eval extract_mcq_answer")
        if sample.extra.get("verbatim"):  # an official answer file: the scorer compares it as written
            letter, method = response.text, "answer file"
        else:
            letter, method = polish_answer(response.text), "polish_answer"
        value: int | str | None = CHOICES.index(letter) if len(letter) == 1 and letter in CHOICES else letter or None
        return Prediction(value=value, method=method)

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        answer = sample.extra.get("answer_letter") or CHOICES[sample.answer]  # type: ignore[index]
        got = letter_of(prediction.value)
        ok = got == answer
        if ok:
            why = f"{got!r} = answer"
        elif got in CHOICES:
            why = f"{got!r}, answer {answer!r}"
        else:
            rule = "no option letter" if not self.official else "outside the options"
            why = f"{got!r} ({rule}: wrong, counted), answer {answer!r}"
        return Score(value=float(ok), correct=ok, explanation=why)

    # ---- aggregation and files ----------------------------------------------------------------

    def _scored(self, results: list[SampleResult]) -> tuple[list[SampleResult], list[SampleResult]]:
        """(counted, left out): officially a failed sample has no answer and is skipped."""
        kept = [r for r in results if r.counted and (r.error is None or not self.official)]
        ids = {id(r) for r in kept}
        return kept, [r for r in results if r.counted and id(r) not in ids]

    def _groups(self, kept: list[SampleResult]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        cap: dict[str, list[float]] = defaultdict(list)
        cat: dict[str, list[float]] = defaultdict(list)
        for r in kept:
            types = r.labels.get("question_type") or []
            for t in [types] if isinstance(types, str) else types:  # every type it carries, repeats too
                cap[t].append(r.score or 0.0)
            if (vt := r.labels.get("video_type")) is not None:
                cat[str(vt)].append(r.score or 0.0)
        return cap, cat

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        kept, left = self._scored(results)
        cap, cat = self._groups(kept)
        overall = ("Overall", len(kept), _pct([r.score or 0.0 for r in kept]))
        tables = [Breakdown(title="overall", rows=[("all", *overall[1:])]),
                  Breakdown(title="Table 2: core capabilities", rows=[*_ordered(cap, CAPABILITIES.values()), overall]),
                  Breakdown(title="Table 3: video categories", rows=[*_ordered(cat, CATEGORY_ORDER), overall])]
        if left:
            tables.append(Breakdown(title="left out (no answer: the official scorer skips missing uids)",
                                    rows=[("failed samples", len(left), float("nan"))]))
        return tables

    def write_submission(self, results: list[SampleResult], path: Path) -> Path:
        """`path`: the leaderboard's result.json ({"ER": 0.301, ..., "Overall": 0.322}: right / total
        as compute_accuracy divides, keys as test_acc.py names them); beside it
        `<stem>_answers.json`, the scorer's own input {uid: letter}. Failed samples are omitted."""
        path = Path(path)
        kept, _ = self._scored([r for r in results if r.error is None])
        cap, _ = self._groups(kept)
        names = [t for t in CAPABILITIES.values() if t in cap] + sorted(set(cap) - set(CAPABILITIES.values()))
        result: dict[str, float | None] = {t: sum(cap[t]) / len(cap[t]) for t in names}
        result["Overall"] = sum(r.score or 0.0 for r in kept) / len(kept) if kept else None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=4), encoding="utf-8")
        answers = {r.sample_id: letter_of(r.prediction) for r in kept}
        path.with_name(f"{path.stem}_answers.json").write_text(json.dumps(answers, ensure_ascii=False), "utf-8")
        return path

    def read_predictions(self, path: Path) -> list[tuple[Sample, str]]:
        """The official answer file {uid: letter} (compared verbatim), lvu's export JSONL
        ({sample_id, response}) or an lmms-eval sample log ({doc: {uid}, filtered_resps})."""
        samples = {s.id: s for s in self.load()[0]}
        text = Path(path).read_text(encoding="utf-8")
        if (whole := json_id_map(text)) is not None:
            pairs = [(samples[str(u)].model_copy(update={"extra": {**samples[str(u)].extra, "verbatim": True}}),
                      "" if a is None else str(a)) for u, a in whole.items() if str(u) in samples]
            if whole and not pairs:
                raise DataError(f"{path}: none of its {len(whole)} uids is an LVBench uid in this data — "
                                "is it an answer file for this release?")
            return pairs
        return read_prediction_lines(
            path, samples, text,
            key_of=lambda row: row["doc"]["uid"] if "doc" in row else row["sample_id"],
            response_of=lambda row: (((row.get("filtered_resps") or [None])[0] or (row.get("resps") or [[""]])[0][0])
                                     if "doc" in row else row.get("response")),
            what="uid", expected="use the {uid: letter} answer file, lvu's export or an lmms-eval log")


def letter_of(value: int | str | None) -> str:
    """A prediction as the answer file writes it: option index -> letter, text as is, None -> ''."""
    if isinstance(value, int):
        return LETTERS[value]
    return value or ""


def _ordered(groups: dict[str, list[float]], order) -> list[tuple[str, int, float]]:
    names = [g for g in order if g in groups] + sorted(g for g in groups if g not in set(order))
    return [(g, len(groups[g]), _pct(groups[g])) for g in names]
