"""MLVU's Needle QA questions written by a model from each needle's caption (paper App. E.4, Figure 7):
`lvu build needle --task nqa --questions llm --llm MODEL` (docs/build.md, "Needles and the time ladder").

MLVU fed each WebVid needle clip's caption to GPT-4 with the prompt of its Figure 7 (1-3 questions per
needle, multiple choice with at least four choices, as many hints as possible to locate the needle).
`NQA_PROMPT` is that prompt: the figure's four printed paragraphs byte for byte (`FIGURE_7`), where
the figure elides ("as follows...", "questioned...") lvu's own JSON schema (`JSON_FORMAT`) and the
caption, each on the line after the paper's line. `parse_nqa` reads the reply (a malformed one is
asked once more with the reason: lvu.construct.neptune_parse.retry_prompt); `arrange` makes each
question's four options: the answer and the model's first three wrong choices, the answer at a
position drawn while planning (`answer_positions`), never by the model, case cues removed.

Captions (`given_caption`): a needle JSONL line's `caption`, else the text file `<stem>.caption`
beside the needle file (a `.txt` in a needles folder is a text needle, so captions take their own
suffix), else for a text needle the card's text; otherwise `--captioner ocr|vlm` makes one
(lvu.construct.needle_llm_stages) or the build stops before anything runs, in one line naming the
needle file and the fix. The stages are lvu.construct.needle_llm_stages.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lvu.benchmarks.haystack import AnswerBalancer
from lvu.construct import needle_questions
from lvu.construct.needle_questions import same_case
from lvu.construct.neptune_parse import ReplyParseError
from lvu.errors import DataError
from lvu.textlines import text_lines

FIGURE_7 = (
    "You are a question setter. Your task is to evaluate the participants' ability to capture detailed "
    "information from an extremely long video. The participants will receive a lengthy and content-rich video, "
    "and you are required to ask a question about a specific piece of information from the video.",
    "I will provide you with a description of the segment that needs to be questioned at the end. Your question "
    "must include as much contextual information as possible to help the participants locate the source of the "
    "information. The description I provide generally contains multiple clues, and you should ask questions "
    "targeting different clues. Your question should be in a multiple-choice format, necessitating the provision "
    "of at least four choices, including the correct answer. Depending on the depth of information in the segment "
    "description, you can craft between 1 to 3 distinct questions.",
    "Please provide the questions in the JSON format as follows...",
    "Here is the description of the segment that needs to be questioned...",
)
"""MLVU Figure 7 ("Prompt for Generating Needle Questions"), its four paragraphs as printed."""
JSON_FORMAT = ('[{"question": "...", "options": ["...", "...", "...", "..."], "answer": "..."}]\n'
               'One object per question. "answer" is the correct choice, copied exactly from "options". '
               "Reply with the JSON only.")
"""lvu's: the JSON schema the figure elides after "as follows..."."""
CAPTION = "{caption}"
NQA_PROMPT = f"{FIGURE_7[0]}\n\n{FIGURE_7[1]}\n\n{FIGURE_7[2]}\n{JSON_FORMAT}\n\n{FIGURE_7[3]}\n{CAPTION}"
"""What the question stage sends, CAPTION replaced by the needle's caption (hashed into its keys)."""
EXPECTED = ('a JSON list of 1 to 3 objects {"question": ..., "options": [at least 4 choices], "answer": the '
            "correct choice copied from options}")
MAX_QUESTIONS = 3
N_OPTIONS = needle_questions.N_OPTIONS
"""Options per question in the benchmark: the answer and the model's first three wrong choices."""
CAPTION_SUFFIX = ".caption"
_LETTERED = re.compile(r"^\(?([A-Za-z])[.):]\s+")


def format_nqa_prompt(caption: str) -> str:
    """NQA_PROMPT with the caption put in as is (braces in it are never read as placeholders)."""
    return NQA_PROMPT.replace(CAPTION, " ".join(caption.split()))


# ---- the reply ---------------------------------------------------------------------------------------


