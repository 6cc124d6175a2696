"""A scripted LLM/VLM for Neptune's construction prompts, for FakeOpenAIServer(answer=...).

    with FakeOpenAIServer(answer=scripted_reply) as server: ...
    replies = ScriptedReplies(malformed_first={"qa"}, frame_text="ocr")   # a callable too

It tells which prompt it got by the prompt's verbatim opening words (PROMPT_OPENINGS) and answers in
the paper's formats with content derived from the input only, so a build is deterministic: a frame
caption names the frame's dominant colour and the text read on it (`frame_text`); shot summaries
join their frame captions; topics split the transcript; clustering groups scenes by the text or
colour their captions name (so a topic can come back later: non-contiguous segments); QA makes
`target_number` questions about the sections of the dense captions (the on-screen text first);
decoys give `decoy_number` wrong answers per question from the other texts and sections.

`malformed_first` (prompt kinds): the first reply to each distinct prompt of those kinds is
malformed (retries, recognised by lvu.construct.neptune_parse.RETRY_MARKER, are answered properly);
`malformed_always`: every reply of those kinds is malformed. `short_decoys` ("first" or "always"):
the decoys reply is well formed but its last question has one wrong answer too few (5 of 6: the
near miss a model makes, which the paper's six do not allow).
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from lvu.construct.neptune_parse import PREVIOUS_REPLY_HEADER, RETRY_MARKER, parse_questions

PROMPT_OPENINGS = {
    "frame_caption": "Answer the following questions about the given image.",
    "shot_summary": "Summarize these sentences in dense short sentences:",
    "topics": "Take a deep breath and give me the structural topics",
    "clustering": "Take a deep breath and identify the sequential topic structure",
    "segment": "You are the expert in video description writing.",
    "visual_support": "I provide video scene information and your job is to summarize",
    "qa": "I want you to act as a rigorous teacher",
    "decoys": "Role: You are a rigorous teacher",
    "qad_filter": "Carefully analyze the following question and options.",
}
"""Kind -> words its prompt starts with (QAD filter: App. C.2.5, lvu.construct.blind)."""

MALFORMED = {
    "frame_caption": "I cannot describe this image.",
    "shot_summary": "```\n```",
    "topics": "The video covers several things.",
    "clustering": "Topic 1 covers scenes 1 to 3.",
    "segment": "Here is the improved description.",
    "visual_support": "```\n```",
    "qa": "Sure! Here are some challenging questions about the video.",
    "decoys": "QUESTION 1: I could not think of wrong answers.\nCORRECT ANSWER: unknown",
    "qad_filter": "I think it is B.",
}

COLOURS = {
    "black": (0, 0, 0), "white": (255, 255, 255), "grey": (128, 128, 128), "red": (200, 30, 30),
    "green": (30, 160, 60), "blue": (30, 60, 200), "yellow": (230, 210, 40), "cyan": (40, 200, 210),
    "magenta": (200, 40, 180), "orange": (240, 140, 30), "purple": (110, 40, 150), "brown": (120, 70, 30),
}


# ---- reading a request ----------------------------------------------------------------------------


def request_parts(body: dict[str, Any]) -> tuple[str, list[np.ndarray]]:
    """The user text (text parts joined by newlines) and the images (RGB arrays) of a chat request."""
    texts, images = [], []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            if part.get("type") == "text":
                texts.append(part["text"])
            elif part.get("type") == "image_url":
                images.append(_decode(part["image_url"]["url"]))
    return "\n".join(texts), images


def _decode(url: str) -> np.ndarray:
    from PIL import Image

    data = base64.b64decode(url.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def prompt_kind(text: str) -> str | None:
    """Which prompt this is: the kind whose opening words come first in the text."""
    found = [(text.find(opening), kind) for kind, opening in PROMPT_OPENINGS.items() if opening in text]
    return min(found)[1] if found else None


def _after(text: str, label: str, until: str | None = None) -> str:
    start = text.find(label)
    if start < 0:
        return ""
    rest = text[start + len(label):]
    if until and until in rest:
        rest = rest[:rest.index(until)]
    return rest.strip()


def _quoted(text: str) -> list[str]:
    return re.findall(r'"([^"]+)"', text)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s.strip()]


def _unique(items: Iterable[str]) -> list[str]:
    """Non-empty items in order, each once (case-insensitively)."""
    seen: set[str] = set()
    out = []
    for item in items:
        if item and item.lower() not in seen:
            seen.add(item.lower())
            out.append(item)
    return out


# ---- the replies ---------------------------------------------------------------------------------------


def colour_name(image: np.ndarray) -> str:
    mean = image.reshape(-1, 3).mean(axis=0)
    return min(COLOURS, key=lambda c: float(((mean - np.array(COLOURS[c])) ** 2).sum()))


def _frame_caption(images: list[np.ndarray], read_text: Callable[[np.ndarray], str]) -> str:
    if not images:
        return "Answer(General): No image was given.\n\nCaption: No image."
    image = images[0]
    colour, text = colour_name(image), " ".join(read_text(image).split())
    seen = f'The text "{text}" is shown in the image.' if text else "No text."
    caption = f'A {colour} frame showing the text "{text}".' if text else f"A {colour} frame with no text."
    return (f"Answer(Mood): A calm, plain scene.\nAnswer(Background): The background is plain {colour}.\n"
            f"Answer(Person): No person.\nAnswer(General): A {colour} frame.\nAnswer(Text): {seen}\n\n"
            f"Caption: {caption}")


def _shot_summary(text: str) -> str:
    captions = _after(text, "dense short sentences:").split("\n")
    return " ".join(_unique(c.strip() for c in captions)) or "An empty shot."


def _topics(text: str) -> str:
    sentences = _sentences(_after(text, "**Transcript:**"))
    if not sentences:
        return "Topic 1: The video\nDescription 1: The video has no speech."
    groups = min(3, len(sentences))
    size = -(-len(sentences) // groups)
    lines = []
    for i in range(0, len(sentences), size):
        chunk = sentences[i:i + size]
        title = " ".join(re.findall(r"[\w']+", chunk[0])[:3]).capitalize()
        n = i // size + 1
        lines.append(f"Topic {n}: {title}\nDescription {n}: {' '.join(chunk)}")
    return "\n".join(lines)


_SCENE = re.compile(r"Scene (\d+) \(([^)]*)\)\nVisual captions: (.*)\nTranscript sentences: (.*)")


def _clustering(text: str) -> str:
    limit = int(m.group(1)) if (m := re.search(r"less than (\d+) characters", text)) else 4000
    topics: dict[str, list[tuple[str, str, str]]] = {}
    for number, _, visual, said in _SCENE.findall(_after(text, "Video Script:")):
        quoted = _quoted(visual)
        key = f'"{quoted[0]}"' if quoted else " ".join(visual.split()[:2]) or "the video"
        topics.setdefault(key, []).append((number, visual, "" if said == "none" else said))
    blocks = []
    for key, scenes in topics.items():
        story = " ".join(_unique([v for _, v, _ in scenes] + [s for _, _, s in scenes]))
        story = story[:max(80, limit // max(1, len(topics)) - 200)]
        blocks.append(f"<topic> <description>The part showing {key}</description> "
                      f"<topic_scenes>{', '.join(n for n, _, _ in scenes)}<topic_scenes> "
                      f"<story>{story}</story> </topic>")
    return "```xml\n" + "\n".join(blocks) + "\n```"


def _segment(text: str) -> str:
    limit = int(m.group(1)) if (m := re.search(r"less than (\d+) characters", text)) else 1000
    initial = _after(text, "Initial Description:", "\n\nOutput Format:")
    said = [s for _, _, _, s in _SCENE.findall(_after(text, "Partial Script:")) if s != "none"]
    extra = next((s for s in _sentences(" ".join(said)) if s not in initial), "")
    return f"<updated_description>{(initial + ' ' + extra).strip()[:limit - 1]}</updated_description>"


def _visual_support(text: str) -> str:
    lines = _after(text, "Visual Captions:", "\n\n").split("\n")
    captions = _unique(re.sub(r"^\[[^\]]*\]\s*", "", ln).strip() for ln in lines)
    return "The shots show: " + " ".join(" ".join(captions).split()[:190])


_SECTION = re.compile(r"\[([\d:]+) - ([\d:]+)\] Section: (.*)\nCaption: (.*)")


def _qa(text: str) -> str:
    target = int(m.group(1)) if (m := re.search(r"Craft (\d+) Challenging", text)) else 3
    sections = _SECTION.findall(_after(text, "Dense Caption with Timestamps:"))
    if not sections:
        sections = [("00:00", "00:00", "the video", "The video.")]
    lines = []
    for i in range(target):
        j = i % len(sections)
        _, _, title, caption = sections[j]
        style = i % 3 if len(sections) > 1 else (0, 2)[i % 2]
        if style == 0:
            on_screen = _quoted(caption)
            question = f"What text is shown on screen in the part about {title}?"
            cap, answer = "visual-temporal", on_screen[0] if on_screen else _sentences(caption)[0]
        elif style == 1:  # this section and the next (the first, after the last): which comes first?
            other = sections[(j + 1) % len(sections)][2]
            named = (title, other) if i % 2 else (other, title)  # the order named does not give it away
            question = f"Which comes first in the video: {named[0]} or {named[1]}?"
            cap, answer = "timeline event", title if j + 1 < len(sections) else other
        else:
            question = f"What is shown in the part of the video about {title}?"
            cap, answer = "summarization", _sentences(caption)[0]
        lines.append(f"QUESTION {i + 1}: ({cap}) {question}\nCORRECT ANSWER: {answer}")
    return "\n\n".join(lines)


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def _decoys(text: str, short: bool = False) -> str:
    """`decoy_number` wrong answers for every question of the prompt, in one reply (`short`: one fewer
    for the last question)."""
    number = int(m.group(1)) if (m := re.search(r"generate (\d+) incorrect answers", text)) else 6
    dense = _after(text, "Dense Caption with Timestamps:", "\n\nQuestion and Correct Answer:")
    questions = parse_questions(_after(text, "Question and Correct Answer:"))
    pool = _unique(_quoted(dense) + [s[2] for s in _SECTION.findall(dense)] + [q.answer for q in questions])
    blocks = []
    for i, qa in enumerate(questions):
        rotated = pool[i % len(pool):] + pool[:i % len(pool)] if pool else []
        wrong: list[str] = []
        for w in rotated:  # different from the answer and from each other as the parser compares them
            if _words(w) != _words(qa.answer) and _words(w) not in map(_words, wrong):
                wrong.append(w)
        wrong = wrong[:number]
        wrong += [f"{qa.answer} (variant {k})" for k in range(1, number - len(wrong) + 1)]
        lines = [f"QUESTION {i + 1} ({qa.capability}): {qa.question}", f"CORRECT ANSWER: {qa.answer}"]
        if short and i == len(questions) - 1:
            wrong = wrong[:-1]
        lines += [f"WRONG ANSWER {k}: {w}" for k, w in enumerate(wrong, 1)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _qad_filter(text: str) -> str:
    options = _after(text, "Options:")
    letters = _unique(re.findall(r"(?m)(?:^|\s)\(?([A-J])[).:]\s", options)) or list("ABCDE")
    digest = hashlib.sha256(text.encode()).digest()
    ranked = sorted(letters, key=lambda c: digest[ord(c) % len(digest)])
    return f"ANSWER: {' > '.join(ranked)}\nEXPLANATION: A scripted ranking."


# ---- the callable ------------------------------------------------------------------------------------


class ScriptedReplies:
    """FakeOpenAIServer's `answer`: body -> reply text in the paper's formats (module docstring).

    `frame_text`: what a frame caption says is written on the frame — a function of the RGB image,
    "ocr" (lvu's RapidOCR reader, offline), "index" (the barcode frame number of
    lvu.media.testing.draw_frame) or None (no text; the caption names the colour only)."""

    def __init__(self, *, malformed_first: Iterable[str] = (), malformed_always: Iterable[str] = (),
                 frame_text: Callable[[np.ndarray], str] | str | None = None, short_decoys: str | None = None) -> None:
        unknown = (set(malformed_first) | set(malformed_always)) - set(PROMPT_OPENINGS)
        if unknown:
            raise ValueError(f"unknown prompt kinds {sorted(unknown)}; known: {sorted(PROMPT_OPENINGS)}")
        if short_decoys not in (None, "first", "always"):
            raise ValueError(f"short_decoys must be 'first', 'always' or None, not {short_decoys!r}")
        self.short_decoys = short_decoys
        self.malformed_first, self.malformed_always = set(malformed_first), set(malformed_always)
        self.read_text = _text_reader(frame_text)
        self.calls: Counter[str] = Counter()
        """Requests answered per prompt kind ("unknown" for the rest)."""
        self.malformed: Counter[str] = Counter()
        """Malformed replies given per prompt kind."""
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        text, images = request_parts(body)
        kind = prompt_kind(text)
        retry = RETRY_MARKER in text
        original = text.split(PREVIOUS_REPLY_HEADER)[0]
        with self._lock:
            self.calls[kind or "unknown"] += 1
            key = hashlib.sha256(original.encode() + b"".join(i.tobytes()[:4096] for i in images)).hexdigest()
            first = key not in self._seen
            self._seen.add(key)
            bad = kind in self.malformed_always or (kind in self.malformed_first and first and not retry)
            short = kind == "decoys" and (self.short_decoys == "always" or
                                          (self.short_decoys == "first" and first and not retry))
            if bad or short:
                self.malformed[kind] += 1
        if kind is None:
            return f"scripted_reply: unrecognised prompt {original[:60]!r}"
        if bad:
            return MALFORMED[kind]
        if kind == "frame_caption":
            return _frame_caption(images, self.read_text)
        if short:
            return _decoys(original, short=True)
        return _BY_KIND[kind](original)


_BY_KIND: dict[str, Callable[[str], str]] = {
    "shot_summary": _shot_summary, "topics": _topics, "clustering": _clustering, "segment": _segment,
    "visual_support": _visual_support, "qa": _qa, "decoys": _decoys, "qad_filter": _qad_filter,
}


def _text_reader(frame_text: Callable[[np.ndarray], str] | str | None) -> Callable[[np.ndarray], str]:
    if callable(frame_text):
        return frame_text
    if frame_text is None:
        return lambda image: ""
    if frame_text == "index":
        from lvu.media.testing import read_index

        return lambda image: f"frame {read_index(image)}"
    if frame_text == "ocr":
        from lvu.models.ocr_match import MIN_SCORE, OcrReader

        reader = OcrReader(None, threads=1)
        return lambda image: " ".join(ln.text for ln in reader.read(image) if ln.score >= MIN_SCORE)
    raise ValueError(f"frame_text must be a function, 'ocr', 'index' or None, not {frame_text!r}")


_DEFAULT = ScriptedReplies()


def scripted_reply(body: dict[str, Any]) -> str:
    """Well-formed replies to every Neptune prompt (ScriptedReplies() with no malformed kinds)."""
    return _DEFAULT(body)
