"""Each paper's video-selection rules as data (`SelectionRules`), and the one function that judges a
video against them (`evaluate`).

    rules = builtin_rules("longvideobench")          # or load_rules("my_rules.yaml")
    record = evaluate(rules, facts, as_of=date(2025, 1, 31))
    record["keep"], record["group"], record["checks"]  # the decision, its duration group, every rule's line

`facts` are what the `lvu build select` stages measured of one video (lvu.construct.select_pipeline):
its probe (duration, size, subtitle tracks), the files beside it (subtitles, `<stem>.info.json`),
optionally a spoken-language id and a quality score. Every rule gives one check line: `ok` True
(passed), False (dropped the video) or None (not checked: the reason says why). A video is kept
when no check is False. Sampling to each group's target and the val/test split are
lvu.construct.select_sampling. Neptune's build (lvu.construct.neptune_signal_stages) judges the
metadata rules with `metadata_checks`, the same code. Sources of every built-in value: the comments
below and docs/build.md ("Selecting videos").
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from lvu.errors import LvuError


def _as_of_date(value: Any) -> str:
    if value is None:
        return date.today().isoformat()
    try:
        return date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise ValueError(f"{value!r} is not a date — use YYYY-MM-DD") from None


AsOfDate = Annotated[Optional[str], AfterValidator(_as_of_date)]
"""An option's date upload ages count to: YYYY-MM-DD, None = today. Declare it with
`Field(None, validate_default=True, json_schema_extra={"recorded": True})`, so that a resumed build
takes the date OUT/build.json records (lvu.construct.store.recorded_options), not the new day's."""

OPS = (">=", ">", "<=", "<", "==", "!=", "in", "not_in", "none_of")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DurationGroup(_Strict):
    """Videos with min_s < duration <= max_s (the papers' "(8s, 15s]" notation; None: unbounded)."""

    name: str
    min_s: Optional[float] = Field(default=None, ge=0)
    max_s: Optional[float] = Field(default=None, gt=0)
    target: Optional[int] = Field(default=None, ge=0, description="videos to sample from this group (None: all kept)")

    def holds(self, duration: float) -> bool:
        return (self.min_s is None or duration > self.min_s) and (self.max_s is None or duration <= self.max_s)

    def span(self) -> str:
        return f"({self.min_s or 0:g}, {'inf' if self.max_s is None else f'{self.max_s:g}'}] s"


class SubtitleRule(_Strict):
    required: bool = Field(default=False, description="drop videos without subtitles (False: they need ASR, noted)")
    languages: Optional[list[str]] = Field(default=None, description="allowed languages (ISO 639-1, e.g. en); None: any")
    unknown_language: Literal["keep", "drop"] = Field(default="keep", description="what to do when no language is known")


class MetadataRule(_Strict):
    """`field op value` over `<stem>.info.json` (yt-dlp's). Derived field: `upload_age_days` (days
    from `upload_date` to the build's as-of date)."""

    field: str
    op: Literal[">=", ">", "<=", "<", "==", "!=", "in", "not_in", "none_of"]
    value: Any
    if_missing: Literal["keep", "drop"] = Field(default="keep", description="the field is absent from info.json")
    why: str = Field(default="", description="the paper's words, shown in the evidence")


class QualityRule(_Strict):
    min_score: float = Field(default=0.25, ge=0, le=1, description="keep videos scoring above this (0..1)")
    frames: int = Field(default=8, ge=1, description="frames the quality model scores, spread over the video")


class SplitRule(_Strict):
    val: float = Field(gt=0, lt=1, description="fraction of the selected videos in the validation split")