def parse_nqa(reply: str) -> list[dict[str, Any]]:
    """The reply's questions as [{question, answer, distractors}] (the first MAX_QUESTIONS; the first
    N_OPTIONS - 1 wrong choices, in the model's order), or ReplyParseError with a one-line reason.
    Tolerated: markdown fences, text around the JSON, {"questions": [...]}, a single object, the
    answer as a letter or index, options lettered "A. ...". Malformed: no JSON list of questions, a
    question with fewer than N_OPTIONS different choices, an answer that is not one of them."""
    found = _json_value(reply)
    if isinstance(found, dict):
        found = found.get("questions", [found]) if "question" not in found else [found]
    if not isinstance(found, list) or not found:
        raise ReplyParseError("no JSON list of questions in the reply", EXPECTED)
    out = []
    for n, item in enumerate(found[:MAX_QUESTIONS], start=1):
        if not isinstance(item, dict):
            raise ReplyParseError(f"question {n} is not a JSON object", EXPECTED)
        out.append(_question(item, n))
    return out


def _json_value(reply: str) -> Any:
    text = re.sub(r"^\s*```[\w+-]*\s*$", "", reply, flags=re.M)
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            return decoder.raw_decode(text, match.start())[0]
        except ValueError:
            continue
    raise ReplyParseError("the reply holds no JSON", EXPECTED)


def _clean(text: Any) -> str:
    return " ".join(str(text).split()) if isinstance(text, (str, int, float)) and not isinstance(text, bool) else ""


def _question(item: dict[str, Any], n: int) -> dict[str, Any]:
    question = _clean(item.get("question"))
    if not question:
        raise ReplyParseError(f"question {n} has no \"question\" text", EXPECTED)
    raw = item.get("options", item.get("choices", item.get("candidates")))
    if isinstance(raw, dict):  # {"A": "...", "B": "..."}
        raw = list(raw.values())
    options = [_clean(o) for o in raw] if isinstance(raw, list) else []
    if options and all(_LETTERED.match(o) for o in options):
        options = [_LETTERED.sub("", o, count=1) for o in options]
    distinct: list[str] = []
    for o in options:
        if o and o.casefold() not in {d.casefold() for d in distinct}:
            distinct.append(o)
    if len(distinct) < N_OPTIONS:
        raise ReplyParseError(f"question {n} has {len(distinct)} different choices; at least {N_OPTIONS} are needed",
                              EXPECTED)
    answer = _answer(item.get("answer"), distinct)
    if answer is None:
        raise ReplyParseError(f"question {n}'s answer {item.get('answer')!r} is not one of its choices", EXPECTED)
    wrong = [o for o in distinct if o != answer]
    return {"question": question, "answer": answer, "distractors": wrong[:N_OPTIONS - 1]}


def _answer(value: Any, options: list[str]) -> str | None:
    text = _clean(value)
    folded = {o.casefold().rstrip("."): o for o in options}
    if text.casefold().rstrip(".") in folded:
        return folded[text.casefold().rstrip(".")]
    lettered = _LETTERED.match(text + " ")
    if lettered and _LETTERED.sub("", text + " ", count=1).strip().casefold().rstrip(".") in folded:
        return folded[_LETTERED.sub("", text + " ", count=1).strip().casefold().rstrip(".")]
    letter = text.strip("().: ").upper()
    if len(letter) == 1 and "A" <= letter <= "Z" and ord(letter) - 65 < len(options):
        return options[ord(letter) - 65]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(options):
        return options[value]
    return None


# ---- the benchmark's options -------------------------------------------------------------------------


def arrange(q: dict[str, Any], position: int) -> tuple[list[str], int]:
    """A parsed question's N_OPTIONS options, the answer at `position` (a planned one), and its index."""
    wrong = list(q["distractors"][:N_OPTIONS - 1])
    position = min(position, len(wrong))
    options = wrong[:position] + [q["answer"]] + wrong[position:]
    return list(same_case(options)), position


def answer_positions(needles: Sequence[str], seed: int) -> dict[str, list[int]]:
    """Each needle's answer position for its 1st, 2nd and 3rd question, drawn while planning (from
    the seed, needles in plan order): one AnswerBalancer per question slot, so every slot cycles
    through shuffled rounds of the N_OPTIONS positions whatever number of questions the model writes."""
    rng = random.Random(f"lvu-needle-nqa-llm-{seed}")
    slots = [AnswerBalancer(rng) for _ in range(MAX_QUESTIONS)]
    out: dict[str, list[int]] = {}
    for key in needles:
        if key not in out:
            out[key] = [slot.take(N_OPTIONS) for slot in slots]
    return out


# ---- captions ----------------------------------------------------------------------------------------