class SelectionRules(_Strict):
    name: str = "custom"
    source: str = Field(default="", description="where the rules come from (paper and section)")
    groups: list[DurationGroup] = Field(default_factory=list, description="duration groups; none: one group, all")
    min_seconds: Optional[float] = Field(default=None, ge=0)
    max_seconds: Optional[float] = Field(default=None, gt=0)
    truncate_seconds: Optional[float] = Field(default=None, gt=0, description="longer videos are kept and only their "
                                              "first truncate_seconds are used (Neptune: 900)")
    min_short_side: Optional[int] = Field(default=None, ge=1, description="pixels of the shorter side (720: 720p)")
    subtitles: Optional[SubtitleRule] = None
    metadata: list[MetadataRule] = Field(default_factory=list)
    category: list[str] = Field(default_factory=lambda: ["info:categories", "folder"], description="where a "
                                "video's category comes from, first found wins: info:<field> of info.json "
                                "(a list: its first item) or folder (the sub-folder of VIDEOS)")
    quality: Optional[QualityRule] = None
    split: Optional[SplitRule] = None
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> SelectionRules:
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"group names repeat: {names}")
        for g in self.groups:
            if g.min_s is not None and g.max_s is not None and g.min_s >= g.max_s:
                raise ValueError(f"group {g.name}: min_s {g.min_s:g} is not below max_s {g.max_s:g}")
        if self.min_seconds is not None and self.max_seconds is not None and self.min_seconds > self.max_seconds:
            raise ValueError(f"min_seconds {self.min_seconds:g} is above max_seconds {self.max_seconds:g}")
        for source in self.category:
            if source != "folder" and not source.startswith("info:"):
                raise ValueError(f"category source {source!r}: use info:<field> or folder")
        return self

    def fields(self) -> list[str]:
        """The info.json fields these rules read."""
        wanted = {"upload_date", "timestamp", "language"} if any(
            r.field == "upload_age_days" for r in self.metadata) else {"language"}
        wanted |= {r.field for r in self.metadata if r.field != "upload_age_days"}
        wanted |= {c.split(":", 1)[1] for c in self.category if c.startswith("info:")}
        return sorted(wanted)


# ---- the papers' rules -----------------------------------------------------------------------------

NEPTUNE_METADATA = [
    # Neptune App. C.1: "We filter out videos with less than 100 views, that are uploaded within 90 days,
    # and those tagged by YouTube content filters to contain racy, mature or locally controversial content."
    MetadataRule(field="view_count", op=">=", value=100, why="App. C.1: fewer than 100 views are filtered out"),
    MetadataRule(field="upload_age_days", op=">=", value=90, why="App. C.1: uploaded within 90 days are filtered out"),
    # yt-dlp's age_limit is 18 for YouTube's age-restricted (mature) videos; YouTube's racy / locally
    # controversial labels are not in info.json: a `safety_labels` list added by the user is read.
    MetadataRule(field="age_limit", op="<", value=18, why="App. C.1: mature content (yt-dlp age_limit 18)"),
    MetadataRule(field="safety_labels", op="none_of", value=["racy", "mature", "locally_controversial"],
                 why="App. C.1: racy, mature or locally controversial content"),
]

BUILTIN: dict[str, SelectionRules] = {
    "longvideobench": SelectionRules(
        name="longvideobench",
        source="LongVideoBench (Wu et al. 2024) §3.1-3.2, Table 3, datasheet",
        groups=[  # Table 3: (8,15], (15,60], (180,600], (900,3600] s; targets = its videos per group
            DurationGroup(name="8-15s", min_s=8, max_s=15, target=884),
            DurationGroup(name="15-60s", min_s=15, max_s=60, target=925),
            DurationGroup(name="180-600s", min_s=180, max_s=600, target=986),
            DurationGroup(name="900-3600s", min_s=900, max_s=3600, target=966),
        ],
        min_short_side=720,  # §3.2: "all videos with at least 720P resolution ... are downloaded"
        # §3.2: videos with non-English transcribed subtitles are removed; without subtitles, Whisper-V3-Large
        subtitles=SubtitleRule(required=False, languages=["en"], unknown_language="keep"),
        quality=QualityRule(min_score=0.25),  # §3.2: Q-Align scores > 0.25 (in range [0, 1])
        split=SplitRule(val=0.2),  # datasheet: validation 20 % of all data, test the rest 80 %
        notes=["datasheet: a uniform random sample over the 10 content categories (category round-robin)",
               "the quality rule applies only with --quality MODEL (Q-Align in the paper)"],
    ),
    "videomme": SelectionRules(
        name="videomme",
        source="Video-MME (Fu et al. 2024) §2.1-2.2, Table 3",
        groups=[  # §2.2: short < 2 min, medium 4-15 min, long 30-60 min; 300 videos each (Table 3)
            DurationGroup(name="short", min_s=0, max_s=120, target=300),
            DurationGroup(name="medium", min_s=240, max_s=900, target=300),
            DurationGroup(name="long", min_s=1800, max_s=3600, target=300),
        ],
        notes=["subtitles are gathered 'if provided' (§2.2): recorded, not required",
               "6 domains x 30 sub-fields (§2.1): category round-robin within each group"],
    ),
    "lvbench": SelectionRules(
        name="lvbench",
        source="LVBench (Wang et al. 2024) §3.1, datasheet",
        groups=[DurationGroup(name="over-30min", min_s=1800, max_s=None, target=103)],  # > 30 min; 103 videos
        notes=["the five manual screening criteria of §3.1 are a person's work: not automated",
               "six categories (Sports, Documentary, Event Record, Lifestyle, TV Show, Cartoon): round-robin"],
    ),
    "neptune": SelectionRules(
        name="neptune",
        source="Neptune (Nagrani et al. 2024) §3, §4.1, App. C.1",
        truncate_seconds=900,  # §3: "We truncate videos longer than 15 minutes" (kept, first 15 min used)
        metadata=NEPTUNE_METADATA,
        notes=["the static and talking-head filters run as the first stage of `lvu build neptune`",
               "diversity sampling (semantic clusters x perceived demographics, App. C.1) is approximated by "
               "category round-robin",
               "no minimum length: the paper's 16 s is its shortest video, not a rule"],
    ),
}