def jsonl_captions(source: str | Path) -> dict[str, str]:
    """`file:line` (a needle's `where`, as lvu.construct.needle_media.load_needles writes it) -> the
    line's `caption`, for a needle JSONL file; {} for a folder or another file."""
    path = Path(source)
    if not path.is_file() or path.suffix.lower() not in (".jsonl", ".json", ".ndjson"):
        return {}
    out = {}
    for n, line in enumerate(text_lines(path.read_text(encoding="utf-8")), start=1):
        try:
            rec = json.loads(line) if line.strip() else None
        except ValueError:
            continue  # load_needles reports it
        if isinstance(rec, dict) and rec.get("caption") is not None:
            caption = rec["caption"]
            if not isinstance(caption, str) or not caption.strip():
                raise DataError(f"{path}:{n}: caption {caption!r} is not a text — write the needle's description")
            out[f"{path}:{n}"] = " ".join(caption.split())
    return out


def caption_file(needle: Any) -> Path | None:
    """Where a needle's caption file would be: `<stem>.caption` beside its file (None: not from a file)."""
    where = Path(needle.source if needle.kind != "text" else needle.where)
    return where.with_suffix(CAPTION_SUFFIX) if needle.kind != "text" or where.is_file() else None


def given_caption(needle: Any, from_jsonl: dict[str, str]) -> tuple[str | None, str]:
    """(caption, where it came from), or (None, the caption file to write)."""
    if needle.where in from_jsonl:
        return from_jsonl[needle.where], f"{needle.where} caption"
    side = caption_file(needle)
    if side is not None and side.is_file():
        text = " ".join(side.read_text(encoding="utf-8").split())
        if text:
            return text, str(side)
    if needle.kind == "text":
        return f'A title card showing the text "{needle.source}".', "the text needle itself"
    return None, str(side)


def needle_digest(needle: Any) -> str:
    """A needle's content identity (its pixels' source and cut), for grouping its questions."""
    what = json.dumps(needle.identity(), sort_keys=True, default=str)
    return hashlib.blake2b(what.encode(), digest_size=8).hexdigest()


def plan_questions(items: Sequence[Any], needles: Sequence[Any], *, source: str | Path, seed: int,
                   captioner: str) -> None:
    """Mark each planned NQA video (items, with the needle each shows: `needles`) for model-written
    questions: item.data["nqa"] = {needle, name, file, caption, caption_from, owner, positions}. The
    first video showing a needle owns its caption and question units (a needle in several videos is
    asked once); needles with their own JSONL question keep it. A needle with no caption and no
    captioner stops the build here, in one line (nothing has run yet)."""
    from_jsonl = jsonl_captions(source)
    missing: list[tuple[Any, str]] = []
    marks: list[tuple[Any, dict[str, Any]]] = []
    for item, needle in zip(items, needles):
        if needle.question:
            continue
        caption, origin = given_caption(needle, from_jsonl)
        if caption is None and captioner == "none":
            missing.append((needle, origin))
        marks.append((item, {"needle": needle_digest(needle), "name": needle.name, "file": needle.where,
                             "kind": needle.kind, "caption": caption, "caption_from": origin}))
    if missing:
        raise DataError(_missing_line(missing))
    positions = answer_positions([m["needle"] for _, m in marks], seed)
    owned: set[str] = set()
    for item, mark in marks:
        mark["owner"] = mark["needle"] not in owned
        owned.add(mark["needle"])
        mark["positions"] = positions[mark["needle"]]
        item.data["nqa"] = mark


def _missing_line(missing: list[tuple[Any, str]]) -> str:
    seen: dict[str, tuple[Any, str]] = {}
    for needle, origin in missing:
        seen.setdefault(needle.where, (needle, origin))
    (needle, origin), more = next(iter(seen.values())), list(seen)[1:]
    txt = Path(needle.source).with_suffix(".txt") if needle.kind != "text" else None
    clash = f" ({txt.name} beside it is a text needle, not its caption)" if txt is not None and txt.is_file() else ""
    others = f" (and {len(more)} more without one: {', '.join(more[:3])}{' ...' if len(more) > 3 else ''})" \
        if more else ""
    where = f"its description to {origin}" + (" or a \"caption\" on its JSONL line" if needle.where != needle.source
                                              else "")
    return (f"needle {needle.where} has no caption for --questions llm{clash} — write {where}, or pass "
            f"--captioner ocr or --vlm MODEL to caption it{others}")