def builtin_rules(name: str) -> SelectionRules:
    if name not in BUILTIN:
        raise LvuError(f"unknown selection rules {name!r} — use one of {', '.join(BUILTIN)} or a YAML/JSON file")
    return BUILTIN[name]


def load_rules(spec: str | Path | dict[str, Any] | SelectionRules) -> SelectionRules:
    """A built-in's name, a YAML/JSON file of the same schema, or its dict; one-line LvuError when bad."""
    if isinstance(spec, SelectionRules):
        return spec
    where = "rules"
    if isinstance(spec, dict):
        data: Any = spec
    elif str(spec) in BUILTIN:
        return BUILTIN[str(spec)]
    else:
        path = Path(spec).expanduser()
        where = str(path)
        if not path.is_file():
            raise LvuError(f"--rules {spec}: neither a built-in ({', '.join(BUILTIN)}) nor a file — pass one; "
                           "`lvu build select --rules longvideobench --print-rules` prints a file to start from")
        import yaml

        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            line = getattr(getattr(e, "problem_mark", None), "line", None)
            raise LvuError(f"{path}: not valid YAML/JSON{f' (line {line + 1})' if line is not None else ''} — "
                           "fix it (`--print-rules` shows the format)") from None
        if not isinstance(data, dict):
            raise LvuError(f"{path}: expected a mapping of rule fields (name, groups, ...) — `--print-rules` "
                           "shows the format")
    try:
        return SelectionRules.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "rules"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise LvuError(f"{where}: {loc}: {msg} — `lvu build select --rules longvideobench --print-rules` "
                       "shows the format") from None


def rules_text(rules: SelectionRules) -> str:
    """The rules as YAML, to copy and edit."""
    import yaml

    return yaml.safe_dump(rules.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


# ---- judging one video -----------------------------------------------------------------------------

_ISO3 = {"eng": "en", "fre": "fr", "fra": "fr", "ger": "de", "deu": "de", "spa": "es", "ita": "it", "por": "pt",
         "rus": "ru", "jpn": "ja", "kor": "ko", "chi": "zh", "zho": "zh", "ara": "ar", "hin": "hi", "nld": "nl",
         "dut": "nl", "pol": "pl", "tur": "tr", "swe": "sv", "vie": "vi", "ind": "id", "tha": "th", "ukr": "uk"}


def language_code(tag: Any) -> str | None:
    """'en', 'en-US', 'eng', 'English'? -> 'en'; 'und', '' or None -> None (unknown)."""
    if not isinstance(tag, str) or not tag.strip():
        return None
    base = re.split(r"[-_.]", tag.strip().lower())[0]
    if base in ("und", "unknown", "mul", "zxx", "none"):
        return None
    return _ISO3.get(base, base if len(base) in (2, 3) else {"english": "en"}.get(base, base))


def upload_age_days(info: dict[str, Any], as_of: date) -> int | None:
    """Days from the upload (yt-dlp `upload_date` YYYYMMDD, else `timestamp`) to `as_of`."""
    raw = info.get("upload_date")
    uploaded: date | None = None
    if isinstance(raw, (str, int)) and re.fullmatch(r"\d{8}", str(raw)):
        uploaded = datetime.strptime(str(raw), "%Y%m%d").date()
    elif isinstance(raw, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
        uploaded = date.fromisoformat(raw)
    elif isinstance(info.get("timestamp"), (int, float)):
        uploaded = datetime.fromtimestamp(info["timestamp"], tz=timezone.utc).date()
    return None if uploaded is None else (as_of - uploaded).days


def _compare(value: Any, op: str, target: Any) -> bool:
    if op == "none_of":
        have = value if isinstance(value, list) else [value]
        return not {str(v).lower() for v in have} & {str(t).lower() for t in target}
    if op in ("in", "not_in"):
        return (value in target) == (op == "in")
    return {">=": value >= target, ">": value > target, "<=": value <= target, "<": value < target,
            "==": value == target, "!=": value != target}[op]


def check(rule: str, ok: bool | None, reason: str, **numbers: Any) -> dict[str, Any]:
    return {"rule": rule, "ok": ok, "reason": reason, **numbers}


def metadata_checks(rules: list[MetadataRule], info: dict[str, Any] | None, as_of: date,
                    info_note: str | None = None) -> list[dict[str, Any]]:
    """One check per metadata rule; without info.json (None) one not-checked line for all of them."""
    if not rules:
        return []
    if info is None:
        return [check("metadata", None, info_note or "no <stem>.info.json beside the video: metadata rules "
                      f"({', '.join(r.field for r in rules)}) not checked")]
    out = []
    for r in rules:
        value = upload_age_days(info, as_of) if r.field == "upload_age_days" else info.get(r.field)
        shown = f"{r.field} {r.op} {json.dumps(r.value)}"
        if value is None:
            ok = None if r.if_missing == "keep" else False
            out.append(check(f"metadata:{r.field}", ok, f"{r.field} is not in info.json: "
                             + ("not checked" if ok is None else f"dropped (if_missing: drop; rule {shown})")))
            continue
        try:
            ok = _compare(value, r.op, r.value)
        except TypeError:
            out.append(check(f"metadata:{r.field}", False, f"{r.field}={json.dumps(value)} cannot be compared "
                             f"with {shown} — fix info.json or the rule", value=value))
            continue
        why = f" ({r.why})" if r.why and not ok else ""
        out.append(check(f"metadata:{r.field}", ok, f"{r.field}={json.dumps(value)} {'meets' if ok else 'fails'} "
                         f"{shown}{why}", value=value, **({"as_of": as_of.isoformat()} if r.field ==
                                                          "upload_age_days" else {})))
    return out


def _duration_checks(rules: SelectionRules, d: float) -> tuple[list[dict[str, Any]], str | None]:
    out = []
    if rules.min_seconds is not None or rules.max_seconds is not None:
        ok = (rules.min_seconds is None or d >= rules.min_seconds) and (rules.max_seconds is None or d <= rules.max_seconds)
        out.append(check("duration", ok, f"duration {d:g} s is {'within' if ok else 'outside'} "
                         f"[{rules.min_seconds or 0:g}, {rules.max_seconds or 'inf'}] s", duration_s=d))
    if not rules.groups:
        return out, "all"
    group = next((g for g in rules.groups if g.holds(d)), None)
    if group is not None:
        out.append(check("group", True, f"duration {d:g} s is in group {group.name} {group.span()}", duration_s=d))
        return out, group.name
    spans = ", ".join(f"{g.name} {g.span()}" for g in rules.groups)
    lowest = min((g.min_s or 0) for g in rules.groups)
    where = "shorter than every group" if d <= lowest else "in no duration group"
    out.append(check("group", False, f"duration {d:g} s is {where} ({spans})", duration_s=d))
    return out, None


def _subtitle_checks(rule: SubtitleRule | None, facts: dict[str, Any]) -> list[dict[str, Any]]:
    tracks = [*(facts.get("probe", {}).get("subtitle_tracks") or []), *(facts.get("sidecars", {}).get("subtitles") or [])]
    tags = sorted({c for t in tracks if (c := language_code(t.get("language")))})
    info = facts.get("sidecars", {}).get("info") or {}
    spoken = language_code(info.get("language"))
    lid = facts.get("language") or {}
    found = ", ".join(f"{t.get('file') or 'track ' + str(t.get('index'))} ({t.get('language') or 'no language tag'})"
                      for t in tracks)
    if rule is None:
        return [check("subtitles", None, f"subtitles: {found}" if tracks else "no subtitles (not required)",
                      languages=tags)]
    if not tracks and rule.required:
        return [check("subtitles", False, "no subtitles (a track or <stem>.srt/.vtt beside the video) and these "
                      "rules require them")]
    if tracks and tags:
        language, source = tags, "subtitle language"
    elif spoken:
        language, source = [spoken], "info.json language"
    elif lid.get("language"):
        language, source = [lid["language"]], f"spoken language by {lid.get('model', 'ASR language id')}"
    else:
        language, source = [], ""
    head = f"subtitles: {found}" if tracks else "no subtitles: needs ASR (LongVideoBench: Whisper-V3-Large)"
    if rule.languages is None:
        return [check("subtitles", True, head, languages=language)]
    if not language:
        why = lid.get("reason") or "no language tag, no info.json language and no language-id model (--language-model)"
        ok = None if rule.unknown_language == "keep" else False
        return [check("subtitles", True if tracks else None, head),
                check("language", ok, f"language unknown ({why}); unknown_language: {rule.unknown_language}")]
    allowed = [language_code(x) for x in rule.languages]
    ok = any(code in allowed for code in language)
    return [check("subtitles", True if tracks else None, head),
            check("language", ok, f"{source} {', '.join(language)} {'is' if ok else 'is not'} one of "
                  f"{', '.join(rule.languages)}", languages=language)]


def video_category(rules: SelectionRules, facts: dict[str, Any]) -> str:
    info = facts.get("sidecars", {}).get("info") or {}
    for source in rules.category:
        if source == "folder":
            value: Any = facts.get("folder")
        else:
            value = info.get(source.split(":", 1)[1])
            value = value[0] if isinstance(value, list) and value else value
        if isinstance(value, (str, int, float)) and str(value).strip():
            return str(value).strip()
    return "uncategorised"


def evaluate(rules: SelectionRules, facts: dict[str, Any], as_of: date) -> dict[str, Any]:
    """One video's evidence record: `keep`, `group`, `category`, `analysed_s` and `checks` (every
    rule's line with its numbers). `facts`: probe, sidecars, folder, and optionally language, quality."""
    probe = facts.get("probe") or {}
    if probe.get("error"):
        return {"keep": False, "group": None, "category": None, "analysed_s": None,
                "checks": [check("readable", False, probe["error"])]}
    d = round(float(probe["duration"]), 3)
    checks, group = _duration_checks(rules, d)
    analysed = d
    if rules.truncate_seconds is not None and d > rules.truncate_seconds:
        analysed = rules.truncate_seconds
        checks.append(check("truncate", True, f"longer than {rules.truncate_seconds:g} s: only the first "
                            f"{rules.truncate_seconds:g} s are used", duration_s=d, analysed_s=analysed))
    if rules.min_short_side is not None:
        short = min(int(probe["width"]), int(probe["height"]))
        ok = short >= rules.min_short_side
        checks.append(check("resolution", ok, f"{probe['width']}x{probe['height']}: shorter side {short} px "
                            f"{'>=' if ok else '<'} {rules.min_short_side} px", short_side=short))
    checks += _subtitle_checks(rules.subtitles, facts)
    sidecars = facts.get("sidecars") or {}
    checks += metadata_checks(rules.metadata, sidecars.get("info"), as_of, sidecars.get("info_error"))
    if rules.quality is not None:
        q = facts.get("quality")
        if q is None:
            checks.append(check("quality", None, "quality: not scored (no --quality model)"))
        else:
            ok = q["score"] > rules.quality.min_score
            checks.append(check("quality", ok, f"quality {q['score']:.3f} by {q['model']} "
                                f"{'>' if ok else '<='} {rules.quality.min_score:g}", score=q["score"]))
    return {"keep": all(c["ok"] is not False for c in checks), "group": group,
            "category": video_category(rules, facts), "duration_s": d, "analysed_s": analysed, "checks": checks}
